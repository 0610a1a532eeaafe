/**
 * @module storage/types
 * The storage contract every adapter (memory, PostgreSQL, Redis, …) implements. All state of the
 * service goes through it; one-time use and rotation are atomic here, not in the callers.
 */
import type { RequestedClaims } from '../claims_request.ts'
import type { SigningAlgorithm } from '../keys/algorithms.ts'

/**
 * How a client authenticates at the token, introspection, revocation and PAR endpoints (RFC 7591
 * §2 `token_endpoint_auth_method`; `private_key_jwt` is RFC 7523 / OpenID Connect Core §9).
 */
export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none'

/** A public JSON Web Key Set (RFC 7517 §5): a client's keys for private_key_jwt. */
export interface PublicJwkSet {
  keys: Array<{ kty: 'RSA' | 'EC' | 'OKP'; [member: string]: unknown }>
}

/** Outcome of a one-time operation. Across concurrent callers, at most one sees `ok`. */
export type Consumed<T> =
  | { status: 'ok'; record: T } // this call consumed it
  | { status: 'replayed'; record: T } // consumed earlier: the caller revokes record.familyId
  | { status: 'missing' } // unknown or expired

/** A client secret, hashed at rest. */
export interface SecretRecord {
  /** Hash in the `pbkdf2-sha256$<iterations>$<salt>$<hash>` format (see `src/secrets.ts`). */
  hash: string
  /** When the secret was added (epoch s). */
  createdAt: number
  /** After this time (epoch s) the secret no longer authenticates; absent: never expires. */
  expiresAt?: number
}

/** A registered client. Wire-facing names are in the registration API; this is the stored shape. */
export interface ClientRecord {
  /** Unique client identifier. */
  clientId: string
  /** Hashed secrets; empty for a public client. */
  secrets: SecretRecord[]
  /** Human-readable name shown on consent pages. */
  displayName: string
  /** Permission strings (`ept:token`, `gt:client_credentials`, `scp:api1`, …). */
  permissions: string[]
  /** Exact redirect URIs for the authorization code flow. */
  redirectUris: string[]
  /** Exact post-logout redirect URIs for RP-Initiated Logout. */
  postLogoutRedirectUris: string[]
  /** `explicit` shows a consent page; `implicit` grants what the permissions allow. */
  consentType: 'implicit' | 'explicit'
  /** Lets the client use PKCE `plain` (S256 is always accepted). */
  allowPlainPkce: boolean
  /** Requires PKCE even though the client is confidential (public clients always must). */
  requirePkce: boolean
  /** CIDR ranges the client may authenticate from; absent: anywhere. */
  allowedNetworks?: string[]
  /**
   * The alg of the client's ID tokens (OpenID Connect Registration §2 `id_token_signed_response_alg`),
   * one of the algs discovery lists; absent: the service's `idTokenSigningAlg`.
   */
  idTokenSignedResponseAlg?: SigningAlgorithm
  /**
   * The one way the client authenticates. Absent: with its secret, in the Authorization header or
   * the form (`client_secret_basic` / `client_secret_post`), or, without a secret, `none`.
   */
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod
  /** The client's public keys for `private_key_jwt`, inline (or `jwksUri`). */
  jwks?: PublicJwkSet
  /** Where the client publishes its public keys for `private_key_jwt` (or `jwks`). */
  jwksUri?: string
  /** Authorization requests must be pushed first (RFC 9126 §5 `require_pushed_authorization_requests`). */
  requirePushedAuthorizationRequests?: boolean
  /** Access tokens must be DPoP-bound (RFC 9449): token requests without a DPoP proof are refused. */
  requireDpop?: boolean
  /**
   * Where the service POSTs a logout token when a session the client took part in ends (OpenID
   * Connect Back-Channel Logout 1.0 §2.2 `backchannel_logout_uri`).
   */
  backchannelLogoutUri?: string
  /** The logout token must carry `sid` (Back-Channel Logout §2.2 `backchannel_logout_session_required`). */
  backchannelLogoutSessionRequired?: boolean
  /** Per-client lifetimes (seconds) overriding the service defaults. */
  lifetimes: {
    accessToken?: number
    authorizationCode?: number
    idToken?: number
    refreshToken?: number
  }
  /**
   * Present when the client registered itself instead of being configured by the host: through
   * dynamic client registration (RFC 7591), or as a client id metadata document. Such a client
   * always gets the consent page, which says that it registered itself.
   */
  registration?: SelfRegistration
  /** Registration time (epoch s). */
  createdAt: number
  /** Last update (epoch s). */
  updatedAt: number
}

