/**
 * @module config/ciba
 * The `ciba` option (OpenID CIBA Core 1.0): how the service reaches the end-user a backchannel
 * authentication request names. The written-out type of the public API and its valibot schema.
 */
import * as v from 'valibot'
import { isLoopback } from '../security/index.ts'

/** What the end-user is asked (the `ciba.notify` hook's argument). */
export interface CibaNotification {
  /** The end-user the request's hint named, with their claims (as the account lookup gave them). */
  user: { sub: string; claims: Record<string, unknown> }
  /** The asking client. */
  client: { clientId: string; name?: string }
  /** The scopes asked for. */
  scopes: string[]
  /** The binding message to show, when the client sent one (CIBA §7.1). */
  bindingMessage?: string
  /** The authorization details (RFC 9396) asked for, when there are any. */
  authorizationDetails?: unknown[]
  /** The approval page on the issuer: the end-user signs in there and decides. */
  approvalUrl: string
  /** When the request expires (epoch s). */
  expiresAt: number
}

/** Settings of the `ciba` option. */
export interface CibaOptions {
  /**
   * Reaches the end-user (push, mail, chat: the host's choice) with the approval page's URL.
   * Returning `false` refuses the request (`access_denied`); a throw is a failure to reach them
   * (the request stands; a `ciba.notification_failed` event says so).
   */
  notify?: (notification: CibaNotification) => unknown
  /**
   * Without `notify` (the standalone server's configuration file): a URL of the host's own (https,
   * or http on a loopback host) the service POSTs each request to as JSON: `sub`, `client_id`,
   * `client_name`, `scope`, `binding_message`, `authorization_details`, `approval_uri`,
   * `expires_in`. Sent after the answer, with the `backchannelLogout` time-out and fetch; a failure
   * is a `ciba.notification_failed` event.
   */
  notifyUrl?: string
}

/** https, or http on a loopback host (the host's own service). */
function isHostUrl(value: string): boolean {
  const url = new URL(value)
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))
}

/** The `ciba` option's schema. */
export const CibaSchema = v.optional(
  v.strictObject({
    notify: v.optional(
      v.custom<NonNullable<CibaOptions['notify']>>(
        (value) => typeof value === 'function',
        'must be a function (notification) => unknown (false refuses)',
      ),
    ),
    notifyUrl: v.optional(
      v.pipe(
        v.string(),
        v.url('must be an absolute URL'),
        v.maxLength(2048),
        v.check(isHostUrl, 'must use https (http only for a loopback host)'),
      ),
    ),
  }),
  {},
)
