/**
 * @module config/parse
 * Options of `createTokenService`, client registrations and users, validated with valibot at the
 * boundary. A bad option fails at construction with a message naming the field. The schemas are in
 * src/config/schema.ts and src/clients/registration.ts, their defaults in src/defaults.ts;
 * this module parses, and checks at compile time that each schema accepts exactly the written-out
 * public type of src/config/options.ts.
 */
import type {
  ClientRegistration,
  DynamicClientRegistrationOptions,
  ScopeConfig,
  SigningAlgorithm,
  TokenServiceOptions,
  UserConfig,
} from './options.ts'
import * as v from 'valibot'
import type { ClientRegistrationSchema } from '../clients/index.ts'
import {
  type Config,
  type DynamicClientRegistrationSchema,
  OptionsSchema,
  type SIGNING_ALGS,
  type ScopeSchema,
  type UserSchema,
} from './schema.ts'
import { formatIssues, withoutInputs } from '../schema_issues.ts'
import { identityAssertionProblem } from './identity_assertion.ts'

/** True when A and B accept the same values (each assignable to the other). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
// The public types (src/config/options.ts) are written out; each must be what its schema accepts.
const _optionsMatch: Same<TokenServiceOptions, v.InferInput<typeof OptionsSchema>> = true
const _registrationMatches: Same<ClientRegistration, v.InferInput<typeof ClientRegistrationSchema>> = true
const _userMatches: Same<UserConfig, v.InferInput<typeof UserSchema>> = true
const _dcrMatches: Same<DynamicClientRegistrationOptions, v.InferInput<typeof DynamicClientRegistrationSchema>> = true
const _scopeMatches: Same<ScopeConfig, v.InferInput<typeof ScopeSchema>> = true
const _algorithmsMatch: Same<SigningAlgorithm, (typeof SIGNING_ALGS)[number]> = true
void [_optionsMatch, _registrationMatches, _userMatches, _dcrMatches, _scopeMatches, _algorithmsMatch]

/** Validates options; throws a TypeError naming every bad field. */
export function parseOptions(input: unknown): Config {
  const result = v.safeParse(OptionsSchema, input)
  if (result.success) return applyProfile(applyHashLimit(checkIdentityAssertion(checkDetailTypes(result.output))))
  throw new TypeError(`invalid token service options\n${formatIssues(result.issues)}`, {
    cause: withoutInputs(result.issues),
  })
}

/** Every type with hooks in `authorizationDetails.types` is one of `authorizationDetailsTypes` (#41). */
function checkDetailTypes(config: Config): Config {
  for (const type of Object.keys(config.authorizationDetails?.types ?? {})) {
    if (!config.authorizationDetailsTypes?.includes(type)) {
      throw new TypeError(
        `invalid token service options\nauthorizationDetails.types: ${JSON.stringify(type)} is not one of authorizationDetailsTypes`,
      )
    }
  }
  return config
}

/** #45: every trusted identity provider's users can be mapped to accounts (`identityAssertionProblem`). */
function checkIdentityAssertion(config: Config): Config {
  const problem = identityAssertionProblem(config)
  if (problem !== undefined) throw new TypeError(`invalid token service options\n${problem}`)
  return config
}

/**
 * New hashes within the platform's PBKDF2 limit: `secretHashIterations` above
 * `secretHashMaxIterations` (the default 600,000 with a Workers limit of 100,000) is capped to it,
 * since a hash the platform cannot compute could never verify.
 */
function applyHashLimit(config: Config): Config {
  const max = config.secretHashMaxIterations
  return max !== undefined && config.secretHashIterations > max ? { ...config, secretHashIterations: max } : config
}

/**
 * The `fapi2-security` profile's signing rule (FAPI 2.0 Security Profile §5.4.1: PS256, ES256 or
 * EdDSA): the ID token alg RS256 (the default, which a configuration file also fills in) becomes
 * ES256; an access token alg or configured keys outside the list are refused.
 */
function applyProfile(config: Config): Config {
  if (config.profile !== 'fapi2-security') return config
  const next = config.idTokenSigningAlg === 'RS256' ? { ...config, idTokenSigningAlg: 'ES256' as const } : config
  const algs = [next.idTokenSigningAlg, next.accessTokenSigningAlg, ...(next.keys?.keys.map((key) => key.alg) ?? [])]
  const refused = algs.find((alg) => !['PS256', 'ES256', 'EdDSA'].includes(alg))
  if (refused) {
    throw new TypeError(
      `invalid token service options\nprofile: fapi2-security signs with PS256, ES256 or EdDSA only, not ${refused}`,
    )
  }
  return next
}
