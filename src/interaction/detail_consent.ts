/**
 * @module interaction/detail_consent
 * The consent rule of Rich Authorization Requests (RFC 9396, #41): a request with
 * `authorization_details` always asks the end-user, whatever the client's consent type, unless
 * every one of its details was approved before for that client in the browser's session. The
 * session keeps the base64url SHA-256 of each approved detail's canonical JSON.
 */
import type { Context } from '../context.ts'
import { canonicalDetail } from '../protocol/index.ts'
import type { AuthorizationDetail, SessionRecord } from '../storage/index.ts'
import type { AuthorizationRequest } from './request.ts'

/** Approved details remembered per client in one session (the oldest are forgotten beyond it). */
export const DETAIL_CONSENTS_MAX = 100

function detailKeys(details: readonly AuthorizationDetail[], ctx: Context): Promise<string[]> {
  return Promise.all(details.map((detail) => ctx.sha256(canonicalDetail(detail))))
}

/** Whether the request's authorization details need the end-user's approval in `session`. */
export async function detailsNeedConsent(
  authRequest: AuthorizationRequest,
  session: SessionRecord | undefined,
  ctx: Context,
): Promise<boolean> {
  const details = authRequest.authorizationDetails
  if (!details?.length) return false
  const given = session?.detailConsents?.[authRequest.clientId]
  if (!given?.length) return true
  const keys = await detailKeys(details, ctx)
  return !keys.every((key) => given.includes(key))
}

/** Records in `session` (not yet stored) that the end-user approved `details` for `clientId`. */
export async function recordDetailConsent(
  session: SessionRecord,
  clientId: string,
  details: readonly AuthorizationDetail[],
  ctx: Context,
): Promise<void> {
  const previous = session.detailConsents?.[clientId] ?? []
  const merged = [...new Set([...previous, ...(await detailKeys(details, ctx))])].slice(-DETAIL_CONSENTS_MAX)
  session.detailConsents = { ...session.detailConsents, [clientId]: merged }
}
