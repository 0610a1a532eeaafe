/**
 * @module clients/registration
 * A client registration as the host passes it (`service.clients.ensure`, the configuration file's
 * `clients`), validated with valibot: redirect URIs absolute without a fragment (RFC 6749 §3.1.2),
 * https unless on a loopback host (RFC 9700 §2.6), known permissions, CIDR source networks.
 */
import * as v from 'valibot'
import { REGISTRATION_DEFAULTS } from '../defaults.ts'
import { isCidr, isLoopback } from '../security/index.ts'
import { SIGNING_ALGS, type SigningAlgorithm } from '../crypto/index.ts'
import type { PublicJwkSet, TokenEndpointAuthMethod } from '../storage/index.ts'
import { FIXED_PERMISSIONS, Permissions, unknownPermissionMessage } from './permissions.ts'
import { formatIssues, strictObject, withoutInputs } from '../schema_issues.ts'

/** JWK members that only a private (or symmetric) key has. */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']

/** A public JWK set (RFC 7517 §5): keys with a `kty` and no private members. */
export const PublicJwkSetSchema = strictObject({
  keys: v.pipe(
    v.array(
      v.pipe(
        v.looseObject({ kty: v.picklist(['RSA', 'EC', 'OKP']) }),
        v.check(
          (key) => PRIVATE_JWK_MEMBERS.every((member) => !(member in key)),
          'must be a public key (no private members)',
        ),
      ),
    ),
    v.minLength(1),
    v.maxLength(100),
  ),
})

const optionalTtl = v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1)))

/** An absolute URI with no fragment (RFC 6749 §3.1.2). */
const redirectUri = v.pipe(
  v.string(),
  v.url('must be an absolute URL'),
  v.check((value) => !value.includes('#'), 'must not contain a fragment'),
)

/** A client registration as the host application passes it. */
export const ClientRegistrationSchema = strictObject({
  /** Unique client identifier. */
  clientId: v.pipe(v.string(), v.minLength(1), v.maxLength(255), v.regex(/^[\x20-\x7e]+$/, 'must be printable ASCII')),
  /** Plain-text secret, hashed before it is stored; absent for a public client. */
  clientSecret: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(1024))),
  /** Human-readable name. */
  displayName: v.optional(v.pipe(v.string(), v.maxLength(200))),
  /** Permission strings: fixed ones (`ept:token`, …) or `scp:` + scope name. */
  permissions: v.pipe(
    v.array(
      v.pipe(
        v.string(),
        v.check(
          (p) => FIXED_PERMISSIONS.includes(p) || /^scp:[\x21\x23-\x5b\x5d-\x7e]+$/.test(p),
          (issue) => unknownPermissionMessage(String(issue.input)),
        ),
      ),
    ),
    v.transform((list) => [...new Set(list)]),
  ),
  redirectUris: v.optional(v.array(redirectUri), []),
  postLogoutRedirectUris: v.optional(v.array(redirectUri), []),
  /** `explicit` shows a consent page; default `implicit`. */
  consentType: v.optional(v.picklist(['implicit', 'explicit']), REGISTRATION_DEFAULTS.consentType),
  /** Let this client use PKCE `plain`. Default false. */
  allowPlainPkce: v.optional(v.boolean(), REGISTRATION_DEFAULTS.allowPlainPkce),
  /** Require PKCE from this confidential client too. Default false (public clients always must). */
  requirePkce: v.optional(v.boolean(), REGISTRATION_DEFAULTS.requirePkce),
  /**
   * Source networks (CIDR, IPv4 or IPv6, e.g. `10.0.0.0/8`, `fd00::/8`, or a single address) the
   * client may authenticate from. Absent: anywhere. Requests from elsewhere fail as `invalid_client`.
   */
  allowedNetworks: v.optional(
    v.pipe(
      v.array(v.pipe(v.string(), v.check(isCidr, 'must be an IPv4 or IPv6 address or CIDR range'))),
      v.maxLength(100),
    ),
  ),
  /** The one way the client authenticates; absent: its secret (basic or post), or `none` without one. */
  tokenEndpointAuthMethod: v.optional(
    v.picklist(['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none']),
  ),
  /** The client's public keys for private_key_jwt. */
  jwks: v.optional(PublicJwkSetSchema),
  /** URL of the client's public JWK set (https, or http on a loopback host). */
  jwksUri: v.optional(v.pipe(v.string(), v.url('must be an absolute URL'), v.maxLength(2048))),
  /** Authorization requests must be pushed first (RFC 9126). */
  requirePushedAuthorizationRequests: v.optional(v.boolean()),
  /** Access tokens must be DPoP-bound (RFC 9449). */
  requireDpop: v.optional(v.boolean()),
  /** The alg of the client's ID tokens. */
  idTokenSignedResponseAlg: v.optional(v.picklist(SIGNING_ALGS)),
  /** Back-Channel Logout 1.0 §2.2: where logout tokens go (https, or http on a loopback host; no fragment). */
  backchannelLogoutUri: v.optional(v.pipe(redirectUri, v.maxLength(2048))),
  /** The logout token must carry `sid`. */
  backchannelLogoutSessionRequired: v.optional(v.boolean()),
  /** The authorization details types (RFC 9396) the client may request, among the service's. */
  authorizationDetailsTypes: v.optional(
    v.pipe(
      v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
      v.maxLength(100),
      v.transform((list) => [...new Set(list)]),
    ),
  ),
  /** OpenID CIBA §4: poll or ping. */
  backchannelTokenDeliveryMode: v.optional(v.picklist(['poll', 'ping'])),
  /** OpenID CIBA §4: where pings go (https, or http on a loopback host; no fragment). */
  backchannelClientNotificationEndpoint: v.optional(v.pipe(redirectUri, v.maxLength(2048))),
  /** Per-client lifetimes in seconds overriding the service defaults. */
  lifetimes: v.optional(
    strictObject({
      accessToken: optionalTtl,
      authorizationCode: optionalTtl,
      idToken: optionalTtl,
      refreshToken: optionalTtl,
    }),
    {},
  ),
})
export type ParsedClientRegistration = v.InferOutput<typeof ClientRegistrationSchema>

