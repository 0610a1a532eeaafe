/**
 * @module client_auth/failure
 * How a client authentication fails (RFC 6749 §5.2 `invalid_client`, 401 with the Basic
 * challenge), shared by every method: the `client.authentication_failed` audit event, the
 * throttle counters it feeds, and the 429 a throttled caller gets before anything is checked.
 */
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import type { GatehouseEvent, RequestMeta } from '../events/index.ts'
import { type ThrottleRule, throttledAfter } from '../security/index.ts'

/** Why an authentication failed (the audit event's reason). */
export type FailureReason = Extract<GatehouseEvent, { type: 'client.authentication_failed' }>['reason']

/** `invalid_client` with the Basic challenge (RFC 6749 §5.2: 401 when the client may use the header). */
export function invalidClient(description: string, cause?: unknown): OAuthError {
  return new OAuthError('invalid_client', description, { challenge: 'Basic', cause })
}

/**
 * A client metadata document's failure (always invalid_client) as a 401 with the Basic challenge;
 * a throttled fetch stays a 429 with its Retry-After.
 */
export function documentFailure(err: unknown): never {
  if (err instanceof OAuthError && err.code === 'invalid_client' && err.status !== 429) {
    throw invalidClient(err.message, err)
  }
  throw err
}

/** Emits the failure and counts it against `rules`. */
export async function recordFailure(
  ctx: Context,
  meta: RequestMeta,
  clientId: string | undefined,
  reason: FailureReason,
  rules?: readonly ThrottleRule[],
): Promise<void> {
  ctx.emit(meta, { type: 'client.authentication_failed', ...(clientId !== undefined ? { clientId } : {}), reason })
  if (ctx.throttle && rules && rules.length > 0) await ctx.throttle.limiter.fail(rules, ctx.now())
}

/** Emits the failure, counts it against `rules`, and returns the invalid_client error to throw. */
export async function failure(
  ctx: Context,
  meta: RequestMeta,
  clientId: string,
  reason: FailureReason,
  description: string,
  rules?: readonly ThrottleRule[],
): Promise<OAuthError> {
  await recordFailure(ctx, meta, clientId, reason, rules)
  return invalidClient(description)
}

/**
 * Throws 429 when a counter of the attempt is exhausted: synchronously when the limiter answers
 * synchronously (its counters read within the last second), else through the returned promise.
 */
export function refuseIfThrottled(
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
