/**
 * @module interaction/detail_consent
 * The consent rule of Rich Authorization Requests (RFC 9396, #41): a request with
 * `authorization_details` always asks the end-user, whatever the client's consent type. A new
 * authorization request makes a new grant, and the one exception ("unless the same details
 * were approved before in that grant") needs a grant named by the request (Grant Management's
 * `grant_id`, #42): no earlier approval in the browser's session stands in for it, so a one-off
 * payment is never approved twice without the end-user seeing it.
 */
import type { AuthorizationRequest } from './request.ts'

/** Whether the request's authorization details need the end-user's approval: whenever there are any. */
export function detailsNeedConsent(authRequest: Pick<AuthorizationRequest, 'authorizationDetails'>): boolean {
  return (authRequest.authorizationDetails?.length ?? 0) > 0
}
