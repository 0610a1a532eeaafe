/**
 * @module config/schema
 * The valibot schemas of the options of `createTokenService` (and of the parts a configuration
 * file holds too): what each option accepts. Defaults come from src/defaults.ts; the
 * written-out public types are in src/config/options.ts, and src/config/parse.ts parses and checks the two agree.
 */
import { type DpopVerifier, type JwsSigner, SIGNING_ALGS } from '../crypto/index.ts'
import type { AccountProvider, Logger, SigningAlgorithm } from './options.ts'
import { BackchannelLogoutSchema } from './backchannel_logout.ts'
import { AuthorizationDetailsSchema, AuthorizationDetailsTypesSchema } from './authorization_details.ts'
import { CibaSchema } from './ciba.ts'
import * as v from 'valibot'
import { OPTION_DEFAULTS } from '../defaults.ts'
import type { EventHook, MetricsHook } from '../events/index.ts'
import type { InteractionHook } from './interaction_hook.ts'
import { HealthSchema } from './health.ts'
import { GrantsPageSchema } from './grants_page.ts'
import { ThemeSchema } from '../pages/index.ts'
import { UserSchema } from '../accounts/index.ts'
import { strictObject } from '../schema_issues.ts'
import type { Limiter, OutboundFetch, SecretDigest } from '../security/index.ts'
import { SCHEME_NAME, isForbiddenScheme } from '../clients/index.ts'
import type { Store } from '../storage/index.ts'
import { TokenExchangeSchema } from './token_exchange.ts'
import { IDENTITY_ASSERTION_TRUST_ENTRIES } from './identity_assertion.ts'
import { identityAssertionIdpEntries } from './identity_assertion_audiences.ts'
import { throttleSettings } from './throttle.ts'

const { limits, dynamicClientRegistration: dcr } = OPTION_DEFAULTS

export { UserSchema }

/** Access-token signing algorithms we can generate keys for. */
export { SIGNING_ALGS }
/** The signing algorithms (src/config/options.ts's `SigningAlgorithm`, which SIGNING_ALGS lists). */
export type SigningAlg = SigningAlgorithm

/** What ID tokens carry besides `sub` and the protocol claims (option `idTokenClaims`). */
export const ID_TOKEN_CLAIMS = ['scopes', 'minimal'] as const
export type IdTokenClaims = (typeof ID_TOKEN_CLAIMS)[number]

const ttl = (fallback: number) =>
  v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(31_536_000 * 10)), fallback)
const name = v.pipe(v.string(), v.regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be a scope token (RFC 6749 §3.3)'))

/** A scope the service knows. API scopes put their audience into access tokens. */
export const ScopeSchema = v.union([
  name,
  strictObject({
    name,
    /** `aud` of access tokens carrying this scope; default: the scope name. */
    audience: v.optional(v.pipe(v.string(), v.minLength(1))),
    /** Claims this scope releases at userinfo (identity scopes). */
    claims: v.optional(v.array(v.string())),
  }),
])

const count = (fallback: number) => v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1)), fallback)
/**
 * Extra private-use schemes self-registered clients may use in redirect URIs (option
 * `redirectSchemes` of dynamic registration and of metadata documents): lower-case scheme names
 * (RFC 3986 §3.1), never an operating-system or browser handler (src/clients/self_registered_redirects.ts).
 */
const redirectSchemes = v.optional(
  v.pipe(
    v.array(
      v.pipe(
        v.string(),
        v.regex(SCHEME_NAME, 'must be a lower-case URI scheme name (RFC 3986 §3.1), without the colon'),
        v.check(
          (scheme) => !isForbiddenScheme(scheme),
          (issue) =>
            `${JSON.stringify(issue.input)} cannot be a redirect scheme (http and https follow their own rule; ` +
            'javascript, data, file, ms-*, search-ms, intent and other operating-system or browser handlers are never allowed)',
        ),
      ),
    ),
    v.maxLength(20),
  ),
)

