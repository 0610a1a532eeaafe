/**
 * @module endpoints/device_authorization
 * The device authorization endpoint, POST /connect/device (RFC 8628 §3.1, §3.2), as named steps:
 * read the form (`resource` may repeat, RFC 8707), authenticate the client as the token endpoint
 * does (§3.1: a public client sends its client_id; the same throttling), check that it may use the
 * endpoint (`ept:device_authorization`) and the grant (`gt:…device_code`), else unauthorized_client,
 * check `scope` and `resource` as the authorization endpoint does (invalid_scope, invalid_target),
 * count it against the limits per address and per client (`throttle.deviceAuthorization`, #39
 * item 7: 429 `invalid_request` with Retry-After beyond either), store the authorization under the
 * device code's SHA-256 with a fresh user code (drawn again while a live authorization holds it)
 * and answer 200 with the codes, the verification URIs,
 * `expires_in` and `interval` (§3.2). Every error is JSON (§3.2, RFC 6749 §5.2).
 */
import { authenticateClient, requirePermission } from '../client_auth/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { allValues, noStoreJson, readForm } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import { addressBucket, metaOf, takeAttempt, throttledAfter } from '../security/index.ts'
import { RESOURCE_PARAMETERS } from '../protocol/index.ts'
import type { ClientRecord, DeviceCodeRecord } from '../storage/index.ts'
import type { RequestMeta } from '../events/index.ts'
import { randomToken } from '../crypto/index.ts'
import { formatUserCode, generateUserCode } from '../tokens/index.ts'
import { requestedScopes } from './authorization_request.ts'

/** User codes drawn before giving up: with 20^8 codes, a second draw is already rare. */
const USER_CODE_ATTEMPTS = 5

/** RFC 8628 §3.2: the device authorization response. */
export interface DeviceAuthorizationResponse {
  device_code: string
  /** Shown as `XXXX-XXXX`. */
  user_code: string
  verification_uri: string
  /** §3.3.1: the verification URI with the user code, for a QR code or a link. */
  verification_uri_complete: string
  expires_in: number
  interval: number
}

/**
 * Answers a device authorization request: 200 with the device code and the user code.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8628#section-3.1
 */
export async function handleDeviceAuthorization(request: Request, ctx: Context): Promise<Response> {
  // RFC 8707 §2: `resource` may repeat; any other repeated parameter is invalid_request.
  const params = await readForm(request, ctx.config.limits, RESOURCE_PARAMETERS)
  // RFC 8628 §3.1: authenticated as at the token endpoint; a private_key_jwt assertion may name this endpoint.
  const { client } = await authenticateClient(request, params, ctx, {
    allowPublic: true,
    endpoint: 'deviceAuthorization',
  })
  requirePermission(client, Permissions.Endpoints.DeviceAuthorization, 'the device authorization endpoint')
  // A client that cannot redeem a device code must not make end-users approve one.
  requirePermission(client, Permissions.GrantTypes.DeviceCode, 'the device_code grant')
  const { scopes, resources } = requestedScopes(params.get('scope'), allValues(params, 'resource'), client, ctx)
  await countDeviceAuthorization(ctx, client, metaOf(request))
  // Self-registered clients: last use, written at most once a day (pruning of unused ones).
  if (client.registration) ctx.clients.touch(client)

  const deviceCode = randomToken()
  const now = ctx.now()
  const ttl = ctx.config.deviceCodeTtl
  const interval = ctx.config.deviceCodeInterval
  const record: DeviceCodeRecord = {
    id: await ctx.sha256(deviceCode),
    userCode: generateUserCode(),
    familyId: randomToken(),
    clientId: client.clientId,
    scope: scopes.join(' '),
    ...(resources.length > 0 ? { resources } : {}),
    interval,
    status: 'pending',
    issuedAt: now,
    expiresAt: now + ttl,
  }
  await insertWithFreshUserCode(record, ctx)
  ctx.emit(metaOf(request), {
    type: 'device.authorization_started',
    clientId: client.clientId,
    grantId: record.familyId,
    scope: record.scope,
  })
  const userCode = formatUserCode(record.userCode)
  const verificationUri = ctx.urls.verification
  const body: DeviceAuthorizationResponse = {
    device_code: deviceCode,
    user_code: userCode,
    verification_uri: verificationUri,
    verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(userCode)}`,
    expires_in: ttl,
    interval,
  }
  return noStoreJson(body)
}

/**
 * Counts a device authorization against `throttle.deviceAuthorization` (RFC 8628 §5.2), refusing
 * it beyond a limit (a limit that refuses it does not count it). Each limit is one atomic
 * count-and-reserve in the store (`takeAttempt`), so a burst across instances cannot get past it, also with a custom
 * `throttle.limiter`. The address limit comes first, so an address beyond its own uses up nothing
 * of its client's; without an address only the client's limit applies (a shared bucket would let
 * one caller lock out every address-less one). The client's limit is also the cap on its pending
 * authorizations, and the store's growth: the new request is refused, never an older pending one
 * evicted (which would let anyone cancel an end-user's authorization in progress).
 *
 * The answer is 429 with Retry-After and `invalid_request`, as the registration caps answer: RFC
 * 8628 §3.2 gives this endpoint the error codes of RFC 6749 §5.2 only (`slow_down` is the token
 * endpoint's, §3.5, where it changes the polling interval, which means nothing here).
 */
async function countDeviceAuthorization(ctx: Context, client: ClientRecord, meta: RequestMeta): Promise<void> {
  const settings = ctx.config.throttle
  if (settings === false) return
  const { window, deviceAuthorization: limits } = settings
  const now = ctx.now()
  const keys: [string, number][] = [[`device-client:${client.clientId}`, limits.perClient]]
  if (meta.address !== undefined) keys.unshift([`device-address:${addressBucket(meta.address)}`, limits.perAddress])
  for (const [key, limit] of keys) {
    const counter = await takeAttempt(ctx.store, key, limit, window, now)
    if (counter.taken) continue
    ctx.emit(meta, { type: 'device.authorization_throttled', clientId: client.clientId })
    throw new OAuthError(
      'invalid_request',
      'too many device authorizations; retry later',
      throttledAfter(counter.resetAt - now),
    )
  }
}

/**
 * Inserts the record, drawing a new user code while a live authorization holds the drawn one
 * (the store's insert is atomic: two authorizations never share a live user code).
 */
async function insertWithFreshUserCode(record: DeviceCodeRecord, ctx: Context): Promise<void> {
  for (let attempt = 0; attempt < USER_CODE_ATTEMPTS; attempt++) {
    if (attempt > 0) record.userCode = generateUserCode()
    if (await ctx.store.deviceCodes.insert(record, record.issuedAt)) return
  }
  throw new OAuthError('server_error', 'no free user code could be drawn')
}
