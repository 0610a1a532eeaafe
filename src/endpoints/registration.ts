/**
 * @module endpoints/registration
 * Dynamic client registration (RFC 7591) at POST /connect/register, and its management (RFC 7592)
 * at /connect/register/{client_id} (see endpoints/registration_management.ts).
 * Checks, in order:
 * - the initial access token, when configured (401 when missing or wrong; wrong ones are counted
 *   against the source address like failed client authentications)
 * - the caps: `maxPerAddressPerHour` per source address (when the host passes one) and `maxPerHour`
 *   over all registrations; every attempt the caps let through counts, each taken atomically in the
 *   store (429 beyond; a refused attempt does not count)
 * - the body is a JSON object (else invalid_client_metadata)
 * - redirect URIs: https, http only on a loopback host, or a private-use scheme; never a fragment
 *   (else invalid_redirect_uri)
 * - the other metadata (else invalid_client_metadata); `grant_types` and `scope` are cut to what
 *   the option allows, unknown members are ignored (RFC 7591 §2); a private_key_jwt client
 *   registers `jwks` or `jwks_uri` (never both) and gets no secret
 * Error descriptions name the field, never its value (src/clients/metadata.ts checks the metadata).
 */
import {
  clientFields,
  generateSecret,
  type RegisteredClientMetadata,
  type RegistrationPolicy,
} from '../clients/index.ts'
import { OPTION_DEFAULTS } from '../defaults.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import type { RequestMeta } from '../events/index.ts'
import { noStoreJson } from '../http.ts'
import { addressBucket, hashSecret, metaOf, takeAttempt, throttledAfter } from '../security/index.ts'
import { randomToken, signingAlgorithms } from '../crypto/index.ts'
import type { AttemptCounter, AttemptTaken, ClientRecord } from '../storage/index.ts'
import { type ManagementSettings, handleManagement } from './registration_management.ts'
import { checkRegistrationToken, clientInformation, parseMetadata, readMetadata } from './registration_requests.ts'

/** Creates the handlers of the registration endpoint and of the RFC 7592 management URIs. */
export function createRegistration(ctx: Context): {
  register(request: Request): Promise<Response>
  manage(request: Request): Promise<Response>
  /** The path prefix (below the host) of the management URIs: `{issuer path}/connect/register/`. */
  managementPrefix: string
} {
  const settings = ctx.config.dynamicClientRegistration
  if (!settings) throw new TypeError('dynamic client registration is not configured')
  for (const scope of settings.scopes) {
    if (!ctx.scopes.get(scope)) {
      throw new TypeError(`invalid token service options\ndynamicClientRegistration.scopes: unknown scope ${scope}`)
    }
  }
  const policy: RegistrationPolicy = {
    scopes: settings.scopes,
    grantTypes: settings.grantTypes,
    idTokenAlgorithms: signingAlgorithms(ctx.config),
    redirectSchemes: new Set(settings.redirectSchemes ?? []),
    ...(ctx.config.authorizationDetailsTypes
      ? { authorizationDetailsTypes: ctx.config.authorizationDetailsTypes }
      : {}),
  }
  const caps: RegistrationCaps = {
    perAddress: settings.maxPerAddressPerHour ?? OPTION_DEFAULTS.dynamicClientRegistration.maxPerAddressPerHour,
    overall: settings.maxPerHour ?? OPTION_DEFAULTS.dynamicClientRegistration.maxPerHour,
  }
  const management: ManagementSettings = { policy, managementPrefix: `${new URL(ctx.urls.registration).pathname}/` }
  const initialTokenHash =
    settings.initialAccessToken === undefined ? undefined : ctx.sha256(settings.initialAccessToken)
  let lastPrune = Number.NEGATIVE_INFINITY

  /** Prunes unused dynamic clients in the background, at most once an hour per instance. */
  function maybePrune(): void {
    if (settings?.pruneUnusedAfter === false) return
    const at = ctx.now()
    if (at - lastPrune < 3600) return
    lastPrune = at
    ctx.clients.pruneDynamic().catch((err: unknown) =>
      ctx.logger.warn('pruning unused dynamic clients failed', {
        error: err instanceof Error ? err.name : typeof err,
      }),
    )
  }

  async function register(request: Request): Promise<Response> {
    const meta = metaOf(request)
    if (initialTokenHash !== undefined)
      await checkRegistrationToken(ctx, request, meta, initialTokenHash, 'invalid_initial_access_token')
    await countRegistration(ctx, caps, meta)
    const metadata = parseMetadata(ctx, policy, await readMetadata(ctx, request, meta), meta)
    const response = await registerClient(ctx, metadata, meta)
    maybePrune()
    return response
  }

  return {
    register,
    manage: (request) => handleManagement(ctx, management, request),
    managementPrefix: management.managementPrefix,
  }
}

