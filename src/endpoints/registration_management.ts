/**
 * @module endpoints/registration_management
 * Client configuration management (RFC 7592) at {issuer}/connect/register/{client_id}: GET reads,
 * PUT replaces the metadata, DELETE removes the client, each authorized by the registration access
 * token returned once at registration (stored only as its SHA-256). An unknown client is a 401
 * too (RFC 7592 §2.1), so ids cannot be probed.
 */
import { type RegistrationPolicy, clientFields, withoutMetadataFields } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import type { RequestMeta } from '../events/index.ts'
import { noStoreJson } from '../http.ts'
import { metaOf, verifySecret } from '../security/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import {
  checkRegistrationToken,
  clientInformation,
  parseMetadata,
  readMetadata,
  refuseMetadata,
} from './registration_requests.ts'

/** What management needs beyond the context: the metadata policy and where the management URIs are. */
export interface ManagementSettings {
  policy: RegistrationPolicy
  /** The path prefix (below the host) of the management URIs: `{issuer path}/connect/register/`. */
  managementPrefix: string
}

/** The dynamic client a management request names, once its registration access token checked out. */
async function authorizedClient(
  ctx: Context,
  settings: ManagementSettings,
  request: Request,
  meta: RequestMeta,
): Promise<ClientRecord> {
  const { managementPrefix } = settings
  const pathname = new URL(request.url).pathname
  let clientId: string | undefined
  try {
    const rest = pathname.startsWith(managementPrefix) ? pathname.slice(managementPrefix.length) : ''
    clientId = rest === '' || rest.includes('/') ? undefined : decodeURIComponent(rest)
  } catch {
    clientId = undefined
  }
  const record = clientId === undefined ? undefined : await ctx.store.clients.get(clientId)
  // RFC 7592 §2.1: an unknown client is 401 too, so ids cannot be probed.
  const hash = record?.registration?.kind === 'dynamic' ? record.registration.accessTokenHash : undefined
  await checkRegistrationToken(
    ctx,
    request,
    meta,
    hash,
    'invalid_registration_access_token',
    hash ? clientId : undefined,
  )
  return record as ClientRecord
}

/** Answers GET, PUT and DELETE on a management URI. */
export async function handleManagement(
  ctx: Context,
  settings: ManagementSettings,
  request: Request,
): Promise<Response> {
  const meta = metaOf(request)
  const existing = await authorizedClient(ctx, settings, request, meta)
  const clientId = existing.clientId
  if (request.method === 'GET') return noStoreJson(clientInformation(ctx, existing))
  if (request.method === 'DELETE') {
    await ctx.store.clients.delete(clientId)
    ctx.clients.forget(clientId)
    ctx.emit(meta, { type: 'client.registration_deleted', clientId })
    return new Response(null, { status: 204, headers: { 'cache-control': 'no-store', pragma: 'no-cache' } })
  }
  return replaceMetadata(ctx, settings, request, meta, existing)
}

/** How a client authenticates, as far as an update may not change it: a secret, a key, or nothing. */
function credentialKind(method: string | undefined, secrets: number): 'none' | 'secret' | 'private_key_jwt' {
  if (method === 'private_key_jwt') return 'private_key_jwt'
  if (method === undefined) return secrets > 0 ? 'secret' : 'none'
  return method === 'none' ? 'none' : 'secret'
}

/**
 * PUT (RFC 7592 §2.2): the body replaces the metadata; omitted fields take their defaults. It
 * must name the client, keep how it authenticates (none, a secret, or private_key_jwt: its keys
 * may change), and carry its current secret if any.
 */
async function replaceMetadata(
  ctx: Context,
  settings: ManagementSettings,
  request: Request,
  meta: RequestMeta,
  existing: ClientRecord,
): Promise<Response> {
  const clientId = existing.clientId
  const body = await readMetadata(ctx, request, meta, clientId)
  const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  if (input.client_id !== clientId) {
    refuseMetadata(ctx, meta, clientId, 'client_id must be the id of the client being updated')
  }
  const metadata = parseMetadata(ctx, settings.policy, body, meta, clientId)
  const before = credentialKind(existing.tokenEndpointAuthMethod, existing.secrets.length)
  if (before !== credentialKind(metadata.token_endpoint_auth_method, 1)) {
    refuseMetadata(ctx, meta, clientId, 'token_endpoint_auth_method cannot change between none, a secret and a key')
  }
  if (input.client_secret !== undefined) {
    const secret = input.client_secret
    const matches =
      typeof secret === 'string' &&
      (await Promise.all(existing.secrets.map((record) => verifySecret(secret, record.hash, hashLimit(ctx))))).includes(
        true,
      )
    if (!matches) refuseMetadata(ctx, meta, clientId, 'client_secret does not match the client secret')
  }
  const registration = existing.registration ?? { kind: 'dynamic' as const, metadata }
  const next: ClientRecord = {
    ...withoutMetadataFields(existing),
    ...clientFields(metadata, clientId),
    registration: { ...registration, metadata },
    updatedAt: ctx.now(),
  }
  if (!(await ctx.store.clients.update(next, existing))) {
    throw new OAuthError('invalid_request', 'the client changed meanwhile; retry', { status: 409 })
  }
  ctx.clients.forget(clientId)
  ctx.emit(meta, { type: 'client.registration_updated', clientId })
  return noStoreJson(clientInformation(ctx, next))
}

/** The PBKDF2 limit of the platform (`secretHashMaxIterations`), for `verifySecret`. */
function hashLimit(ctx: Context): { maxIterations?: number } {
  const max = ctx.config.secretHashMaxIterations
  return max !== undefined ? { maxIterations: max } : {}
}
