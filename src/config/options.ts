/**
 * @module config/options
 * The option and registration types of the public API, written out (JSR's "no slow types": a
 * public type may not be inferred from a valibot schema). src/config/parse.ts validates them with its
 * schemas and checks, at compile time, that each schema's input is exactly the type here.
 */
import type { EventHook, Logger, MetricsHook } from '../events/index.ts'
import type { InteractionHook } from './interaction_hook.ts'
import type { Limiter, OutboundFetch, SecretDigest } from '../security/index.ts'
import type { PublicJwkSet, Store, TokenEndpointAuthMethod } from '../storage/index.ts'
import type { DpopVerifier, JwsSigner, SigningAlgorithm } from '../crypto/index.ts'
import type { AccountProvider, AccountRequest, AddressClaim, UserConfig } from '../accounts/index.ts'
import type { Theme } from '../pages/index.ts'
import type { TokenExchangeOptions } from './token_exchange.ts'
import type { IdentityAssertionOptions } from './identity_assertion.ts'
import type { BackchannelLogoutOptions } from './backchannel_logout.ts'
import type { AuthorizationDetailsOptions } from './authorization_details.ts'
import type { CibaOptions } from './ciba.ts'
import type { ClientRegistration } from '../clients/index.ts'

export type {
  IdentityAssertionOptions,
  AccountProvider,
  AccountRequest,
  AddressClaim,
  BackchannelLogoutOptions,
  ClientRegistration,
  Logger,
  PublicJwkSet,
  SigningAlgorithm,
  Theme,
  TokenEndpointAuthMethod,
  UserConfig,
}

/** A scope beyond the built-in ones: its name, or its name with the API audience and claims it releases. */
export type ScopeConfig = string | { name: string; audience?: string; claims?: string[] }

/** Limits on failed attempts per window (client authentication or sign-in). */
export interface AttemptLimitOptions {
  /** Failures of one client id / username from one address. */
  perIdentityAndAddress?: number
  /** Failures of one client id / username from anywhere. */
  perIdentity?: number
  /** Failures from one address, whatever the identity. */
  perAddress?: number
}

/**
 * Limits on wrong user codes at the verification page per throttle window (RFC 8628 §5.1). A
 * request without a source address counts in `overall` only.
 */
export interface UserCodeLimitOptions {
  /** Wrong codes from one address (an IPv4 address, an IPv6 /64). Default 20. */
  perAddress?: number
  /** Wrong codes from one network (an IPv4 /24, an IPv6 /48). Default 100. */
  perNetwork?: number
  /** Wrong codes from everywhere together. Default 1000. */
  overall?: number
}

/**
 * Limits on the device authorizations started at /connect/device per throttle window (RFC 8628
 * §5.2), counted once the request is otherwise valid; beyond either, 429 `invalid_request` with
 * Retry-After, and the refused request does not count.
 */
export interface DeviceAuthorizationLimitOptions {
  /** Started from one address (an IPv4 address, an IPv6 /64). Default 30. */
  perAddress?: number
  /**
   * Started by one client from everywhere. Also the cap on its pending device authorizations: as
   * each lives `deviceCodeTtl`, at most this many times (1 + ⌈deviceCodeTtl / window⌉) are
   * pending at once. Default 1000.
   */
  perClient?: number
}

/** Liveness and readiness probes of an embedding host. */
export interface HealthOptions {
  /** Path of the liveness probe, e.g. `/healthz`; matched on the whole request path, not below the issuer. */
  livenessPath?: string
  /** Path of the readiness probe, e.g. `/readyz`; matched on the whole request path, not below the issuer. */
  readinessPath?: string
  /** Seconds each readiness check may take before it counts as failed. Default 2. */
  readinessTimeout?: number
}

/** The end-user's grants page (#42 item 3): the `grantsPage` option's object form. */
export interface GrantsPageOptions {
  /** Path below the issuer, e.g. `/account/apps` (the default); not `/connect` or `/.well-known` or below them. */
  path?: string
  /** Where the page's "Sign in" link goes when the browser has no session (the host's sign-in). Default: no link. */
  signInUrl?: string
}