/** Registrations per hour: per source address, and over all addresses. */
interface RegistrationCaps {
  perAddress: number
  overall: number
}

/**
 * Counts a registration attempt against the caps, refusing it (429) beyond either. Each cap is one
 * atomic count-and-reserve in the store (`attempts.take`), so a burst across instances cannot get
 * past it (#27 item 8). The per-address cap applies only when the host passes the source address:
 * without one every caller would share a single bucket, and 20 registrations an hour would be the
 * whole world's (#27 item 7); `maxPerHour` bounds every registration either way. The caps count in
 * the store even when `throttle` is off or replaced: the `Limiter` interface has no atomic take.
 */
async function countRegistration(ctx: Context, caps: RegistrationCaps, meta: RequestMeta): Promise<void> {
  const now = ctx.now()
  if (meta.address !== undefined) {
    const key = `registration-address:${addressBucket(meta.address)}`
    const perAddress = await take(ctx, key, caps.perAddress, now)
    if (!perAddress.taken) refuse(ctx, meta, 'too many registrations from this address; retry later', perAddress, now)
  }
  // After the address cap, so one address beyond its own cap uses up nothing of everyone's.
  const overall = await take(ctx, 'registration-all', caps.overall, now)
  if (!overall.taken) refuse(ctx, meta, 'too many registrations; retry later', overall, now)
}

/** One atomic count-and-reserve per hour (`takeAttempt`). */
function take(ctx: Context, key: string, limit: number, now: number): Promise<AttemptTaken> {
  return takeAttempt(ctx.store, key, limit, 3600, now)
}

function refuse(ctx: Context, meta: RequestMeta, description: string, counter: AttemptCounter, now: number): never {
  ctx.emit(meta, { type: 'client.registration_failed', reason: 'too_many_registrations' })
  throw new OAuthError('invalid_request', description, throttledAfter(counter.resetAt - now))
}

/**
 * Stores the new client (random id, registration access token, a secret for client_secret_basic
 * and client_secret_post only: public and private_key_jwt clients get none) and answers 201.
 */
async function registerClient(ctx: Context, metadata: RegisteredClientMetadata, meta: RequestMeta): Promise<Response> {
  const clientId = randomToken(18)
  const accessToken = randomToken(32)
  const method = metadata.token_endpoint_auth_method
  const secret = method === 'none' || method === 'private_key_jwt' ? undefined : generateSecret()
  const record: ClientRecord = {
    clientId,
    secrets:
      secret === undefined
        ? []
        : [{ hash: await hashSecret(secret, ctx.config.secretHashIterations), createdAt: ctx.now() }],
    ...clientFields(metadata, clientId),
    lifetimes: {},
    registration: { kind: 'dynamic', metadata, accessTokenHash: await ctx.sha256(accessToken) },
    createdAt: ctx.now(),
    updatedAt: ctx.now(),
  }
  if (!(await ctx.store.clients.insert(record))) throw new Error('generated client id already exists')
  ctx.clients.forget(clientId)
  ctx.emit(meta, {
    type: 'client.registered',
    clientId,
    authMethod: metadata.token_endpoint_auth_method,
    grantTypes: metadata.grant_types,
    scope: metadata.scope ?? '',
  })
  return noStoreJson(clientInformation(ctx, record, { accessToken, ...(secret !== undefined ? { secret } : {}) }), 201)
}
