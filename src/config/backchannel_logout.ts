/**
 * @module config/backchannel_logout
 * The `backchannelLogout` option (OpenID Connect Back-Channel Logout 1.0 delivery): the written-out
 * type of the public API and its valibot schema with the defaults.
 */
import * as v from 'valibot'

/** Settings of the `backchannelLogout` option: how logout tokens are delivered. */
export interface BackchannelLogoutOptions {
  /** Seconds one POST (address check, response) may take, at most 10. Default 5. */
  timeout?: number
  /**
   * Seconds to wait before each retry of a delivery that timed out, failed to connect or got a
   * 5xx (or 429): one entry per retry, at most 5. Default `[1, 4]` (three attempts in all).
   */
  retryDelays?: number[]
  /**
   * POST to private, loopback, link-local and unique-local addresses for self-registered clients
   * too. Default false. The host's own clients may always use any https URI, and http on a
   * loopback host (as their other URIs).
   */
  allowPrivateNetworks?: boolean
  /** The fetch used for the POSTs (e.g. one through an egress proxy). Default: the global `fetch`. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>
}

/** Defaults of the `backchannelLogout` option. */
export const BACKCHANNEL_LOGOUT_DEFAULTS = { timeout: 5, retryDelays: [1, 4], allowPrivateNetworks: false }

/** The `backchannelLogout` option's schema (defaults filled in). */
export const BackchannelLogoutSchema = v.optional(
  v.strictObject({
    timeout: v.optional(v.pipe(v.number(), v.minValue(0.01), v.maxValue(10)), BACKCHANNEL_LOGOUT_DEFAULTS.timeout),
    retryDelays: v.optional(
      v.pipe(v.array(v.pipe(v.number(), v.minValue(0), v.maxValue(60))), v.maxLength(5)),
      BACKCHANNEL_LOGOUT_DEFAULTS.retryDelays,
    ),
    allowPrivateNetworks: v.optional(v.boolean(), BACKCHANNEL_LOGOUT_DEFAULTS.allowPrivateNetworks),
    fetch: v.optional(
      v.custom<(url: string, init: RequestInit) => Promise<Response>>(
        (value) => typeof value === 'function',
        'must be a function (url, init) => Promise<Response>',
      ),
    ),
  }),
  {},
)