/** Client ID Metadata Document settings that a configuration file can hold too (all but `fetch`). */
export const clientIdMetadataDocumentSettings = {
  /** Scopes such clients may be granted (a document's `scope` narrows them). */
  scopes: v.pipe(v.array(name), v.maxLength(100)),
  /** Fetch documents from private, loopback, link-local and unique-local addresses too. Default false. */
  allowPrivateNetworks: v.optional(v.boolean(), OPTION_DEFAULTS.clientIdMetadataDocuments.allowPrivateNetworks),
  /** Seconds a document fetch may take, at most 5. Default 5. */
  timeout: v.optional(
    v.pipe(v.number(), v.minValue(0.01), v.maxValue(5)),
    OPTION_DEFAULTS.clientIdMetadataDocuments.timeout,
  ),
  /** Document fetches per throttle window (known per host, unknown per host, unknown per address). Defaults 60, 30, 20. */
  fetchLimits: v.optional(
    v.strictObject({
      perHost: count(OPTION_DEFAULTS.clientIdMetadataDocuments.fetchLimits.perHost),
      unknownPerHost: count(OPTION_DEFAULTS.clientIdMetadataDocuments.fetchLimits.unknownPerHost),
      unknownPerAddress: count(OPTION_DEFAULTS.clientIdMetadataDocuments.fetchLimits.unknownPerAddress),
    }),
    {},
  ),
  /** Extra private-use schemes a document's redirect URIs may use, e.g. `cursor`. Default none. */
  redirectSchemes,
}

/** Grant types a dynamically registered client can get. */
export const DYNAMIC_GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:openid:params:grant-type:ciba',
] as const

/** The `dynamicClientRegistration` option (see `DynamicClientRegistrationOptions` in src/config/options.ts). */
export const DynamicClientRegistrationSchema = strictObject({
  /** The scopes a registered client may get; a client's `scope` is cut to these (all of them when it sends none). */
  scopes: v.pipe(v.array(name), v.minLength(1), v.maxLength(100)),
  /** A bearer token registration requires (`Authorization: Bearer …`). Absent: open registration. */
  initialAccessToken: v.optional(
    v.pipe(v.string(), v.regex(/^[A-Za-z0-9\-._~+/]+=*$/, 'must be a bearer token (RFC 6750 §2.1 characters)')),
  ),
  /** The grant types a registered client may get. Default `authorization_code` and `refresh_token`. */
  grantTypes: v.optional(v.pipe(v.array(v.picklist(DYNAMIC_GRANT_TYPES)), v.minLength(1)), [...dcr.grantTypes]),
  /** Registration requests one source address may make per hour (when the host passes it). Default 20. */
  maxPerAddressPerHour: count(dcr.maxPerAddressPerHour),
  /** Registration requests from all addresses together per hour. Default 1000. */
  maxPerHour: count(dcr.maxPerHour),
  /**
   * Dynamic clients unused (no token request) for this many seconds are deleted, checked at most
   * once an hour after a registration (`service.clients.pruneDynamic()` does it on demand).
   * Default 30 days; `false` never deletes them automatically.
   */
  pruneUnusedAfter: v.optional(
    v.union([v.literal(false), v.pipe(v.number(), v.safeInteger(), v.minValue(86_400))]),
    dcr.pruneUnusedAfter,
  ),
  /** Extra private-use schemes a registered client's redirect URIs may use, e.g. `cursor`. Default none. */
  redirectSchemes,
})

const METRICS_METHODS = ['request', 'tokenIssued', 'clientAuthenticationFailed', 'throttled', 'storeError'] as const

const fn = <T>(message: string) => v.custom<T>((value) => typeof value === 'function', message)
const obj = <T>(message: string) => v.custom<T>((value) => typeof value === 'object' && value !== null, message)

