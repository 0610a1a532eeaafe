/**
 * @module config/ciba
 * The `ciba` option (OpenID CIBA Core 1.0): how the service reaches the end-user a backchannel
 * authentication request names. The written-out type of the public API and its valibot schema.
 */
import * as v from 'valibot'

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
  }),
  {},
)
