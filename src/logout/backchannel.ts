/**
 * @module logout/backchannel
 * OpenID Connect Back-Channel Logout 1.0: when a session ends, a logout token (§2.4) is POSTed to
 * every client that took part in it and registered a `backchannelLogoutUri` (§2.5). Per client:
 * - the token is a JWT signed like the client's ID tokens (same key and alg), header
 *   `typ: logout+jwt` (§2.4, RFC 8417 recommendation), with `iss`, `aud` (the client id), `iat`,
 *   `exp` (2 minutes), `jti`, `events` holding `http://schemas.openid.net/event/backchannel-logout`,
 *   `sub` and `sid` (always: the service supports `backchannel_logout_session_supported`), never
 *   `nonce` (§2.4: it is prohibited, so a logout token cannot pass as an ID token)
 * - the URI is https, or http on a loopback host for a client the host registered; a
 *   self-registered client's host must not be a private, loopback or otherwise local address
 *   unless `allowPrivateNetworks`: the rules of jwks_uri fetches (src/security/outbound.ts; a host
 *   name is resolved once by the runtime's `outboundFetch`, which connects to the checked address,
 *   and refused where there is none unless the host opts in: #39 item 5)
 * - the POST (§2.5: `application/x-www-form-urlencoded`, `logout_token=…`) follows no redirect and
 *   takes at most `timeout`; 200 and 204 are success (§2.8); a 5xx, 429, time-out or network
 *   failure is retried after each of `retryDelays`; a 4xx or redirect is final
 * - each delivery ends with one audit event, `logout.delivered` or `logout.delivery_failed`
 * The whole delivery runs after the logout response: handed to `waitUntil` (Workers) when set,
 * otherwise left running with every error caught and logged. It never delays nor fails a logout.
 */
import type { Context } from '../context.ts'
import type { RequestMeta } from '../events/index.ts'
import { randomToken, signingAlgorithms, signJwt } from '../crypto/index.ts'
import { callbackUrl, type OutboundOptions, type PlainFetch, postCallback, sleep } from '../security/index.ts'
import type { ClientRecord } from '../storage/index.ts'

/** The `events` member of a back-channel logout token (Back-Channel Logout 1.0 §2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
/** The JWT `typ` of a logout token (Back-Channel Logout 1.0 §2.4). */
export const LOGOUT_TOKEN_TYPE = 'logout+jwt'
/** Seconds a logout token is valid: it is delivered at once, retries included. */
export const LOGOUT_TOKEN_TTL = 120

/** The session that ended, as its logout tokens name it. */
export interface EndedSession {
  sub: string
  sid: string
  /** Client ids that received codes in the session. */
  clients: readonly string[]
}

/** Why a delivery failed (the `logout.delivery_failed` event's reason). */
type FailureReason = 'status' | 'timeout' | 'network' | 'redirect' | 'address_refused' | 'signing'

/** What a delivery's event reports beyond client and session. */
interface DeliveryOutcome {
  jti: string
  attempts: number
  status?: number
  reason?: FailureReason
}

/** Signs the logout token of `session` for `client` (Back-Channel Logout 1.0 §2.4). */
export async function issueLogoutToken(
  client: ClientRecord,
  session: EndedSession,
  ctx: Context,
): Promise<{ token: string; jti: string }> {
  const registered = client.idTokenSignedResponseAlg
  // Signed like the client's ID tokens; an alg the service stopped signing with falls back to its default.
  const alg =
    registered !== undefined && signingAlgorithms(ctx.config).includes(registered)
      ? registered
      : ctx.config.idTokenSigningAlg
  const now = ctx.now()
  const jti = randomToken(16)
  const payload = {
    iss: ctx.config.issuer,
    sub: session.sub,
    aud: client.clientId,
    iat: now,
    exp: now + LOGOUT_TOKEN_TTL,
    jti,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    sid: session.sid,
  }
  return { token: await signJwt(payload, LOGOUT_TOKEN_TYPE, await ctx.keyring.signingKey(alg)), jti }
}

type Attempt = { ok: true; status: number } | { ok: false; retry: boolean; status?: number; reason: FailureReason }

