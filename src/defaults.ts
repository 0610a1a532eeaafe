/**
 * @module defaults
 * The default of every option of `createTokenService` and of a client registration, in one place
 * (the schemas of src/config/schema.ts and src/clients/registration.ts apply them). An absent list
 * (scopes, users, redirect URIs) is empty and an absent group (limits, theme) takes its members'
 * defaults; those are not listed here.
 */
import { DEFAULT_ITERATIONS } from './security/index.ts'

/** Defaults of the options of `createTokenService`. */
export const OPTION_DEFAULTS = {
  /** Access token lifetime, seconds: an hour, the common choice for bearer tokens without revocation checks. */
  accessTokenTtl: 3600,
  /** Authorization code lifetime, seconds (RFC 6749 §4.1.2 recommends at most 10 minutes). */
  authorizationCodeTtl: 300,
  /** ID token lifetime, seconds. */
  idTokenTtl: 3600,
  /** Lifetime of each refresh token generation (idle timeout), seconds: 14 days. */
  refreshTokenTtl: 1_209_600,
  /** Absolute lifetime of a refresh token family, seconds: 90 days. */
  refreshTokenFamilyTtl: 7_776_000,
  /** Browser session lifetime, seconds: 14 days. */
  sessionTtl: 1_209_600,
  /** How long a pending sign-in may take, seconds. */
  interactionTtl: 900,
  /** Device code lifetime, seconds (RFC 8628 §3.2's example is 1800; 10 minutes to sign in elsewhere). */
  deviceCodeTtl: 600,
  /** Seconds a device waits between polls (RFC 8628 §3.5: 5 when the server says nothing). */
  deviceCodeInterval: 5,
  /** CIBA request lifetime (`expires_in`), seconds: 5 minutes for the end-user to answer on their device. */
  cibaTtl: 300,
  /** Seconds a CIBA client waits between polls (CIBA §7.3 `interval`). */
  cibaInterval: 5,
  /** Access token signing algorithm: small keys and signatures. */
  accessTokenSigningAlg: 'ES256',
  /** ID token signing algorithm: RS256, which every relying party supports (OpenID Connect Core §15.1). */
  idTokenSigningAlg: 'RS256',
  /** Seconds a new signing key is published before it signs, so JWKS caches pick it up first. */
  keyPublishAhead: 300,
  /** Issue refresh tokens without `offline_access` too. */
  requireOfflineAccess: false,
  /** PBKDF2 iterations for newly hashed secrets and passwords (OWASP's figure for PBKDF2-SHA256). */
  secretHashIterations: DEFAULT_ITERATIONS,
  /** How long a verified client secret is remembered (as an HMAC), seconds. */
  secretCacheTtl: 300,
  /** Codes and refresh tokens (each) an instance keeps of those it wrote (`issuedRecordCache`). */
  issuedRecordCache: 10_000,
  /** Authorization requests need not be pushed first (RFC 9126); per client it may be required. */
  requirePushedAuthorizationRequests: false,
  /**
   * Self-registered clients' server-side fetches reach a host name only through the runtime's
   * `outboundFetch` (resolved once, connected to the checked address; #39 item 5).
   */
  allowUnpinnedHostNames: false,
  /** Seconds a pushed request's request_uri stays usable (RFC 9126 §2.2 suggests 5 to 600). */
  parTtl: 60,
  dpop: {
    /** No server nonce demanded in DPoP proofs (RFC 9449 §8). */
    requireNonce: false,
  },
  limits: {
    /** Largest accepted request body in bytes: 16 KiB. */
    maxBodyBytes: 16_384,
    /** Longest accepted parameter value in characters (tokens may be long). */
    maxParameterLength: 4096,
    /** Bodies are read as a stream and counted, whatever Content-Length says. */
    trustContentLength: false,
    /** Most scopes in one request. */
    maxScopes: 32,
  },
  /** Name of the session cookie. */
  cookieName: 'gatehouse.session',
  throttle: {
    /** Window of the failure counters, seconds: 15 minutes. */
    window: 900,
    /** Failed client authentications per client id and address, per client id, per address. */
    clientAuthentication: { perIdentityAndAddress: 10, perIdentity: 100, perAddress: 100 },
    /** Failed sign-ins per username and address, per username, per address (people mistype less than scripts). */
    signIn: { perIdentityAndAddress: 5, perIdentity: 50, perAddress: 100 },
    /**
     * Wrong user codes at the verification page (RFC 8628 §5.1), per address (IPv4, IPv6 /64), per
     * network (IPv4 /24, IPv6 /48) and from everywhere together. The overall limit is what bounds
     * a brute force: 20^8 ≈ 2.56e10 codes; a code lives `deviceCodeTtl` (600 s), within at most
     * two windows, so at most 2,000 wrong guesses can be made while it lives, and one given live
     * code is hit with a chance of at most 2,000 / 2.56e10 ≈ 7.8e-8. Even with 1,000 codes live
     * at every moment, a whole day of guessing at the limit (96 windows) finds one with a chance
     * of at most 96,000 · 1,000 / 2.56e10 ≈ 0.4 %, while the refused guesses show in the audit
     * events. Legitimate typos stay far below: one person rarely mistypes 20 times in 15 minutes.
     */
    userCode: { perAddress: 20, perNetwork: 100, overall: 1000 },
    /**
     * Device authorizations started (RFC 8628 §3.1, §5.2) per address (IPv4, IPv6 /64) and per
     * client; a request refused for either does not count. A device code lives `deviceCodeTtl` (600 s, within at most two
     * 900 s windows), so a client has at most 2,000 pending at once, and with the store's hour of
     * retention after expiry at most 1000 · (1 + ⌈4200 / 900⌉) = 6,000 records.
     */
    deviceAuthorization: { perAddress: 30, perClient: 1000 },
  },
  dynamicClientRegistration: {
    /** The grant types a registered client may get: the code flow with refresh tokens. */
    grantTypes: ['authorization_code', 'refresh_token'],
    /** Registration requests one source address may make per hour. */
    maxPerAddressPerHour: 20,
    /** Registration requests from all addresses together per hour. */
    maxPerHour: 1000,
    /** Seconds a dynamic client may go unused before it is deleted: 30 days. */
    pruneUnusedAfter: 2_592_000,
  },
  clientIdMetadataDocuments: {
    /** Fetch documents from private networks: never by default (the fetch must not reach the service's own network). */
    allowPrivateNetworks: false,
    /** Seconds a document fetch may take. */
    timeout: 5,
    /**
     * Document fetches per throttle window: of known documents per host, of other URLs per host and
     * per source address (a failed fetch counts two). Known documents are served stale when spent.
     */
    fetchLimits: { perHost: 60, unknownPerHost: 30, unknownPerAddress: 20 },
  },
} as const

/** Defaults of a client registration. */
export const REGISTRATION_DEFAULTS = {
  /** No consent page for the host's own clients. */
  consentType: 'implicit',
  /** PKCE `plain` only where the host allows it. */
  allowPlainPkce: false,
  /** PKCE from confidential clients only where the host asks for it (public clients always must). */
  requirePkce: false,
  /** Authorization requests need not be pushed first (RFC 9126). */
  requirePushedAuthorizationRequests: false,
  /** Bearer access tokens unless the client sends a DPoP proof (RFC 9449). */
  requireDpop: false,
} as const
