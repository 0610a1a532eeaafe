/**
 * @module config/identity_assertion_audiences
 * The identity provider's side of the `identityAssertion` option (#45,
 * draft-ietf-oauth-identity-assertion-authz-grant): the resource authorization servers this
 * service issues Identity Assertion JWT Authorization Grants (ID-JAGs) for (`audiences`), how long
 * an ID-JAG lives (`lifetime`), and the host's policy hook (`authorize`). The written-out types of
 * the public API and the schema entries, spread into the `identityAssertion` object schema (the
 * resource authorization server's side, `issuers` and `findAccount`, has its own module).
 */
import * as v from 'valibot'
import { isLoopback } from '../security/index.ts'

/**
 * One resource authorization server this identity provider issues ID-JAGs for, to one local
 * client: the entry is that client's (`client`), and names it at the target (`clientId`).
 */
export interface IdentityAssertionAudience {
  /** Its issuer identifier (RFC 8414): the `audience` a client asks for, and the ID-JAG's `aud`. */
  issuer: string
  /**
   * The requesting client here, the only one this entry issues ID-JAGs to (#45 review: another
   * client of the same users never gets an ID-JAG naming `clientId`). Several entries may share an
   * issuer, one per local client.
   */
  client: string
  /** That client's id at that server: the ID-JAG's `client_id`. */
  clientId: string
  /** The scopes (of that server) an ID-JAG for it may carry; one is asked for or all of them are issued. */
  scopes: string[]
  /** The resources (RFC 8707) a client may name there; when listed, `resource` must be one of them. */
  resources?: string[]
}

/** What the `identityAssertion.authorize` hook is asked about: an ID-JAG the configured audiences allow. */
export interface IdentityAssertionRequest {
  /** The end-user (the ID token's and the ID-JAG's `sub`). */
  sub: string
  /** The requesting client here. */
  clientId: string
  /** The target authorization server's issuer (the ID-JAG's `aud`). */
  audience: string
  /** The scopes the ID-JAG would carry. */
  scopes: string[]
  /** The resource the client named, when it named one. */
  resource?: string
}

/**
 * The hook's answer: `true` (or nothing) allows the ID-JAG as asked; `false` refuses it
 * (`access_denied`); `{ scopes }` allows it with only those of the proposed scopes (none left is
 * `invalid_scope`).
 */
export type IdentityAssertionDecision = boolean | undefined | { scopes?: string[] }

/** The identity provider's settings of the `identityAssertion` option. */
export interface IdentityAssertionIdpOptions {
  /**
   * The resource authorization servers this service issues ID-JAGs for (token exchange with
   * `requested_token_type=urn:ietf:params:oauth:token-type:id-jag`), each to one local client; one
   * entry per (issuer, client). Default: none (no ID-JAG is issued: every audience is
   * `invalid_target`, as is one without an entry for the requesting client).
   */
  audiences?: IdentityAssertionAudience[]
  /** Seconds an ID-JAG lives (`expires_in`; never past the ID token it was exchanged for). Default 300. */
  lifetime?: number
  /**
   * The enterprise's policy: which users and clients may reach which targets, called for every
   * ID-JAG after the built-in checks. Default: the audiences list alone. A throwing hook fails the
   * request (500 `server_error`).
   */
  authorize?: (request: IdentityAssertionRequest) => IdentityAssertionDecision | Promise<IdentityAssertionDecision>
}

/** The ID-JAG lifetime when none is configured (seconds). */
export const DEFAULT_ID_JAG_LIFETIME = 300

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** An issuer identifier: https, or http on a loopback host (a local deployment), no query or fragment. */
function isIssuer(value: string): boolean {
  if (!URL.canParse(value)) return false
  const url = new URL(value)
  const scheme = url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))
  return scheme && url.search === '' && url.hash === ''
}

/** RFC 8707 §2: an absolute URI without a fragment. */
export function isResourceIndicator(value: string): boolean {
  if (!URL.canParse(value)) return false
  return !value.includes('#')
}

const nonEmpty = v.pipe(v.string(), v.minLength(1), v.maxLength(2048))

const AudienceSchema = v.strictObject({
  issuer: v.pipe(
    v.string(),
    v.url('must be an absolute URL'),
    v.maxLength(2048),
    v.check(isIssuer, 'must be an issuer identifier: https (http only on a loopback host), no query or fragment'),
  ),
  client: v.pipe(nonEmpty, v.maxLength(255)),
  clientId: v.pipe(nonEmpty, v.maxLength(255)),
  scopes: v.pipe(
    v.array(v.pipe(v.string(), v.regex(SCOPE_TOKEN, 'must be a scope token (RFC 6749 §3.3)'))),
    v.minLength(1, 'must list at least one scope'),
  ),
  resources: v.optional(
    v.array(v.pipe(nonEmpty, v.check(isResourceIndicator, 'must be an absolute URI without a fragment'))),
  ),
})

/** The audiences list: each (issuer, client) pair once. */
const AudiencesSchema = v.pipe(
  v.array(AudienceSchema),
  v.check(
    (list) => new Set(list.map((audience) => JSON.stringify([audience.issuer, audience.client]))).size === list.length,
    'each (issuer, client) pair may appear once',
  ),
)

const LifetimeSchema = v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(3600))

/** The data entries (a configuration file holds these too). */
export const identityAssertionIdpFileEntries = {
  audiences: v.optional(AudiencesSchema, []),
  lifetime: v.optional(LifetimeSchema, DEFAULT_ID_JAG_LIFETIME),
}

/** The entries of the identity provider's side of the `identityAssertion` option's schema. */
export const identityAssertionIdpEntries = {
  ...identityAssertionIdpFileEntries,
  authorize: v.optional(
    v.custom<NonNullable<IdentityAssertionIdpOptions['authorize']>>(
      (value) => typeof value === 'function',
      'must be a function (request) => boolean | { scopes }',
    ),
  ),
}
