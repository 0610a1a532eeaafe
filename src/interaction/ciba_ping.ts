/**
 * @module interaction/ciba_ping
 * Ping mode of CIBA (OpenID CIBA Core 1.0 §10.2): once the end-user decided, the service POSTs
 * `{"auth_req_id": …}` as JSON to the client's `backchannelClientNotificationEndpoint` with
 * `Authorization: Bearer <client_notification_token>`; the client then redeems at the token endpoint.
 * Bounded as back-channel logout deliveries are (the `backchannelLogout` settings: `timeout`,
 * `retryDelays`, `fetch`, `allowPrivateNetworks`): https, or http on a loopback host for a client the
 * host registered; a self-registered client's host must be public (src/security/outbound.ts
 * `fetchPublic`); no redirect is followed; 2xx is success; a 5xx, 429, time-out or network failure
 * is retried. A delivery that fails ends with a `ciba.notification_failed` event. It runs after the
 * decision's response (`waitUntil` when set) and never fails it.
 *
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.10.2
 */
import type { Context } from '../context.ts'
import type { RequestMeta } from '../events/index.ts'
import { callbackUrl, postCallback, sleep } from '../security/index.ts'
import { callbackOutbound } from '../logout/index.ts'
import type { CibaRequestRecord, ClientRecord } from '../storage/index.ts'

type Attempt = { ok: true } | { ok: false; retry: boolean; error: string }

/** One POST, bounded by the time-out (the address check included). */
async function post(url: URL, body: string, token: string, guarded: boolean, ctx: Context): Promise<Attempt> {
  const settings = ctx.config.backchannelLogout
  const outcome = await postCallback({
    url,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
    timeout: settings.timeout,
    guarded,
    outbound: callbackOutbound(settings.fetch, ctx),
  })
  if (outcome === 'timeout' || outcome === 'network') return { ok: false, retry: true, error: outcome }
  if (outcome === 'refused') return { ok: false, retry: false, error: 'address_refused' }
  const { status } = outcome
  if (status >= 200 && status < 300) return { ok: true }
  const retry = status >= 500 || status === 429 || status === 408
  return { ok: false, retry, error: String(status) }
}

/** Pings the client with retries; the failure's description, or undefined when it was delivered. */
async function ping(
  record: CibaRequestRecord,
  client: ClientRecord,
  ctx: Context,
): Promise<{ attempts: number; error?: string }> {
  const url = callbackUrl(client.backchannelClientNotificationEndpoint, client.registration !== undefined)
  if (!url || record.authReqId === undefined || record.clientNotificationToken === undefined) {
    return { attempts: 0, error: 'address_refused' }
  }
  const guarded = client.registration !== undefined && !ctx.config.backchannelLogout.allowPrivateNetworks
  const body = JSON.stringify({ auth_req_id: record.authReqId })
  const delays = ctx.config.backchannelLogout.retryDelays
  let attempts = 0
  for (;;) {
    const attempt = await post(url, body, record.clientNotificationToken, guarded, ctx)
    attempts++
    if (attempt.ok) return { attempts }
    const delay = delays[attempts - 1]
    if (!attempt.retry || delay === undefined) return { attempts, error: attempt.error }
    await sleep(delay)
  }
}

/**
 * Starts the ping of a decided request (ping mode) and returns at once: the work goes to
 * `waitUntil` when set, else it just runs; nothing it does can throw here.
 */
export function startCibaPing(record: CibaRequestRecord, ctx: Context, meta?: RequestMeta): void {
  if (record.deliveryMode !== 'ping') return
  const work = (async () => {
    const client = await ctx.clients.get(record.clientId)
    const outcome = client ? await ping(record, client, ctx) : { attempts: 0, error: 'unknown_client' }
    if (outcome.error === undefined) return
    ctx.emit(meta, {
      type: 'ciba.notification_failed',
      target: 'client',
      clientId: record.clientId,
      sub: record.sub,
      grantId: record.familyId,
      attempts: outcome.attempts,
      error: outcome.error,
    })
  })().catch((err: unknown) => ctx.logger.error('CIBA ping failed', { clientId: record.clientId, err }))
  ctx.config.waitUntil?.(work)
}
