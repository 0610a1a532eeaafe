/**
 * @module storage/client_records
 * The stored shape of a client (`ClientRecord`) and its parts: secrets, how it authenticates, its
 * keys, and how a self-registered client came to exist. Part of the storage contract (types.ts).
 */
import type { SigningAlgorithm } from '../crypto/index.ts'

/**
 * How a client authenticates at the token, introspection, revocation and PAR endpoints (RFC 7591
 * §2 `token_endpoint_auth_method`; `private_key_jwt` is RFC 7523 / OpenID Connect Core §9).
 */
export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none'

/** A public JSON Web Key Set (RFC 7517 §5): a client's keys for private_key_jwt. */
export interface PublicJwkSet {
  keys: Array<{ kty: 'RSA' | 'EC' | 'OKP'; [member: string]: unknown }>
}

/** A client secret, hashed at rest. */
export interface SecretRecord {
  /** Hash in the `pbkdf2-sha256$<iterations>$<salt>$<hash>` format (see `src/security/secrets.ts`). */
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
  /**
   * The authorization details types (RFC 9396 §10 `authorization_details_types`) the client may
   * request, among the service's `authorizationDetailsTypes`; absent: none.
   */
  authorizationDetailsTypes?: string[]
  /** How CIBA results reach the client (OpenID CIBA §4 `backchannel_token_delivery_mode`); absent: poll. */
  backchannelTokenDeliveryMode?: 'poll' | 'ping'
  /** Where a ping-mode client is notified (CIBA §4 `backchannel_client_notification_endpoint`). */
  backchannelClientNotificationEndpoint?: string
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
  /** RFC 9396 §10: the authorization details types the client may use (cut to the service's list). */
  authorization_details_types?: string[]
  /** OpenID CIBA §4: `poll` or `ping` (clients with the CIBA grant). */
  backchannel_token_delivery_mode?: 'poll' | 'ping'
  /** OpenID CIBA §4: where pings go (https on a public host). */
  backchannel_client_notification_endpoint?: string
}