/** Validates one client registration; throws a TypeError naming every bad field. */
export function parseClientRegistration(input: unknown): ParsedClientRegistration {
  const result = v.safeParse(ClientRegistrationSchema, input)
  if (!result.success) {
    throw new TypeError(`invalid client registration\n${formatIssues(result.issues)}`, {
      cause: withoutInputs(result.issues),
    })
  }
  const reg = result.output
  // RFC 9700 §2.6 / RFC 6749 §3.1.2.1: plain http only for loopback redirect URIs.
  for (const uri of [...reg.redirectUris, ...reg.postLogoutRedirectUris]) {
    const url = new URL(uri)
    if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
      throw new TypeError(
        `invalid client registration\nredirectUris: ${uri} must use https (http only for loopback hosts)`,
      )
    }
  }
  checkAuthentication(reg)
  return reg
}

/** The authentication method agrees with the secret and keys: each method has what it needs. */
function checkAuthentication(reg: ParsedClientRegistration): void {
  const bad = (message: string): never => {
    throw new TypeError(`invalid client registration\n${message}`)
  }
  const method = reg.tokenEndpointAuthMethod
  if (method === 'private_key_jwt') {
    if ((reg.jwks === undefined) === (reg.jwksUri === undefined))
      bad('tokenEndpointAuthMethod: private_key_jwt needs exactly one of jwks and jwksUri')
    if (reg.clientSecret !== undefined) bad('clientSecret: a private_key_jwt client has no secret')
  } else if (method === 'none' && reg.clientSecret !== undefined) {
    bad('clientSecret: a client with tokenEndpointAuthMethod none has no secret')
  } else if ((method === 'client_secret_basic' || method === 'client_secret_post') && reg.clientSecret === undefined) {
    bad(`clientSecret: ${method} needs a secret`)
  }
  for (const [field, uri] of [
    ['jwksUri', reg.jwksUri],
    ['backchannelLogoutUri', reg.backchannelLogoutUri],
    ['backchannelClientNotificationEndpoint', reg.backchannelClientNotificationEndpoint],
  ] as const) {
    if (uri === undefined) continue
    const url = new URL(uri)
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname)))
      bad(`${field}: ${uri} must use https (http only for loopback hosts)`)
  }
  const confidential = reg.clientSecret !== undefined || method === 'private_key_jwt'
  if (reg.permissions.includes(Permissions.GrantTypes.ClientCredentials) && !confidential) {
    bad('clientSecret: a public client cannot use client_credentials')
  }
  if (reg.permissions.includes(Permissions.GrantTypes.TokenExchange) && !confidential) {
    bad('clientSecret: a public client cannot use token exchange')
  }
  // OpenID CIBA §4: confidential clients only; a ping client names where the pings go.
  if (reg.permissions.includes(Permissions.GrantTypes.Ciba) && !confidential) {
    bad('clientSecret: a public client cannot use CIBA')
  }
  if (reg.backchannelTokenDeliveryMode === 'ping' && reg.backchannelClientNotificationEndpoint === undefined) {
    bad('backchannelClientNotificationEndpoint: ping mode needs a notification endpoint')
  }
}

