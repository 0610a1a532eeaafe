/**
 * @module endpoints/registration_requests
 * The steps registration (RFC 7591) and management (RFC 7592) requests share: the bearer token
 * check (initial or registration access token, constant time, wrong ones counted against the
 * source address like failed client authentications), the JSON metadata body, and the client
 * information response (RFC 7591 §3.2.1). Every refusal is an audit event.
 */
import {
  type RegisteredClientMetadata,
  type RegistrationPolicy,
  badMetadata,
  parseClientMetadata,
} from '../clients/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import type { RequestMeta } from '../events/index.ts'
import { bearerToken, mediaType, readText } from '../http.ts'
import type { ClientRecord } from '../storage/index.ts'
import { type ThrottleRule, attemptRules, throttledAfter } from '../security/index.ts'
import { timingSafeEqual } from '../crypto/index.ts'

/** Emits `client.registration_failed` for bad metadata and throws `invalid_client_metadata`. */
export function refuseMetadata(
  ctx: Context,
  meta: RequestMeta,
  clientId: string | undefined,
  description: string,
): never {
  ctx.emit(meta, { type: 'client.registration_failed', reason: 'invalid_metadata', ...(clientId ? { clientId } : {}) })
  throw badMetadata(description)
}

/** Failed-token rules: the address counter of client authentication (shared with it). */
async function abuseRules(ctx: Context, address: string | undefined): Promise<readonly ThrottleRule[]> {
  if (!ctx.throttle || ctx.config.throttle === false) return []
  const { clientAuthentication, window } = ctx.config.throttle
  return (await attemptRules('client', 'registration', address, clientAuthentication, window)).address
}

async function refuseIfThrottled(
  ctx: Context,
  meta: RequestMeta,
  rules: readonly ThrottleRule[],
  clientId?: string,
): Promise<void> {
  if (!ctx.throttle || rules.length === 0) return
  const wait = await ctx.throttle.limiter.retryAfter(rules, ctx.now())
  if (wait <= 0) return
  ctx.emit(meta, { type: 'client.registration_failed', reason: 'throttled', ...(clientId ? { clientId } : {}) })
  throw new OAuthError('invalid_request', 'too many failed requests; retry later', throttledAfter(wait))
}

/** Checks a bearer token against a stored SHA-256 (constant time); counts a wrong one. */
export async function checkRegistrationToken(
  ctx: Context,
  request: Request,
  meta: RequestMeta,
  expectedHash: string | Promise<string> | undefined,
  reason: 'invalid_initial_access_token' | 'invalid_registration_access_token',
  clientId?: string,
): Promise<void> {
  const rules = await abuseRules(ctx, meta.address)
  await refuseIfThrottled(ctx, meta, rules, clientId)
  const header = request.headers.get('authorization')
  const token = bearerToken(header)
  const event = { type: 'client.registration_failed' as const, reason, ...(clientId ? { clientId } : {}) }
  if (token === undefined) {
    ctx.emit(meta, event)
    throw new OAuthError('invalid_token', 'a bearer token is required', {
      challenge: 'Bearer',
      challengeError: header !== null && header.trim() !== '',
    })
  }
  const presented = await ctx.sha256(token)
  const expected = expectedHash === undefined ? undefined : await expectedHash
  if (expected !== undefined && timingSafeEqual(presented, expected)) return
  ctx.emit(meta, event)
  if (ctx.throttle && rules.length > 0) await ctx.throttle.limiter.fail(rules, ctx.now())
  throw new OAuthError('invalid_token', 'the token is not valid here', { challenge: 'Bearer' })
}

/** The JSON body of a registration or update request (not yet checked as metadata). */
export async function readMetadata(
  ctx: Context,
  request: Request,
  meta: RequestMeta,
  clientId?: string,
): Promise<unknown> {
  if (mediaType(request.headers.get('content-type') ?? '') !== 'application/json') {
    refuseMetadata(ctx, meta, clientId, 'the body must be application/json')
  }
  const text = await readText(request, ctx.config.limits.maxBodyBytes, ctx.config.limits.trustContentLength)
  try {
    return JSON.parse(text)
  } catch {
    return refuseMetadata(ctx, meta, clientId, 'the body is not valid JSON')
  }
}

/** The body checked as client metadata (src/clients/metadata.ts); a refusal is an audit event. */
export function parseMetadata(
  ctx: Context,
  policy: RegistrationPolicy,
  body: unknown,
  meta: RequestMeta,
  clientId?: string,
): RegisteredClientMetadata {
  try {
    return parseClientMetadata(body, policy)
  } catch (err) {
    ctx.emit(meta, {
      type: 'client.registration_failed',
      reason: 'invalid_metadata',
      ...(clientId ? { clientId } : {}),
    })
    throw err
  }
}

/** The client information response (RFC 7591 §3.2.1): the metadata plus id, secret and management URI. */
export function clientInformation(
  ctx: Context,
  record: ClientRecord,
  issued: { secret?: string; accessToken?: string } = {},
): Record<string, unknown> {
  const metadata = record.registration?.metadata
  return {
    client_id: record.clientId,
    client_id_issued_at: record.createdAt,
    ...(issued.secret !== undefined ? { client_secret: issued.secret, client_secret_expires_at: 0 } : {}),
    ...(issued.accessToken !== undefined ? { registration_access_token: issued.accessToken } : {}),
    registration_client_uri: `${ctx.urls.registration}/${encodeURIComponent(record.clientId)}`,
    ...metadata,
  }
}