/** How a self-registered client came to exist, and what it registered (see `ClientRecord.registration`). */
export interface SelfRegistration {
  /** `dynamic`: RFC 7591 registration; `metadata_document`: the client id is the URL of its metadata document. */
  kind: 'dynamic' | 'metadata_document'
  /** The accepted client metadata, in RFC 7591 §2 names (what RFC 7592 reads return). */
  metadata: ClientMetadata
  /** base64url SHA-256 of the RFC 7592 registration access token (dynamic clients only). */
  accessTokenHash?: string
  /** URL of the client's metadata document (metadata-document clients only). */
  documentUrl?: string
  /** Last time the client used the token endpoint (epoch s), recorded at most once a day (pruning). */
  lastUsedAt?: number
}

/** Client metadata in RFC 7591 §2 names, as accepted (defaults filled in, scope cut to what is allowed). */
export interface ClientMetadata {
  redirect_uris: string[]
  /** `none`, `client_secret_basic` or `client_secret_post`. */
  token_endpoint_auth_method: string
  grant_types: string[]
  response_types: string[]
  client_name?: string
  /** The scopes the client may ask for, space-separated. */
  scope?: string
  client_uri?: string
  logo_uri?: string
  /** RP-Initiated Logout 1.0 §3.1: where the end-user may be sent after logout (exact match). */
  post_logout_redirect_uris?: string[]
  /** Back-Channel Logout 1.0 §2.2: where logout tokens go. */
  backchannel_logout_uri?: string
  /** Back-Channel Logout 1.0 §2.2: logout tokens must carry `sid` (default false). */
  backchannel_logout_session_required?: boolean
}

/** An authorization code, stored under the SHA-256 of its value. */
export interface CodeRecord {
  /** base64url SHA-256 of the code value. */
  id: string
  /** The grant (family) this code starts; every token issued from it carries it. */
  familyId: string
  clientId: string
  /** The redirect_uri of the authorization request, compared verbatim at redemption. */
  redirectUri: string
  /** Granted scopes, space-separated. */
  scope: string
  /** The end-user's subject. */
  sub: string
  /** The session (`sid`) the code was issued in. */
  sid?: string
  /** When the end-user authenticated (epoch s). */
  authTime: number
  acr?: string
  amr?: string[]
  nonce?: string
  codeChallenge?: string
  codeChallengeMethod?: 'S256' | 'plain'
  /** Whether the ID token must carry auth_time (max_age was sent). */
  requireAuthTime?: boolean
  /** The resources (RFC 8707) of the authorization request; the token request may name a subset. */
  resources?: string[]
  /** The claims requested with the `claims` parameter (Core §5.5) that the end-user agreed to. */
  claims?: RequestedClaims
  /**
   * The DPoP key the code is bound to (RFC 9449 §10: `dpop_jkt` at authorization, or the proof
   * of the pushed request): redemption needs a proof made with that key.
   */
  dpopJkt?: string
  /** Issue time (epoch s). */
  issuedAt: number
  /** Expiry (epoch s); an expired code is `missing`. */
  expiresAt: number
  /** Set once by `consume`. */
  consumedAt?: number
}

/** A refresh token generation, stored under the SHA-256 of its value. */
export interface RefreshTokenRecord {
  /** base64url SHA-256 of the token value. */
  id: string
  /** The grant (family) every generation of this token shares. */
  familyId: string
  clientId: string
  sub: string
  scope: string
  sid?: string
  authTime: number
  acr?: string
  amr?: string[]
  /** Issue time of this generation (epoch s). */
  issuedAt: number
  /** Expiry of this generation (epoch s). */
  expiresAt: number
  /** The family's absolute end (epoch s): rotation never extends past it. */
  familyExpiresAt: number
  /** The resources (RFC 8707) of the grant; a refresh may name a subset. */
  resources?: string[]
  /** The approved claims request of the grant (Core §5.5): refreshed tokens keep releasing them. */
  claims?: RequestedClaims
  /** A public client's refresh token is bound to its DPoP key (RFC 9449 §5): refreshing needs a proof with it. */
  dpopJkt?: string
  /** Set once by `rotate`. */
  consumedAt?: number
}

