/**
 * @module client_auth/authenticate
 * Client authentication at the token, introspection, revocation, PAR and device authorization
 * endpoints (RFC 6749 §2.3):
 * client_secret_basic, client_secret_post, private_key_jwt (RFC 7523, in private_key_jwt.ts) and
 * `none` for public clients.
 * Checks, in order:
 * - at most one method per request: Basic, a form secret, an assertion (RFC 6749 §2.3; two are
 *   `invalid_request`, §5.2 "utilizes more than one mechanism for authenticating the client")
 * - Basic credentials are base64, split at the first `:`, each half form-url-decoded (§2.3.1)
 * - a body client_id next to Basic must name the same client
 * - the caller is not throttled (too many failures of this client id / source address)
 * - the client exists and, when it lists `allowedNetworks`, the source address is in one
 * - a client with a secret must present a valid, unexpired one; a client registered for `none`
 *   or `private_key_jwt` never authenticates with a secret (the same hash work as a wrong one)
 * - a public client is accepted only where the endpoint allows it
 * - once it proved who it is: the method is the one it registered (`tokenEndpointAuthMethod`,
 *   client_secret_basic and client_secret_post told apart), and the profile admits the client
 *   (`fapi2-security`: private_key_jwt only)
 */
import { isConfidential } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { type Params, checkParameter } from '../http.ts'
import {
  hashIterations,
  inNetworks,
  metaOf,
  type SecretCheck,
  unmatchableHash,
  verifySecret,
} from '../security/index.ts'
import { profileRefusal } from '../config/index.ts'
import type { ClientRecord, TokenEndpointAuthMethod } from '../storage/index.ts'
import { documentFailure, failure, invalidClient, refuseIfThrottled } from './failure.ts'
import { type AuthenticatingEndpoint, authenticateWithAssertion, hasAssertion } from './private_key_jwt.ts'

export type ClientAuthMethod = TokenEndpointAuthMethod

export interface AuthenticatedClient {
  client: ClientRecord
  method: ClientAuthMethod
  /** The request it authenticated (grants read its audit facts). */
  request: Request
}

export interface ClientAuthOptions {
  /** Whether a public client (`none`) may use the endpoint. */
  allowPublic: boolean
  /**
   * The endpoint called, whose URL a private_key_jwt assertion may name as its audience; absent:
   * the endpoint at the request's path (the URL itself comes from the issuer).
   */
  endpoint?: AuthenticatingEndpoint
}

function formDecode(value: string): string {
  return /[%+]/.test(value) ? decodeURIComponent(value.replace(/\+/g, ' ')) : value
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true })

/** The strict UTF-8 reading of `atob`'s one-char-per-byte string (ASCII, the usual case, as is). */
function utf8FromBinary(binary: string): string {
  if (!/[\u0080-\uffff]/.test(binary)) return binary
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return STRICT_UTF8.decode(bytes)
}

/** Parses `Authorization: Basic …` into client_id and client_secret. */
export function parseBasic(header: string): { clientId: string; clientSecret: string } {
  const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header)
  if (!match?.[1]) throw invalidClient('malformed Basic credentials')
  let decoded: string
  try {
    decoded = utf8FromBinary(atob(match[1]))
  } catch (cause) {
    throw invalidClient('malformed Basic credentials', cause)
  }
  const colon = decoded.indexOf(':')
  if (colon < 0) throw invalidClient('malformed Basic credentials')
  try {
    return {
      clientId: formDecode(decoded.slice(0, colon)),
      clientSecret: formDecode(decoded.slice(colon + 1)),
    }
  } catch (cause) {
    throw invalidClient('malformed Basic credentials', cause)
  }
}

type SecretMethod = Exclude<ClientAuthMethod, 'private_key_jwt'>

/** RFC 6749 §2.3 / §5.2: a request that uses more than one method is invalid_request. */
function moreThanOneMethod(): OAuthError {
  return new OAuthError('invalid_request', 'use only one client authentication method')
}

