/**
 * @module client_auth
 * Client authentication at the token, introspection and revocation endpoints (RFC 6749 §2.3):
 * client_secret_basic, client_secret_post, and `none` for public clients.
 * Checks, in order:
 * - at most one method per request (§2.3)
 * - Basic credentials are base64, split at the first `:`, each half form-url-decoded (§2.3.1)
 * - a body client_id next to Basic must name the same client
 * - the caller is not throttled (too many failures of this client id / source address)
 * - the client exists and, when it lists `allowedNetworks`, the source address is in one
 * - a confidential client must present a valid, unexpired secret
 * - a public client is accepted only where the endpoint allows it
 */
import { isConfidential } from '../clients.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { type Params, checkParameter } from '../http.ts'
import { inNetworks } from '../networks.ts'
import { metaOf } from '../request_meta.ts'
import type { GatehouseEvent, RequestMeta } from '../events.ts'
import { type ThrottleRule, throttledAfter } from '../throttle.ts'
import { unmatchableHash, verifySecret } from '../secrets.ts'
import type { ClientRecord } from '../storage/types.ts'

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none'

export interface AuthenticatedClient {
  client: ClientRecord
  method: ClientAuthMethod
  /** The request it authenticated (grants read its audit facts). */
  request: Request
}

function invalidClient(description: string, cause?: unknown): OAuthError {
  return new OAuthError('invalid_client', description, { challenge: 'Basic', cause })
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

/** Authenticates the calling client. */
export async function authenticateClient(
  request: Request,
  params: Params,
  ctx: Context,
  options: { allowPublic: boolean },
): Promise<AuthenticatedClient> {
  const header = request.headers.get('authorization')
  const bodyId = params.get('client_id')
  const bodySecret = params.get('client_secret')
  let clientId: string
  let secret: string | undefined
  let method: ClientAuthMethod
  if (header !== null && /^basic /i.test(header)) {
    if (bodySecret !== undefined) {
      throw new OAuthError('invalid_request', 'use only one client authentication method')
    }
    ;({ clientId, clientSecret: secret } = parseBasic(header))
    // No U+0000 toward a store, as for form parameters (the header's own size bounds the length).
    checkParameter('client_id', clientId)
    checkParameter('client_secret', secret)
    if (bodyId !== undefined && bodyId !== clientId) {
      throw invalidClient('client_id does not match the authenticated client')
    }
    method = 'client_secret_basic'
  } else if (header !== null && header.trim() !== '') {
    throw invalidClient('unsupported Authorization scheme for client authentication')
  } else if (bodyId !== undefined) {
    clientId = bodyId
    secret = bodySecret
    method = secret === undefined ? 'none' : 'client_secret_post'
  } else {
    throw invalidClient('client authentication is required')
  }

  const meta = metaOf(request)
  const throttle = ctx.throttle
  // A cached client answers synchronously: not awaited then (an await is a turn of the microtask queue).
  const found = ctx.clients.get(clientId)
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
    return { client, method, request }
  }
  // Checked before the secret is: a throttled caller learns nothing, even from a correct guess.
  if (throttle && rules) {
    const refusal = refuseIfThrottled(ctx, meta, clientId, rules.all)
    if (refusal) await refusal
  }
  const presented = secret as string
  if (!client || !isConfidential(client)) {
    // No stored secret to check: the same hash work as a wrong secret of a known client, so the
    // answer's timing does not tell which client ids exist (#17.7).
    const reason = client ? 'invalid_secret' : 'unknown_client'
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
  if (cached === true || (cached !== false && (await cached))) return { client, method, request }
  const verify = async (): Promise<boolean> => {
    if (throttle && rules) await refuseIfThrottled(ctx, meta, clientId, rules.all, { fresh: true })
    if (await checkSecret(client, presented, ctx)) return true
    throw await failure(ctx, meta, clientId, 'invalid_secret', 'client authentication failed', rules?.all)
  }
  await (throttle && rules ? throttle.exclusive(rules.exclusive, verify) : verify())
  return { client, method, request }
}

/** A client metadata document's failure (always invalid_client) as a 401 with the Basic challenge. */
function documentFailure(err: unknown): never {
  if (err instanceof OAuthError && err.code === 'invalid_client') throw invalidClient(err.message, err)
  throw err
}

type FailureReason = Extract<GatehouseEvent, { type: 'client.authentication_failed' }>['reason']

/** Emits the failure, counts it against `rules`, and returns the invalid_client error to throw. */
async function failure(
  ctx: Context,
  meta: RequestMeta,
  clientId: string,
  reason: FailureReason,
  description: string,
  rules?: readonly ThrottleRule[],
): Promise<OAuthError> {
  ctx.emit(meta, { type: 'client.authentication_failed', clientId, reason })
  if (ctx.throttle && rules && rules.length > 0) await ctx.throttle.limiter.fail(rules, ctx.now())
  return invalidClient(description)
}

/**
 * Throws 429 when a counter of the attempt is exhausted: synchronously when the limiter answers
 * synchronously (its counters read within the last second), else through the returned promise.
 */
function refuseIfThrottled(
  ctx: Context,
  meta: RequestMeta,
  clientId: string,
  rules: readonly ThrottleRule[],
  options: { fresh?: boolean } = {},
): void | Promise<void> {
  if (!ctx.throttle) return
  const wait = ctx.throttle.limiter.retryAfter(rules, ctx.now(), options)
  if (typeof wait === 'number') return refuseAfter(ctx, meta, clientId, wait)
  return Promise.resolve(wait).then((seconds) => refuseAfter(ctx, meta, clientId, seconds))
}

function refuseAfter(ctx: Context, meta: RequestMeta, clientId: string, wait: number): void {
  if (wait <= 0) return
  ctx.emit(meta, { type: 'client.authentication_failed', clientId, reason: 'throttled' })
  throw new OAuthError('invalid_client', 'too many failed client authentications; retry later', throttledAfter(wait))
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

/** Verifies `secret` against the client's live secrets (the slow hash unless cached). */
async function checkSecret(client: ClientRecord, secret: string, ctx: Context): Promise<boolean> {
  const now = ctx.now()
  let hashed = false
  for (const record of client.secrets) {
    if (!isLive(record, now)) continue
    hashed = true
    if (await ctx.secretCache.verify(secret, record.hash)) return true
  }
  // Every secret retired: still pay one hash, like any other wrong secret.
  if (!hashed) await verifySecret(secret, unmatchableHash(ctx.config.secretHashIterations))
  return false
}

/** Requires a permission of the client, else `unauthorized_client`. */
export function requirePermission(client: ClientRecord, permission: string, what: string): void {
  if (!client.permissions.includes(permission)) {
    throw new OAuthError('unauthorized_client', `the client is not allowed to use ${what}`)
  }
}