/** A browser session at the authorization server. */
export interface SessionRecord {
  /** base64url SHA-256 of the session cookie value. */
  id: string
  /** Public session id (the ID token `sid` claim). */
  sid: string
  sub: string
  /** When the end-user authenticated (epoch s). */
  authTime: number
  acr?: string
  amr?: string[]
  /** Client ids that received codes in this session. */
  clients: string[]
  /** Scopes the end-user consented to, by client id (explicit-consent clients). */
  consents: Record<string, string[]>
  /**
   * Claims the end-user consented to release on their own (requested with the `claims` parameter,
   * OpenID Connect Core §5.5, beyond those of the granted scopes), by client id.
   */
  claimConsents?: Record<string, string[]>
  /**
   * Families (grants) started in this session without `offline_access`: logout revokes them, so
   * their refresh tokens end with the session. The newest `SESSION_GRANTS_MAX` are kept.
   */
  grants?: string[]
  /** Expiry (epoch s). */
  expiresAt: number
}

/** A pending browser interaction: sign-in or consent for an authorization request, or a logout confirmation. */
export interface InteractionRecord {
  /** Random interaction id (it travels in forms and the host's login URL). */
  id: string
  kind: 'authorization' | 'logout'
  /** base64url SHA-256 of the browser-binding cookie: only that browser may complete it. */
  browserId: string
  /** Anti-CSRF token of the forms of this interaction. */
  csrf: string
  /** The validated request (JSON-serialisable). */
  request: Record<string, unknown>
  /** Set once the end-user signed in while consent is still pending. */
  login?: { sub: string; authTime: number; acr?: string; amr?: string[] }
  /** A failed sign-in's message to show on the form. */
  message?: string
  /** Expiry (epoch s). */
  expiresAt: number
}

/** A pushed authorization request (RFC 9126), stored under the id its `request_uri` carries. */
export interface PushedRequestRecord {
  /** base64url SHA-256 of the random reference at the end of `urn:ietf:params:oauth:request_uri:`. */
  id: string
  /** The client that pushed it: only that client may use it at the authorization endpoint. */
  clientId: string
  /** The pushed authorization request parameters, in order (a name may repeat, e.g. `resource`). */
  params: Array<[string, string]>
  /** The JWK thumbprint of the DPoP proof that came with the push (RFC 9449 §10.1), if any. */
  dpopJkt?: string
  /** Expiry (epoch s); an expired request is missing. */
  expiresAt: number
}

/** A signing key. */
export interface KeyRecord {
  kid: string
  alg: string
  /** The private key as a JWK (includes `d`); never published. */
  privateJwk: Record<string, unknown>
  /** The public key as a JWK; published in the JWKS while not expired. */
  publicJwk: Record<string, unknown>
  /** Creation time (epoch s). */
  createdAt: number
  /** Signing starts at (epoch s): publish before use. */
  activatesAt: number
  /** Signing stops at (epoch s); the key stays published until `expiresAt`. */
  retiresAt?: number
  /** Removed from the JWKS at (epoch s). */
  expiresAt?: number
}

/** A fixed-window counter of failed attempts (throttling). */
export interface AttemptCounter {
  /** Hits in the current window. */
  count: number
  /** When the window ends and the count starts again at zero (epoch s). */
  resetAt: number
}

/** The outcome of `attempts.take`: whether this call was counted, and the counter after it. */
export interface AttemptTaken extends AttemptCounter {
  /** True when the window had room and this call counted; false when the counter was at its limit. */
  taken: boolean
}