/** Options of `createTokenService`. */
export const OptionsSchema = strictObject({
  /** The issuer identifier, used byte for byte (no trailing slash is added or removed). */
  issuer: v.pipe(
    v.string(),
    v.url('must be an absolute URL'),
    v.check((value) => /^https?:\/\//.test(value), 'must be an http or https URL'),
    v.check((value) => !value.includes('?') && !value.includes('#'), 'must have no query or fragment'),
  ),
  /** The store; default a new in-memory store. */
  store: v.optional(obj<Store>('must be a Store object')),
  /** Access token lifetime, seconds. Default 3600. */
  accessTokenTtl: ttl(OPTION_DEFAULTS.accessTokenTtl),
  /** Authorization code lifetime, seconds. Default 300. */
  authorizationCodeTtl: ttl(OPTION_DEFAULTS.authorizationCodeTtl),
  /** ID token lifetime, seconds. Default 3600. */
  idTokenTtl: ttl(OPTION_DEFAULTS.idTokenTtl),
  /** Lifetime of each refresh token generation (idle timeout), seconds. Default 14 days. */
  refreshTokenTtl: ttl(OPTION_DEFAULTS.refreshTokenTtl),
  /** Absolute lifetime of a refresh token family, seconds. Default 90 days. */
  refreshTokenFamilyTtl: ttl(OPTION_DEFAULTS.refreshTokenFamilyTtl),
  /** Browser session lifetime, seconds. Default 14 days. */
  sessionTtl: ttl(OPTION_DEFAULTS.sessionTtl),
  /** How long a pending sign-in may take, seconds. Default 900. */
  interactionTtl: ttl(OPTION_DEFAULTS.interactionTtl),
  /** Device code lifetime (RFC 8628), seconds. Default 600. */
  deviceCodeTtl: ttl(OPTION_DEFAULTS.deviceCodeTtl),
  /** Seconds between device polls (RFC 8628 §3.2). Default 5. */
  deviceCodeInterval: ttl(OPTION_DEFAULTS.deviceCodeInterval),
  /** CIBA request lifetime (OpenID CIBA §7.3), seconds. Default 300. */
  cibaTtl: ttl(OPTION_DEFAULTS.cibaTtl),
  /** Seconds between CIBA polls (CIBA §7.3). Default 5. */
  cibaInterval: ttl(OPTION_DEFAULTS.cibaInterval),
  /** Access token signing algorithm. Default ES256. */
  accessTokenSigningAlg: v.optional(v.picklist(SIGNING_ALGS), OPTION_DEFAULTS.accessTokenSigningAlg),
  /** ID token signing algorithm. Default RS256 (OpenID Connect Core §15.1). */
  idTokenSigningAlg: v.optional(v.picklist(SIGNING_ALGS), OPTION_DEFAULTS.idTokenSigningAlg),
  /** Private signing keys as a JWK set (each with `kid` and `alg`); default: generated and kept in the store. */
  keys: v.optional(
    strictObject({
      keys: v.pipe(
        v.array(
          v.looseObject({
            kid: v.pipe(v.string(), v.minLength(1)),
            alg: v.picklist(SIGNING_ALGS),
            kty: v.string(),
            d: v.string(),
          }),
        ),
        v.minLength(1),
      ),
    }),
  ),
  /** Rotate signing keys automatically after this many seconds of use. Default: only on request. */
  keyRotationInterval: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(60))),
  /** Seconds a new signing key is published before it signs (JWKS caches). Default 300. */
  keyPublishAhead: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0)), OPTION_DEFAULTS.keyPublishAhead),
  /** Extra scopes beyond openid, profile, email, offline_access, api1 and the Grant Management scopes. */
  scopes: v.optional(v.array(ScopeSchema), []),
  /** Built-in users for the embedded sign-in page. */
  users: v.optional(v.array(UserSchema), []),
  /** The host's account lookup; default: the built-in users. */
  accounts: v.optional(obj<AccountProvider>('must be an object with findAccount(sub)')),
  /** The host's sign-in hook; default: the built-in sign-in page. */
  interaction: v.optional(fn<InteractionHook>('must be a function')),
  /** Only issue refresh tokens when `offline_access` was granted. Default false. */
  requireOfflineAccess: v.optional(v.boolean(), OPTION_DEFAULTS.requireOfflineAccess),
  /**
   * Which end-user claims ID tokens carry. `scopes` (the default, as Keycloak, Auth0, Google and
   * Okta do): the claims of the granted identity scopes (`profile`, `email`, `address`, `phone`,
   * configured ones) that the account has, the same set userinfo returns for that grant.
   * `minimal`: only `sub` and the protocol claims; the rest is at userinfo (OpenID Connect Core
   * §5.4 allows both).
   */
  idTokenClaims: v.optional(v.picklist(ID_TOKEN_CLAIMS)),
  /** Deprecated: `true` is `idTokenClaims: 'scopes'`, `false` is `'minimal'` (`idTokenClaims` wins). */
  idTokenIncludesClaims: v.optional(v.boolean()),
  /** PBKDF2 iterations for newly hashed secrets and passwords. Default 600,000. */
  secretHashIterations: v.optional(
    v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
    OPTION_DEFAULTS.secretHashIterations,
  ),
  /**
   * The most PBKDF2 iterations this platform computes: Cloudflare Workers refuses more than
   * 100,000 (`WORKERS_PBKDF2_LIMIT`). New hashes use at most this many (it caps
   * `secretHashIterations`); a stored hash above it is not attempted: its verification fails as a
   * wrong secret would, with a `secret_hash_unverifiable` audit reason and a logged warning, never a
   * 500. Default: no limit.
   */
  secretHashMaxIterations: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1))),
  /** How long a verified client secret is remembered (as an HMAC), seconds; 0 disables. Default 300. */
  secretCacheTtl: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0)), OPTION_DEFAULTS.secretCacheTtl),
  /** Codes and refresh tokens (each) this instance keeps of those it wrote; 0 turns it off. Default 10,000. */
  issuedRecordCache: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0)), OPTION_DEFAULTS.issuedRecordCache),
  /**
   * A synchronous keyed hash for the verified-secret cache (see `nodeSecretDigest` in
   * adapters/node.ts). Default: WebCrypto HMAC (asynchronous).
   */
  secretDigest: v.optional(fn<SecretDigest>('must be a function (secret) => string')),
  /**
   * A synchronous SHA-256 for the storage keys of codes, refresh tokens and sessions and for PKCE
   * S256: base64url of the digest of the UTF-8 value (see `nodeSha256` in adapters/node.ts).
   * Default: WebCrypto `digest` (asynchronous: a thread-pool hop on Node).
   */
  sha256: v.optional(fn<(value: string) => string>('must be a function (value) => base64url SHA-256')),
  /**
   * Synchronous JWT signing (see `nodeSigner` in adapters/node.ts): called once per signing key
   * with `{ alg, kid, privateJwk }`, returns `(signingInput) => raw JWS signature` (ECDSA as
   * r || s), or undefined to sign that key with jose. Default: jose (WebCrypto, asynchronous).
   */
  signer: v.optional(fn<JwsSigner>('must be a function ({ alg, kid, privateJwk }) => signature function | undefined')),
  /** The runtime's DPoP proof verification (see `nodeDpopVerifier` in adapters/node.ts). */
  dpopVerifier: v.optional(fn<DpopVerifier>('must be a function ({ alg, jwk }) => verify function | undefined')),
  /** Request limits. */
  limits: v.optional(
    strictObject({
      /** Largest accepted request body in bytes. Default 16 KiB. */
      maxBodyBytes: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(256)), limits.maxBodyBytes),
      /** Longest accepted parameter value in characters. Default 4096 (tokens may be long). */
      maxParameterLength: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(64)), limits.maxParameterLength),
      /**
       * Read a body whose Content-Length is declared (within the limit) in one piece. Only where
       * the HTTP server in front holds bodies to their declared length, as Node's, Bun's and Deno's
       * do (the start scripts set it); a hand-built Request could declare less than it carries.
       * Default false: bodies are read as a stream and counted.
       */
      trustContentLength: v.optional(v.boolean(), limits.trustContentLength),
      /** Most scopes in one request. Default 32. */
      maxScopes: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1)), limits.maxScopes),
    }),
    {},
  ),
  /** Name of the session cookie. Default `gatehouse.session`. */
  cookieName: v.optional(v.pipe(v.string(), v.regex(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/)), OPTION_DEFAULTS.cookieName),
  /** Theme of the built-in pages. */
  theme: v.optional(ThemeSchema, {}),
  /**
   * Throttling of failed client authentications and sign-ins (see `src/security/throttle.ts`): counters per
   * identity + address, per identity and per address, in fixed windows, kept in the store so every
   * instance shares them. `false` turns it off (for a host that throttles in front).
   */
  throttle: v.optional(
    v.union([
      v.literal(false),
      strictObject({
        ...throttleSettings,
        /** A limiter of the host's instead of the store's counters. */
        limiter: v.optional(obj<Limiter>('must be an object with retryAfter() and fail()')),
      }),
    ]),
    {},
  ),
  /**
   * The source address of a request, for throttling, `allowedNetworks` and audit events. Gets the
   * address the adapter saw (the TCP peer). Behind a proxy, derive it from a header the proxy
   * sets, trusting it only from the proxy. Default: the adapter's address.
   */
  clientAddress: v.optional(
    fn<(request: Request, peer: string | undefined) => string | undefined>(
      'must be a function (request, peer) => string | undefined',
    ),
  ),
  /**
   * Dynamic client registration (RFC 7591, RFC 7592): `{ scopes: ['mcp:tools'] }` serves open
   * registration at `/connect/register`. Self-registered clients always see the consent page.
   * Default: off.
   */
  dynamicClientRegistration: v.optional(DynamicClientRegistrationSchema),
  /** Audit events (token issued, refresh reuse detected, sign-in failed, …): see `src/events/emitter.ts`. */
  onEvent: v.optional(fn<EventHook>('must be a function (event) => void')),
  /** Work after the response goes here (Cloudflare Workers' `waitUntil`). Default: it just runs. */
  waitUntil: v.optional(fn<(promise: Promise<unknown>) => void>('must be a function (promise) => void')),
  /** Clock in epoch seconds. Default `Date.now()`. */
  now: v.optional(fn<() => number>('must be a function returning epoch seconds')),
  /** Where warnings and unexpected errors go. Default `console`. */
  logger: v.optional(obj<Logger>('must be an object with warn() and error()')),
  /**
   * Liveness and readiness probes at paths of the host (not below the issuer), each off while its
   * path is absent: `{ livenessPath: '/healthz', readinessPath: '/readyz' }` (see `src/ops/health.ts`).
   */
  health: v.optional(HealthSchema),
  /** The end-user's grants page (#42 item 3): `true` or `{ path?, signInUrl? }`. Default: off. */
  grantsPage: v.optional(GrantsPageSchema),
  /**
   * Where the service reports requests, latencies, issued tokens, failed client authentications,
   * throttling and store errors: `createMetrics()` (Prometheus text) or a hook of the host's.
   */
  metrics: v.optional(
    v.custom<MetricsHook>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        METRICS_METHODS.every((method) => typeof (value as Record<string, unknown>)[method] === 'function'),
      `must be an object with ${METRICS_METHODS.join('(), ')}() (see createMetrics())`,
    ),
  ),
  /**
   * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, as MCP uses them):
   * when present, a `client_id` that is an https URL with a path is a client whose metadata the
   * service fetches from that URL (see `src/clients/metadata_document.ts` for the checks).
   * Advertised as `client_id_metadata_document_supported` in the discovery documents.
   */
  clientIdMetadataDocuments: v.optional(
    strictObject({
      ...clientIdMetadataDocumentSettings,
      /** The fetch used for documents (e.g. one trusting a test CA). Default: the global `fetch`. */
      fetch: v.optional(
        fn<(url: string, init: RequestInit) => Promise<Response>>(
          'must be a function (url, init) => Promise<Response>',
        ),
      ),
    }),
  ),
  /**
   * The runtime's name resolution, `(hostname) => addresses` (`nodeResolveHost` in adapters/node.ts):
   * checked before an unpinned fetch of a self-registered client's host name.
   */
  resolveHost: v.optional(
    fn<(hostname: string) => Promise<string[]>>('must be a function (hostname) => Promise<string[]>'),
  ),
  /** The runtime's fetch that resolves once and connects to the checked address (#39 item 5). */
  outboundFetch: v.optional(fn<OutboundFetch>('must be a function (url, init, allowAddress) => Promise<Response>')),
  /** Self-registered clients' host names may be fetched without `outboundFetch` (rebinding open). */
  allowUnpinnedHostNames: v.optional(v.boolean(), OPTION_DEFAULTS.allowUnpinnedHostNames),
  /** Every authorization request must be pushed first (RFC 9126 §5). */
  requirePushedAuthorizationRequests: v.optional(v.boolean(), OPTION_DEFAULTS.requirePushedAuthorizationRequests),
  /** Seconds a pushed request's request_uri stays usable. */
  parTtl: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1)), OPTION_DEFAULTS.parTtl),
  /** DPoP settings (RFC 9449). */
  dpop: v.optional(strictObject({ requireNonce: v.optional(v.boolean(), OPTION_DEFAULTS.dpop.requireNonce) }), {}),
  /** A security profile applied to every client. */
  profile: v.optional(v.picklist(['fapi2-security'])),
  /** Token exchange (RFC 8693): the host's policy hook `authorize`. */
  tokenExchange: v.optional(TokenExchangeSchema),
  /** Delivery of back-channel logout tokens. */
  backchannelLogout: BackchannelLogoutSchema,
  /** The authorization details types (RFC 9396) the service knows, and the host's hooks per type. */
  authorizationDetailsTypes: AuthorizationDetailsTypesSchema,
  authorizationDetails: AuthorizationDetailsSchema,
  /** Client-Initiated Backchannel Authentication (OpenID CIBA). */
  ciba: CibaSchema,
  /** Identity Assertion JWT Authorization Grants (#45): the identity providers trusted here, and as an IdP the audiences, lifetime and policy hook. */
  identityAssertion: v.optional(
    strictObject({ ...IDENTITY_ASSERTION_TRUST_ENTRIES, ...identityAssertionIdpEntries }),
    {},
  ),
})

/** The options as parsed: every default filled in. */
export type Config = v.InferOutput<typeof OptionsSchema>