/** Which method the request uses, and its client id and secret when it is not an assertion. */
function readCredentials(
  request: Request,
  params: Params,
): { method: 'private_key_jwt' } | { method: SecretMethod; clientId: string; secret: string | undefined } {
  const header = request.headers.get('authorization')
  const bodyId = params.get('client_id')
  const bodySecret = params.get('client_secret')
  const assertion = hasAssertion(params)
  if (header !== null && /^basic /i.test(header)) {
    if (bodySecret !== undefined || assertion) throw moreThanOneMethod()
    const { clientId, clientSecret } = parseBasic(header)
    // No U+0000 toward a store, as for form parameters (the header's own size bounds the length).
    checkParameter('client_id', clientId)
    checkParameter('client_secret', clientSecret)
    if (bodyId !== undefined && bodyId !== clientId) {
      throw invalidClient('client_id does not match the authenticated client')
    }
    return { method: 'client_secret_basic', clientId, secret: clientSecret }
  }
  if (header !== null && header.trim() !== '') {
    throw invalidClient('unsupported Authorization scheme for client authentication')
  }
  if (assertion) {
    if (bodySecret !== undefined) throw moreThanOneMethod()
    return { method: 'private_key_jwt' }
  }
  if (bodyId === undefined) throw invalidClient('client authentication is required')
  return { method: bodySecret === undefined ? 'none' : 'client_secret_post', clientId: bodyId, secret: bodySecret }
}

/** Authenticates the calling client. */
export async function authenticateClient(
  request: Request,
  params: Params,
  ctx: Context,
  options: ClientAuthOptions,
): Promise<AuthenticatedClient> {
  const credentials = readCredentials(request, params)
  if (credentials.method === 'private_key_jwt') {
    const client = await authenticateWithAssertion(request, params, ctx, options.endpoint)
    return accepted(ctx, { client, method: 'private_key_jwt', request })
  }
  const { clientId, method } = credentials
  const meta = metaOf(request)
  const throttle = ctx.throttle
  // A cached client answers synchronously: not awaited then (an await is a turn of the microtask queue).
  const found = ctx.clients.get(clientId, meta.address)
  // A client id URL whose metadata document cannot be used (unreachable, invalid) is an unknown client.
  const client = found instanceof Promise ? await found.catch(documentFailure) : found
  // Anyone can send a request from outside a client's networks, so such failures count against
  // the address only: they must not let outsiders use up the client's own counter.
  const cachedRules =
    throttle && (method !== 'none' || client?.allowedNetworks)
      ? throttle.clientRules(clientId, meta.address)
      : undefined
  // Usually cached: not awaited then.
  const rules = cachedRules instanceof Promise ? await cachedRules : cachedRules
  if (client?.allowedNetworks && !inNetworks(meta.address, client.allowedNetworks)) {
    throw await failure(
      ctx,
      meta,
      clientId,
      'network_not_allowed',
      'the client may not authenticate from this network',
      rules?.address,
    )
  }
  if (method === 'none') {
    if (!client) throw invalidClient('client authentication failed')
    if (isConfidential(client))
      throw await failure(ctx, meta, clientId, 'missing_secret', 'client authentication is required')
    if (!options.allowPublic) throw invalidClient('public clients cannot use this endpoint')
    return accepted(ctx, { client, method, request })
  }
  // Checked before the secret is: a throttled caller learns nothing, even from a correct guess.
  if (throttle && rules) {
    const refusal = refuseIfThrottled(ctx, meta, clientId, rules.all)
    if (refusal) await refusal
  }
  const presented = credentials.secret as string
  if (!client || client.secrets.length === 0) {
    // No stored secret to check (an unknown client, a public one, one that authenticates with a
    // key): the same hash work as a wrong secret of a known client, so the answer's timing does
    // not tell which client ids exist (#17.7).
    const reason = !client
      ? 'unknown_client'
      : registeredWithoutSecret(client)
        ? 'method_not_allowed'
        : 'invalid_secret'
    const refuse = async (): Promise<never> => {
      if (throttle && rules) await refuseIfThrottled(ctx, meta, clientId, rules.all, { fresh: true })
      await verifySecret(presented, unmatchableHash(ctx.config.secretHashIterations))
      throw await failure(ctx, meta, clientId, reason, 'client authentication failed', rules?.all)
    }
    return throttle && rules ? throttle.exclusive(rules.exclusive, refuse) : refuse()
  }
  // A secret verified recently (the in-memory cache) is the fast path, not awaited when it answers
  // synchronously; the slow hash runs one at a time per client and address, re-checking the
  // counters first, so a burst cannot outrun them.
  const cached = recentlyVerified(client, presented, ctx)
  if (cached === true || (cached !== false && (await cached))) return accepted(ctx, { client, method, request })
  const verify = async (): Promise<boolean> => {
    if (throttle && rules) await refuseIfThrottled(ctx, meta, clientId, rules.all, { fresh: true })
    const result = await checkSecret(client, presented, ctx)
    if (result === 'match') return true
    const reason = result === 'unverifiable' ? 'secret_hash_unverifiable' : 'invalid_secret'
    throw await failure(ctx, meta, clientId, reason, 'client authentication failed', rules?.all)
  }
  await (throttle && rules ? throttle.exclusive(rules.exclusive, verify) : verify())
  return accepted(ctx, { client, method, request })
}