/** The storage interface. Every method may throw `StoreUnavailableError` when its backend is down. */
export interface Store {
  clients: {
    get(clientId: string): Promise<ClientRecord | undefined>
    /** Inserts unless the id exists. Returns whether it inserted. Atomic. */
    insert(record: ClientRecord): Promise<boolean>
    /**
     * Replaces an existing record. Returns false if the id does not exist, or, when `expected` is
     * given, if the stored record is no longer equal to it (compare-and-set: read-modify-write
     * callers such as secret rotation retry on false, so concurrent changes are never lost).
     * Atomic: of concurrent calls with one `expected`, at most one returns true. Pass `expected`
     * as `get` returned it (adapters may compare its JSON text).
     */
    update(record: ClientRecord, expected?: ClientRecord): Promise<boolean>
    delete(clientId: string): Promise<boolean>
    list(): Promise<ClientRecord[]>
  }
  codes: {
    insert(record: CodeRecord): Promise<void>
    /**
     * The code without consuming it (with `consumedAt` once consumed), or undefined when it is
     * unknown or expired: redemption checks client, redirect_uri and PKCE before it consumes.
     */
    get(id: string): Promise<CodeRecord | undefined>
    /** Atomically marks the code consumed. Keeps a tombstone until `expiresAt`. */
    consume(id: string, now: number): Promise<Consumed<CodeRecord>>
  }
  refreshTokens: {
    insert(record: RefreshTokenRecord): Promise<void>
    get(id: string): Promise<RefreshTokenRecord | undefined>
    /** Atomically: if `id` is unconsumed and unexpired, mark it consumed AND insert `next`. */
    rotate(id: string, next: RefreshTokenRecord, now: number): Promise<Consumed<RefreshTokenRecord>>
  }
  sessions: {
    put(record: SessionRecord): Promise<void>
    get(id: string): Promise<SessionRecord | undefined>
    delete(id: string): Promise<void>
    /**
     * The live (unexpired) sessions of an end-user, for `service.sessions.endAll(sub)`. Optional
     * for stores of your own (every built-in store has it): without it `endAll` throws. Memory and
     * Redis keep an index by `sub`; SQL stores read the records' `sub` (a scan of the sessions
     * table: an administrative call, not a request path).
     */
    listBySub?(sub: string): Promise<SessionRecord[]>
  }
  interactions: {
    put(record: InteractionRecord): Promise<void>
    get(id: string): Promise<InteractionRecord | undefined>
    /** Atomically removes and returns it: one interaction completes once. */
    take(id: string): Promise<InteractionRecord | undefined>
  }
  revocations: {
    /** Idempotent. Kills every code, refresh token and access token of the family until `until`. */
    revokeFamily(familyId: string, until: number): Promise<void>
    isFamilyRevoked(familyId: string): Promise<boolean>
    /** Denylists a JWT access token id until the token's own expiry. */
    revokeAccessToken(jti: string, until: number): Promise<void>
    isAccessTokenRevoked(jti: string): Promise<boolean>
  }
  /** Counters of failed attempts (client authentication, sign-in), shared by every instance. */
  attempts: {
    /**
     * Atomically adds one to the counter of `key`. A window starts with the first hit and lasts
     * `window` seconds; the first hit after it ends starts a new one. Returns the counter after it.
     */
    hit(key: string, window: number, now: number): Promise<AttemptCounter>
    /** The counter of `key`, or undefined when there is none or its window ended. */
    get(key: string, now: number): Promise<AttemptCounter | undefined>
    /**
     * Atomically adds one to the counter of `key` only while its window holds fewer than `limit`
     * hits (count-and-reserve: a cap such as registrations per hour). Windows work as in `hit`.
     * Across concurrent callers, at most `limit` per window see `taken: true`; a refused call does
     * not count. Optional for stores of your own (every built-in store has it): without it the
     * caps count with `hit` and compare, also atomic, but then refused calls count too.
     */
    take?(key: string, limit: number, window: number, now: number): Promise<AttemptTaken>
  }
  keys: {
    list(): Promise<KeyRecord[]>
    put(record: KeyRecord): Promise<void>
  }
  /** Pushed authorization requests (RFC 9126): each `request_uri` is used once. */
  pushedRequests: {
    put(record: PushedRequestRecord): Promise<void>
    /**
     * Atomically removes and returns it; undefined when unknown or expired. With `clientId`, only
     * a request pushed by that client is taken: one of another client stays, untouched, for its
     * owner (RFC 9126 §2.2, #27 item 9), and the answer is undefined as for an unknown one.
     */
    take(id: string, now: number, clientId?: string): Promise<PushedRequestRecord | undefined>
  }
  /**
   * Identifiers that may be used once, shared by every instance: DPoP proof `jti`s (RFC 9449 §11.1)
   * and client assertion `jti`s (RFC 7523 §3). Keys are namespaced by the caller (`dpop:…`, `jwt:…`).
   */
  replays: {
    /**
     * Atomically records `key` until `expiresAt` (epoch s). True when this call recorded it; false
     * when it was already recorded and that record has not expired (a replay). Of concurrent calls
     * with one key, exactly one gets true.
     */
    use(key: string, expiresAt: number, now: number): Promise<boolean>
  }
  /** Releases connections. */
  close?(): Promise<void>
}