/**
 * Dynamic client registration (RFC 7591, RFC 7592): the `dynamicClientRegistration` option. While
 * present, `POST {issuer}/connect/register` is served and advertised as `registration_endpoint`.
 */
export interface DynamicClientRegistrationOptions {
  /** The scopes a registered client may get; a client's `scope` is cut to these (all of them when it sends none). */
  scopes: string[]
  /** A bearer token registration requires (`Authorization: Bearer …`). Absent: open registration. */
  initialAccessToken?: string
  /**
   * The grant types a registered client may get. Default `authorization_code` and `refresh_token`.
   * With `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628, #29) a client that registers it
   * (a CLI, public or not) gets the device authorization endpoint too; its approvals are always
   * confirmed on a page naming it as self-registered. With `urn:openid:params:grant-type:ciba`
   * (OpenID CIBA, #41) a confidential client that registers it gets the backchannel authentication
   * endpoint; `backchannel_token_delivery_mode` and `backchannel_client_notification_endpoint`
   * (https on a public host) are taken from its metadata.
   */
  grantTypes?: Array<
    | 'authorization_code'
    | 'refresh_token'
    | 'client_credentials'
    | 'urn:ietf:params:oauth:grant-type:device_code'
    | 'urn:openid:params:grant-type:ciba'
  >
  /**
   * Registration requests one source address may make per hour. Default 20. Applies only when the
   * host passes the address (the adapters do; `clientAddress` behind a proxy).
   */
  maxPerAddressPerHour?: number
  /** Registration requests from all addresses together per hour (with or without an address). Default 1000. */
  maxPerHour?: number
  /**
   * Dynamic clients unused (no token request) for this many seconds are deleted, checked at most
   * once an hour after a registration (`service.clients.pruneDynamic()` does it on demand).
   * Default 30 days; `false` never deletes them automatically.
   */
  pruneUnusedAfter?: number | false
  /**
   * Extra private-use URI schemes (RFC 8252 §7.1) such clients may use in redirect URIs, lower
   * case, e.g. `['cursor']` for Cursor's `cursor://…` callbacks. Without it only https, loopback
   * http and schemes in reverse domain name form (`com.example.app`) are accepted. Schemes that
   * are operating-system or browser handlers (`javascript`, `file`, `ms-*`, `search-ms`, `intent`,
   * …) are refused at construction even when listed.
   */
  redirectSchemes?: string[]
}