/** A client as the host registers it (`service.clients.ensure`, the configuration file's `clients`). */
export interface ClientRegistration {
  /** Unique client identifier. */
  clientId: string
  /** Plain-text secret, hashed before it is stored; absent for a public client. */
  clientSecret?: string
  /** Human-readable name. */
  displayName?: string
  /** Permission strings: fixed ones (`ept:token`, …) or `scp:` + scope name. */
  permissions: string[]
  redirectUris?: string[]
  postLogoutRedirectUris?: string[]
  /** `explicit` shows a consent page; default `implicit`. */
  consentType?: 'implicit' | 'explicit'
  /** Let this client use PKCE `plain`. Default false. */
  allowPlainPkce?: boolean
  /** Require PKCE from this confidential client too. Default false (public clients always must). */
  requirePkce?: boolean
  /**
   * Source networks (CIDR, IPv4 or IPv6, e.g. `10.0.0.0/8`, `fd00::/8`, or a single address) the
   * client may authenticate from. Absent: anywhere. Requests from elsewhere fail as `invalid_client`.
   */
  allowedNetworks?: string[]
  /** Per-client lifetimes in seconds overriding the service defaults. */
  lifetimes?: { accessToken?: number; authorizationCode?: number; idToken?: number; refreshToken?: number }
  /**
   * The one way the client authenticates (RFC 7591 `token_endpoint_auth_method`). Absent: with its
   * secret, basic or post, or `none` without one. `private_key_jwt` needs `jwks` or `jwksUri`.
   */
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod
  /** The client's public keys for `private_key_jwt` (a JWK set without private members). */
  jwks?: PublicJwkSet
  /** URL of the client's public JWK set for `private_key_jwt` (https, or http on a loopback host). */
  jwksUri?: string
  /** Authorization requests must be pushed first (RFC 9126). Default false. */
  requirePushedAuthorizationRequests?: boolean
  /** Access tokens must be DPoP-bound (RFC 9449). Default false. */
  requireDpop?: boolean
  /** The alg of this client's ID tokens: one the service signs with (discovery lists them). */
  idTokenSignedResponseAlg?: SigningAlgorithm
  /**
   * Where the service POSTs a logout token when a session the client took part in ends (OpenID
   * Connect Back-Channel Logout 1.0): https, or http on a loopback host.
   */
  backchannelLogoutUri?: string
  /** The logout token must carry `sid` (it always does). Default false. */
  backchannelLogoutSessionRequired?: boolean
  /**
   * The authorization details types (RFC 9396 §10 `authorization_details_types`) the client may
   * request; each must also be one of the service's `authorizationDetailsTypes`. Default none.
   */
  authorizationDetailsTypes?: string[]
  /** How CIBA results reach the client (OpenID CIBA §4): `poll` (the default) or `ping`. */
  backchannelTokenDeliveryMode?: 'poll' | 'ping'
  /** Where a ping-mode CIBA client is notified: https, or http on a loopback host. Required with `ping`. */
  backchannelClientNotificationEndpoint?: string
}