/** One POST, bounded by the time-out (the address check included). */
async function post(url: URL, token: string, guarded: boolean, ctx: Context): Promise<Attempt> {
  const settings = ctx.config.backchannelLogout
  const outcome = await postCallback({
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ logout_token: token }).toString(),
    timeout: settings.timeout,
    guarded,
    outbound: callbackOutbound(settings.fetch, ctx),
  })
  if (outcome === 'timeout' || outcome === 'network') return { ok: false, retry: true, reason: outcome }
  if (outcome === 'refused') return { ok: false, retry: false, reason: 'address_refused' }
  const { status } = outcome
  // §2.8: 200 OK; 204 No Content from frameworks that substitute it.
  if (status === 200 || status === 204) return { ok: true, status }
  if (outcome.opaqueRedirect || (status >= 300 && status < 400)) {
    return { ok: false, retry: false, status, reason: 'redirect' }
  }
  return { ok: false, retry: status >= 500 || status === 429 || status === 408, status, reason: 'status' }
}

/** How a guarded callback POST goes out: the host's `fetch` option and the service's outbound options. */
export function callbackOutbound(fetch: PlainFetch | undefined, ctx: Context): OutboundOptions {
  return {
    fetch,
    outboundFetch: ctx.config.outboundFetch,
    resolveHost: ctx.config.resolveHost,
    allowUnpinnedHostNames: ctx.config.allowUnpinnedHostNames,
  }
}

/** Delivers one client's logout token with retries; resolves with the event's outcome. */
async function deliver(client: ClientRecord, session: EndedSession, ctx: Context): Promise<DeliveryOutcome> {
  let issued: { token: string; jti: string }
  try {
    issued = await issueLogoutToken(client, session, ctx)
  } catch (err) {
    ctx.logger.error('back-channel logout token could not be signed', { clientId: client.clientId, err })
    return { jti: '', attempts: 0, reason: 'signing' }
  }
  const url = callbackUrl(client.backchannelLogoutUri, client.registration !== undefined)
  if (!url) return { jti: issued.jti, attempts: 0, reason: 'address_refused' }
  const guarded = client.registration !== undefined && !ctx.config.backchannelLogout.allowPrivateNetworks
  const delays = ctx.config.backchannelLogout.retryDelays
  let attempts = 0
  for (;;) {
    const attempt = await post(url, issued.token, guarded, ctx)
    attempts++
    const status = attempt.status !== undefined ? { status: attempt.status } : {}
    if (attempt.ok) return { jti: issued.jti, attempts, ...status }
    const delay = delays[attempts - 1]
    if (!attempt.retry || delay === undefined) return { jti: issued.jti, attempts, ...status, reason: attempt.reason }
    await sleep(delay)
  }
}

/** Delivers the logout tokens of an ended session to every participating client that has a URI. */
async function deliverAll(session: EndedSession, ctx: Context, meta: RequestMeta | undefined): Promise<void> {
  await Promise.all(
    [...new Set(session.clients)].map(async (clientId) => {
      let client: ClientRecord | undefined
      try {
        client = await ctx.clients.get(clientId)
      } catch (err) {
        // A client id metadata document that no longer resolves: nowhere to deliver.
        ctx.logger.warn('back-channel logout: the client could not be read', { clientId, err })
        return
      }
      if (client?.backchannelLogoutUri === undefined) return
      const outcome = await deliver(client, session, ctx)
      ctx.emit(meta, {
        type: outcome.reason === undefined ? 'logout.delivered' : 'logout.delivery_failed',
        clientId,
        sub: session.sub,
        sid: session.sid,
        ...outcome,
      })
    }),
  )
}

/**
 * Starts the back-channel logout of an ended session and returns at once: the work goes to the
 * `waitUntil` option when set, else it just runs; nothing it does can throw here.
 */
export function startBackchannelLogout(session: EndedSession, ctx: Context, meta?: RequestMeta): void {
  if (session.clients.length === 0) return
  const work = deliverAll(session, ctx, meta).catch((err: unknown) =>
    ctx.logger.error('back-channel logout failed', { sid: session.sid, err }),
  )
  ctx.config.waitUntil?.(work)
}