/** Options of `createTokenService`. */
export interface TokenServiceOptions {
  /** The issuer identifier, used byte for byte (no trailing slash is added or removed). */
  issuer: string
  /** The store; default a new in-memory store. */
  store?: Store
  /** Access token lifetime, seconds. Default 3600. */
  accessTokenTtl?: number
  /** Authorization code lifetime, seconds. Default 300. */
  authorizationCodeTtl?: number
  /** ID token lifetime, seconds. Default 3600. */
  idTokenTtl?: number
  /** Lifetime of each refresh token generation (idle timeout), seconds. Default 14 days. */
  refreshTokenTtl?: number
  /** Absolute lifetime of a refresh token family, seconds. Default 90 days. */
  refreshTokenFamilyTtl?: number
  /** Browser session lifetime, seconds. Default 14 days. */
  sessionTtl?: number
  /** How long a pending sign-in may take, seconds. Default 900. */
  interactionTtl?: number
  /** Device code lifetime (RFC 8628 §3.2 `expires_in`), seconds. Default 600. */
  deviceCodeTtl?: number
  /** Seconds a device must wait between polls (RFC 8628 §3.2 `interval`). Default 5. */
  deviceCodeInterval?: number
  /** CIBA request lifetime (OpenID CIBA §7.3 `expires_in`), seconds; a shorter `requested_expiry` wins. Default 300. */
  cibaTtl?: number
  /** Seconds a CIBA client must wait between polls (CIBA §7.3 `interval`). Default 5. */
  cibaInterval?: number
  /** Access token signing algorithm. Default ES256. */
  accessTokenSigningAlg?: SigningAlgorithm
  /** ID token signing algorithm. Default RS256 (OpenID Connect Core §15.1). */
  idTokenSigningAlg?: SigningAlgorithm
  /** Private signing keys as a JWK set (each with `kid` and `alg`); default: generated and kept in the store. */
  keys?: { keys: Array<{ kid: string; alg: SigningAlgorithm; kty: string; d: string; [member: string]: unknown }> }
  /** Rotate signing keys automatically after this many seconds of use. Default: only on request. */
  keyRotationInterval?: number
  /** Seconds a new signing key is published before it signs (JWKS caches). Default 300. */
  keyPublishAhead?: number
  /** Extra scopes beyond openid, profile, email, offline_access, api1 and the Grant Management scopes. */
  scopes?: ScopeConfig[]
  /** Built-in users for the embedded sign-in page. */
  users?: UserConfig[]
  /** The host's account lookup; default: the built-in users. */
  accounts?: AccountProvider
  /** The host's sign-in hook; default: the built-in sign-in page. */
  interaction?: InteractionHook
  /** Only issue refresh tokens when `offline_access` was granted. Default false. */
  requireOfflineAccess?: boolean
  /**
   * Which end-user claims ID tokens carry. `scopes` (the default, as Keycloak, Auth0, Google and
   * Okta do): the claims of the granted identity scopes (`profile`, `email`, `address`, `phone`,
   * configured ones) that the account has, the same set userinfo returns for that grant.
   * `minimal`: only `sub` and the protocol claims; the rest is at userinfo (OpenID Connect Core
   * §5.4 allows both).
   */
  idTokenClaims?: 'scopes' | 'minimal'
  /** Deprecated: `true` is `idTokenClaims: 'scopes'`, `false` is `'minimal'` (`idTokenClaims` wins). */
  idTokenIncludesClaims?: boolean
  /** PBKDF2 iterations for newly hashed secrets and passwords. Default 600,000. */
  secretHashIterations?: number
  /**
   * The most PBKDF2 iterations this platform computes: Cloudflare Workers refuses more than
   * 100,000 (`WORKERS_PBKDF2_LIMIT`). New hashes use at most this many (it caps
   * `secretHashIterations`); a stored hash above it is not attempted: its verification fails as a
   * wrong secret would, with a `secret_hash_unverifiable` audit reason and a logged warning, never a
   * 500. Default: no limit.
   */
  secretHashMaxIterations?: number
  /** How long a verified client secret is remembered (as an HMAC), seconds; 0 disables. Default 300. */
  secretCacheTtl?: number
  /** Codes and refresh tokens (each) kept of those this instance wrote, redeemed without a store read. Default 10,000. */
  issuedRecordCache?: number
  /** A synchronous keyed hash for the verified-secret cache (`nodeSecretDigest`). Default: WebCrypto HMAC (async). */
  secretDigest?: SecretDigest
  /**
   * A synchronous SHA-256 for the storage keys of codes, refresh tokens and sessions and for PKCE
   * S256: base64url of the digest of the UTF-8 value (see `nodeSha256` in adapters/node.ts).
   * Default: WebCrypto `digest` (asynchronous: a thread-pool hop on Node).
   */
  sha256?: (value: string) => string
  /**
   * Synchronous JWT signing (see `nodeSigner` in adapters/node.ts): called once per signing key
   * with `{ alg, kid, privateJwk }`, returns `(signingInput) => raw JWS signature` (ECDSA as
   * r || s), or undefined to sign that key with jose. Default: jose (WebCrypto, asynchronous).
   */
  signer?: JwsSigner
  /**
   * The runtime's DPoP proof verification (see `nodeDpopVerifier` in adapters/node.ts): called
   * once per proof key with `{ alg, jwk }`, returns `(signingInput, signature) => boolean` (or a
   * promise of it, for a verifier that batches), or undefined to verify that key with WebCrypto.
   * Default: WebCrypto (asynchronous).
   */
  dpopVerifier?: DpopVerifier
  /** Request limits. */
  limits?: { maxBodyBytes?: number; maxParameterLength?: number; trustContentLength?: boolean; maxScopes?: number }
  /** Name of the session cookie. Default `gatehouse.session`. */
  cookieName?: string
  /** Theme of the built-in pages. */
  theme?: Theme
  /**
   * Throttling of failed client authentications and sign-ins (see `src/security/throttle.ts`): counters per
   * identity + address, per identity and per address, in fixed windows, kept in the store so every
   * instance shares them. `false` turns it off (for a host that throttles in front).
   */
  throttle?:
    | false
    | {
        limiter?: Limiter
        window?: number
        clientAuthentication?: AttemptLimitOptions
        signIn?: AttemptLimitOptions
        userCode?: UserCodeLimitOptions
        deviceAuthorization?: DeviceAuthorizationLimitOptions
      }
  /**
   * The source address of a request, for throttling, `allowedNetworks` and audit events. Gets the
   * address the adapter saw (the TCP peer). Behind a proxy, derive it from a header the proxy
   * sets, trusting it only from the proxy. Default: the adapter's address.
   */
  clientAddress?: (request: Request, peer: string | undefined) => string | undefined
  /**
   * Dynamic client registration (RFC 7591, RFC 7592): `{ scopes: ['mcp:tools'] }` serves open
   * registration at `/connect/register`. Self-registered clients always see the consent page.
   * Default: off.
   */
  dynamicClientRegistration?: DynamicClientRegistrationOptions
  /** Audit events (token issued, refresh reuse detected, sign-in failed, …): see `src/events/emitter.ts`. */
  onEvent?: EventHook
  /**
   * Work the service does after its response (an async `onEvent` hook's promise, a self-registered
   * client's last-use write) is handed to this, as Cloudflare Workers' `waitUntil` from
   * `cloudflare:workers`, which keeps the invocation alive until it settles. Default: the promise
   * just runs (servers keep running).
   */
  waitUntil?: (promise: Promise<unknown>) => void
  /** Clock in epoch seconds. Default `Date.now()`. */
  now?: () => number
  /** Where warnings and unexpected errors go. Default `console`. */
  logger?: Logger
  /**
   * Liveness and readiness probes at paths of the host (not below the issuer), each off while its
   * path is absent: `{ livenessPath: '/healthz', readinessPath: '/readyz' }` (see `src/ops/health.ts`).
   */
  health?: HealthOptions
  /**
   * The end-user's page of the apps and agents with access to their account, where they revoke
   * one (#42): `true` serves it at `{issuer}/account/apps`, `{ path }` elsewhere below the issuer. Default: off.
   */
  grantsPage?: boolean | GrantsPageOptions
  /**
   * Where the service reports requests, latencies, issued tokens, failed client authentications,
   * throttling and store errors: `createMetrics()` (Prometheus text) or a hook of the host's.
   */
  metrics?: MetricsHook
  /**
   * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, as MCP uses them):
   * when present, a `client_id` that is an https URL with a path is a client whose metadata the
   * service fetches from that URL (see `src/clients/metadata_document.ts` for the checks).
   * Advertised as `client_id_metadata_document_supported` in the discovery documents.
   */
  clientIdMetadataDocuments?: ClientIdMetadataDocumentsOptions
  /**
   * The runtime's name resolution, `(hostname) => addresses` (`nodeResolveHost` in
   * adapters/node.ts): with `allowUnpinnedHostNames` (or an option's own `fetch`), a self-registered
   * client's host name (metadata document, `jwks_uri`, `backchannel_logout_uri`) is refused when
   * any of its addresses is not public. The fetch then resolves the name again, so DNS rebinding
   * stays open: `outboundFetch` closes it. Unused when `outboundFetch` is set. Default: none.
   */
  resolveHost?: (hostname: string) => Promise<string[]>
  /**
   * The runtime's fetch for server-side requests to URLs a self-registered client chose (its
   * metadata document, `jwks_uri`, `backchannel_logout_uri`): resolves the host name once, refuses
   * the request when `allowAddress` refuses any address, and connects to a checked address
   * (`nodeOutboundFetch` in adapters/node.ts, for Node, Bun and Deno; `nodeServiceOptions()`,
   * `bunServiceOptions()` and `denoServiceOptions()` include it). Default: `nodeOutboundFetch()`
   * where `gatehouse` resolves under the "node" export condition (Node, Bun, Deno: adapters/node_entry.ts)
   * unless `allowUnpinnedHostNames: true`; elsewhere none: such host names are refused (IP-literal
   * public addresses only) unless `allowUnpinnedHostNames` (#39 item 5).
   */
  outboundFetch?: OutboundFetch
  /**
   * Let self-registered clients' server-side fetches go to host names without `outboundFetch`:
   * for a platform that keeps fetches off private networks (Cloudflare Workers with
   * `global_fetch_strictly_public`, which `createWorker` sets) or behind an egress firewall. The
   * addresses `resolveHost` gives are checked when it is set, but the fetch resolves the name
   * again: a name that changes its answer in between (DNS rebinding) is not caught. Default false.
   */
  allowUnpinnedHostNames?: boolean
  /**
   * Every authorization request must be pushed first (RFC 9126 §5), whatever the client; per
   * client: its `requirePushedAuthorizationRequests`. Default false.
   */
  requirePushedAuthorizationRequests?: boolean
  /** Seconds a pushed request's `request_uri` stays usable (RFC 9126 §2.2). Default 60. */
  parTtl?: number
  /** DPoP (RFC 9449): proofs are always accepted; these settings tighten them. */
  dpop?: DpopOptions
  /**
   * `fapi2-security`: the FAPI 2.0 Security Profile for every client (PAR, PKCE S256, DPoP-bound
   * tokens, private_key_jwt, short-lived codes, PS256/ES256/EdDSA only; see docs/high-security.md).
   */
  profile?: 'fapi2-security'
  /** Token exchange (RFC 8693): the host's policy hook `authorize` (see src/config/token_exchange.ts). */
  tokenExchange?: TokenExchangeOptions
  /** Delivery of back-channel logout tokens (OpenID Connect Back-Channel Logout 1.0; docs/logout.md). */
  backchannelLogout?: BackchannelLogoutOptions
  /**
   * The authorization details types (RFC 9396) the service accepts, listed in discovery as
   * `authorization_details_types_supported`; a client may use those of its `authorizationDetailsTypes`.
   */
  authorizationDetailsTypes?: string[]
  /** The host's hooks per authorization details type: validate, describe (docs/protocol.md). */
  authorizationDetails?: AuthorizationDetailsOptions
  /** Client-Initiated Backchannel Authentication (OpenID CIBA): how the end-user is reached (docs/agents.md). */
  ciba?: CibaOptions
  /** ID-JAGs (MCP enterprise-managed authorization): src/config/identity_assertion.ts, docs/configuration.md. */
  identityAssertion?: IdentityAssertionOptions
}

