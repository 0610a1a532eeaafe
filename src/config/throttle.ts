/**
 * @module config/throttle
 * The settings of the `throttle` option that a configuration file can hold too (all but the
 * limiter): the window and the limits per kind of attempt (see src/security/throttle.ts, and
 * docs/security.md "Brute force and abuse" for the reasoning behind each default).
 */
import * as v from 'valibot'
import { OPTION_DEFAULTS } from '../defaults.ts'
import { strictObject } from '../schema_issues.ts'

const { throttle } = OPTION_DEFAULTS

const count = (fallback: number) => v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1)), fallback)
const attemptLimits = (defaults: { perIdentityAndAddress: number; perIdentity: number; perAddress: number }) =>
  strictObject({
    /** Failures of one client id / username from one address. */
    perIdentityAndAddress: count(defaults.perIdentityAndAddress),
    /** Failures of one client id / username from anywhere. */
    perIdentity: count(defaults.perIdentity),
    /** Failures from one address, any client id / username. */
    perAddress: count(defaults.perAddress),
  })

/** Throttling settings that a configuration file can hold too (everything but the limiter). */
export const throttleSettings = {
  /** Window of the counters, seconds. Default 900 (15 minutes). */
  window: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1)), throttle.window),
  /** Failed client authentications (token, introspection, revocation endpoints). Defaults 10, 100, 100. */
  clientAuthentication: v.optional(attemptLimits(throttle.clientAuthentication), {}),
  /** Failed sign-ins on the built-in sign-in page. Defaults 5, 50, 100. */
  signIn: v.optional(attemptLimits(throttle.signIn), {}),
  /** Wrong user codes at the verification page (RFC 8628 §5.1). Defaults 20, 100, 1000. */
  userCode: v.optional(
    strictObject({
      /** From one address (IPv4 address, IPv6 /64). */
      perAddress: count(throttle.userCode.perAddress),
      /** From one network (IPv4 /24, IPv6 /48). */
      perNetwork: count(throttle.userCode.perNetwork),
      /** From everywhere together, requests without an address included. */
      overall: count(throttle.userCode.overall),
    }),
    {},
  ),
  /** Device authorizations started at /connect/device (RFC 8628 §5.2). Defaults 30, 1000. */
  deviceAuthorization: v.optional(
    strictObject({
      /** From one address (IPv4 address, IPv6 /64). */
      perAddress: count(throttle.deviceAuthorization.perAddress),
      /** Of one client: also bounds its pending device authorizations. */
      perClient: count(throttle.deviceAuthorization.perClient),
    }),
    {},
  ),
}
