/**
 * @module config/identity_assertion
 * The resource authorization server side of the `identityAssertion` option
 * (draft-ietf-oauth-identity-assertion-authz-grant, #45): the identity providers whose Identity
 * Assertion JWT Authorization Grants (ID-JAGs) the JWT bearer grant (RFC 7523 §2.1) accepts, how
 * their users map to accounts here, and whether such a grant gets a refresh token.
 */
import * as v from 'valibot'
import { strictObject } from '../schema_issues.ts'
import { publicSignatureKeys } from '../clients/index.ts'
import type { IdentityAssertionIdpOptions } from './identity_assertion_audiences.ts'

/** The `alg` values an identity provider's ID-JAGs may use when its entry names none. */
export const DEFAULT_ASSERTION_ALGORITHMS = ['ES256', 'RS256', 'EdDSA'] as const
/** Every `alg` an entry may name: asymmetric only (never `none` nor HMAC). */
export const ASSERTION_ISSUER_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA', 'Ed25519'] as const

/** An identity provider whose ID-JAGs this service accepts. */
export interface IdentityAssertionIssuer {
  /** Its issuer identifier, byte for byte the ID-JAG's `iss`. */
  issuer: string
  /**
   * Where it publishes its public keys (https; http only to this machine). A host-configured URL
   * may be on a private address. Fetched and cached as client `jwks_uri`s are (refetched once
   * per 30 s at most for an unknown `kid`). Give this or `jwks`.
   */
  jwksUri?: string
  /** Its public keys, inline. Give this or `jwksUri`. */
  jwks?: { keys: Array<Record<string, unknown>> }
  /** The `alg` values its ID-JAGs may be signed with. Default ES256, RS256, EdDSA. */
  algorithms?: Array<(typeof ASSERTION_ISSUER_ALGORITHMS)[number]>
  /**
   * How its users map to accounts here (without a `findAccount` hook): `email` (the default), the
   * account whose `email` is the ID-JAG's (built-in users; a host `accounts` provider needs the
   * hook); `sub`, the account whose `sub` is the ID-JAG's.
   */
  accountClaim?: 'email' | 'sub'
}

/** What the `identityAssertion.findAccount` hook is asked: the ID-JAG's user, once it verified. */
export interface IdentityAssertionAccountQuery {
  /** The identity provider (the ID-JAG's `iss`). */
  issuer: string
  /** The user at the identity provider (the ID-JAG's `sub`). */
  sub: string
  /** The ID-JAG's `email`, when it has one its issuer does not mark unverified (`email_verified: false`). */
  email?: string
  /** Every claim of the ID-JAG. */
  claims: Record<string, unknown>
}

/** The resource authorization server settings of the `identityAssertion` option. */
export interface IdentityAssertionTrustOptions {
  /** The identity providers whose ID-JAGs are accepted. Default: none (the grant is not offered). */
  issuers?: IdentityAssertionIssuer[]
  /**
   * The host's mapping of an identity provider's user to an account here: the account's `sub`, or
   * undefined when there is none (`invalid_grant`). When set, it maps every issuer's users (their
   * `accountClaim` is unused). The account must then exist (`accounts.findAccount`).
   */
  findAccount?: (query: IdentityAssertionAccountQuery) => string | undefined | Promise<string | undefined>
  /**
   * Issue a refresh token with the access token (to a client with `gt:refresh_token`, by the
   * `requireOfflineAccess` rule): the grant is then recorded as any end-user grant, so the grants
   * page, grant management and revocation reach it. Default false: the client presents a new
   * ID-JAG for a new access token.
   */
  refreshTokens?: boolean
}

/**
 * Settings of the `identityAssertion` option: this side's (the identity provider side's join them
 * by `extends`).
 */
export interface IdentityAssertionOptions extends IdentityAssertionTrustOptions, IdentityAssertionIdpOptions {}

/** The data parts of an issuer entry, which a configuration file holds too. */
const issuerEntries = {
  issuer: v.pipe(v.string(), v.url('must be an issuer identifier (a URL)')),
  jwksUri: v.optional(v.pipe(v.string(), v.url('must be an absolute URL'))),
  jwks: v.optional(v.object({ keys: v.array(v.record(v.string(), v.unknown())) })),
  algorithms: v.optional(v.pipe(v.array(v.picklist(ASSERTION_ISSUER_ALGORITHMS)), v.minLength(1)), [
    ...DEFAULT_ASSERTION_ALGORITHMS,
  ]),
  accountClaim: v.optional(v.picklist(['email', 'sub']), 'email'),
}

/** One issuer entry: exactly one of `jwksUri` and `jwks`. */
const IssuerSchema = v.pipe(
  strictObject(issuerEntries),
  v.check(
    (entry) => (entry.jwksUri === undefined) !== (entry.jwks === undefined),
    'give exactly one of jwksUri and jwks',
  ),
  v.check(
    (entry) => entry.jwks === undefined || isPublicKeySet(entry.jwks),
    'jwks must hold public signature keys only',
  ),
)

/** Whether an inline set holds public signature keys only (src/clients/jwks.ts refuses any private or symmetric member). */
function isPublicKeySet(jwks: { keys: Array<Record<string, unknown>> }): boolean {
  try {
    return publicSignatureKeys(jwks).length > 0
  } catch {
    return false
  }
}

/** The issuers list: each issuer once. */
const IssuersSchema = v.pipe(
  v.array(IssuerSchema),
  v.check((list) => new Set(list.map((entry) => entry.issuer)).size === list.length, 'an issuer appears twice'),
)

/**
 * The schema entries of this side of `identityAssertion` (the identity provider side adds its own
 * beside them in src/config/schema.ts).
 */
export const IDENTITY_ASSERTION_TRUST_ENTRIES = {
  issuers: v.optional(IssuersSchema),
  findAccount: v.optional(
    v.custom<NonNullable<IdentityAssertionTrustOptions['findAccount']>>(
      (value) => typeof value === 'function',
      'must be a function ({ issuer, sub, email, claims }) => sub | undefined',
    ),
  ),
  refreshTokens: v.optional(v.boolean()),
}

/** The configuration file's entries of this side (data only: no hook). */
export const IDENTITY_ASSERTION_TRUST_FILE_ENTRIES = {
  issuers: v.optional(IssuersSchema),
  refreshTokens: v.optional(v.boolean()),
}

/** An issuer entry as parsed (defaults filled in). */
export type IdentityAssertionIssuerConfig = v.InferOutput<typeof IssuerSchema>

/**
 * Construction-time check: an issuer mapping users by `email` needs a directory that can find an
 * account by email. The built-in users can; a host `accounts` provider looks up by `sub` only, so
 * it needs the `findAccount` hook. Returns the message of the problem, or undefined.
 */
export function identityAssertionProblem(config: {
  accounts?: unknown
  identityAssertion?: { issuers?: IdentityAssertionIssuerConfig[] | undefined; findAccount?: unknown } | undefined
}): string | undefined {
  const options = config.identityAssertion
  if (!options?.issuers?.length || options.findAccount !== undefined || config.accounts === undefined) return undefined
  const byEmail = options.issuers.find((entry) => entry.accountClaim === 'email')
  if (byEmail === undefined) return undefined
  return (
    `identityAssertion.issuers: ${JSON.stringify(byEmail.issuer)} maps users by email, which the host's accounts ` +
    "provider cannot look up: set identityAssertion.findAccount, or accountClaim: 'sub'"
  )
}