/** Settings of the `dpop` option. */
export interface DpopOptions {
  /**
   * Demand a server nonce (RFC 9449 §8) in every proof at the token endpoint, PAR and userinfo:
   * a proof without a fresh one gets `use_dpop_nonce` and a `DPoP-Nonce` header. Default false.
   */
  requireNonce?: boolean
}

/** Settings of the `clientIdMetadataDocuments` option. */
export interface ClientIdMetadataDocumentsOptions {
  /** Scopes such clients may be granted (a document's `scope` narrows them). Each must be a known scope. */
  scopes: string[]
  /**
   * Fetch documents from private, loopback, link-local and unique-local addresses too. Default
   * false (the fetch must not reach the service's own network on a stranger's behalf).
   */
  allowPrivateNetworks?: boolean
  /** Seconds a document fetch may take, at most 5. Default 5. */
  timeout?: number
  /**
   * Document fetches per throttle window (`throttle.window`): `perHost` of documents that resolved
   * before (default 60; when spent, their last good copy is served), `unknownPerHost` and
   * `unknownPerAddress` of any other URL (defaults 30 and 20). A failed fetch counts two.
   */
  fetchLimits?: { perHost?: number; unknownPerHost?: number; unknownPerAddress?: number }
  /**
   * Extra private-use URI schemes (RFC 8252 §7.1) a document may use in redirect URIs, lower
   * case, e.g. `['cursor']` for Cursor's `cursor://…` callbacks. Without it only https, loopback
   * http and schemes in reverse domain name form (`com.example.app`) are accepted. Schemes that
   * are operating-system or browser handlers (`javascript`, `file`, `ms-*`, `search-ms`, `intent`,
   * …) are refused at construction even when listed.
   */
  redirectSchemes?: string[]
  /** The fetch used for documents (e.g. one trusting a test CA). Default: the global `fetch`. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>
}