/** Whether the client registered a method that uses no secret (`none`, `private_key_jwt`). */
function registeredWithoutSecret(client: ClientRecord): boolean {
  return client.tokenEndpointAuthMethod === 'none' || client.tokenEndpointAuthMethod === 'private_key_jwt'
}

/**
 * The checks after the client proved who it is, so their descriptions may say what is wrong:
 * the method is the one it registered, and the profile admits it. Such a refusal is an audit
 * event but no throttle count (nothing was guessed).
 */
function accepted(ctx: Context, result: AuthenticatedClient): AuthenticatedClient {
  const { client, method } = result
  const registered = client.tokenEndpointAuthMethod
  // RFC 7591 §2: the client authenticates with the method it registered.
  const refusal =
    registered !== undefined && registered !== method
      ? `the client is registered for ${registered} client authentication`
      : profileRefusal(client, ctx.config)
  if (refusal === undefined) return result
  ctx.emit(metaOf(result.request), {
    type: 'client.authentication_failed',
    clientId: client.clientId,
    reason: 'method_not_allowed',
  })
  throw invalidClient(refusal)
}

/** Whether a stored secret is still valid (a retired one has an expiry). */
function isLive(record: ClientRecord['secrets'][number], now: number): boolean {
  return record.expiresAt === undefined || record.expiresAt > now
}

/** Whether a live secret of the client was verified recently with `secret` (never the slow hash). */
function recentlyVerified(client: ClientRecord, secret: string, ctx: Context): boolean | Promise<boolean> {
  const now = ctx.now()
  let pending: Promise<boolean>[] | undefined
  for (const record of client.secrets) {
    if (!isLive(record, now)) continue
    const hit = ctx.secretCache.isCached(secret, record.hash)
    if (hit === true) return true
    if (hit === false) continue
    pending ??= []
    pending.push(hit)
  }
  return pending !== undefined && Promise.all(pending).then((hits) => hits.includes(true))
}

/**
 * Verifies `secret` against the client's live secrets (the slow hash unless cached). A match whose
 * hash has another iteration count than configured is rehashed with it; no match where a stored
 * hash has more iterations than the platform computes is `unverifiable` (logged, for the audit
 * event's reason): nothing could have matched it here.
 */
async function checkSecret(client: ClientRecord, secret: string, ctx: Context): Promise<SecretCheck> {
  const now = ctx.now()
  let hashed = false
  let unverifiable: number | undefined
  for (const record of client.secrets) {
    if (!isLive(record, now)) continue
    hashed = true
    const result = await ctx.secretCache.check(secret, record.hash)
    if (result === 'match') {
      await rehashIfNeeded(client, record.hash, secret, ctx)
      return 'match'
    }
    if (result === 'unverifiable') unverifiable = hashIterations(record.hash)
  }
  // Every secret retired: still pay one hash, like any other wrong secret.
  if (!hashed) await verifySecret(secret, unmatchableHash(ctx.config.secretHashIterations))
  if (unverifiable === undefined) return 'mismatch'
  ctx.logger.warn('a client secret hash has more PBKDF2 iterations than this platform computes', {
    clientId: client.clientId,
    iterations: unverifiable,
    maxIterations: ctx.config.secretHashMaxIterations,
    remedy: 'give the client a new secret (gatehouse clients rotate-secret) or set its hashes elsewhere',
  })
  return 'unverifiable'
}

/**
 * Rehashes a just-verified secret whose stored hash has another iteration count than configured
 * (an older default, a hash made elsewhere), through the registry's compare-and-set. Awaited, so
 * it is done when the response is (a Worker may not run anything after it), but never fails the
 * authentication: a failed write is logged and tried again on the next slow verification.
 */
async function rehashIfNeeded(client: ClientRecord, stored: string, secret: string, ctx: Context): Promise<void> {
  if (hashIterations(stored) === ctx.config.secretHashIterations) return
  try {
    await ctx.clients.rehashSecret(client.clientId, stored, secret)
  } catch (err) {
    ctx.logger.error('client secret rehash failed', {
      clientId: client.clientId,
      error: err instanceof Error ? err.name : typeof err,
    })
  }
}

/** Requires a permission of the client, else `unauthorized_client`. */
export function requirePermission(client: ClientRecord, permission: string, what: string): void {
  if (!client.permissions.includes(permission)) {
    throw new OAuthError('unauthorized_client', `the client is not allowed to use ${what}`)
  }
}
