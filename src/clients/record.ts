/**
 * @module clients/record
 * What a stored client record says (confidential, self-registered, the consent page's notice) and
 * the host-facing view of it (`ClientInfo`): everything but the secret hashes.
 */
import type { SelfRegisteredNotice } from '../pages/index.ts'
import type { SigningAlgorithm } from '../crypto/index.ts'
import type { ClientRecord, PublicJwkSet, SecretRecord, TokenEndpointAuthMethod } from '../storage/index.ts'

/** A client as the host sees it: everything but the secret hashes. */
export interface ClientInfo {
  clientId: string
  displayName: string
  /** `confidential` when it holds a secret, otherwise `public`. */
  type: 'confidential' | 'public'
  permissions: string[]
  redirectUris: string[]
  postLogoutRedirectUris: string[]
  consentType: 'implicit' | 'explicit'
  allowPlainPkce: boolean
  requirePkce: boolean
  lifetimes: ClientRecord['lifetimes']
  /** CIDR ranges the client may authenticate from; absent: anywhere. */
  allowedNetworks?: string[]
  /** The secrets' ids, creation and expiry, never the secrets. */
  secrets: SecretInfo[]
  /** How it authenticates, when registered (absent: its secret, basic or post, or none). */
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod
  /** Its public keys for private_key_jwt, inline. */
  jwks?: PublicJwkSet
  /** Where its public keys for private_key_jwt are published. */
  jwksUri?: string
  /** Authorization requests must be pushed first (RFC 9126). */
  requirePushedAuthorizationRequests?: boolean
  /** Access tokens must be DPoP-bound (RFC 9449). */
  requireDpop?: boolean
  /** The alg of its ID tokens (absent: the service's). */
  idTokenSignedResponseAlg?: SigningAlgorithm
  /** Where logout tokens go (OpenID Connect Back-Channel Logout 1.0). */
  backchannelLogoutUri?: string
  /** Its logout tokens must carry `sid`. */
  backchannelLogoutSessionRequired?: boolean
  /** The authorization details types (RFC 9396) it may request. */
  authorizationDetailsTypes?: string[]
  /** How CIBA results reach it (OpenID CIBA §4). */
  backchannelTokenDeliveryMode?: 'poll' | 'ping'
  /** Where its CIBA pings go. */
  backchannelClientNotificationEndpoint?: string
  /** Set when the client registered itself (RFC 7591, or a client id metadata document). */
  registration?: {
    kind: 'dynamic' | 'metadata_document'
    /** Last token request (epoch s), recorded at most once a day. */
    lastUsedAt?: number
    /** URL of the client's metadata document (metadata-document clients). */
    documentUrl?: string
  }
  createdAt: number
  updatedAt: number
}

/** A client secret as the host sees it. */
export interface SecretInfo {
  /** Stable id of the secret (derived from its random salt), for `retireSecret`. */
  id: string
  createdAt: number
  /** After this time (epoch s) the secret no longer authenticates. */
  expiresAt?: number
}

/** A secret just added: its value is shown this once and never stored. */
export interface AddedSecret extends SecretInfo {
  secret: string
}

/** The id of a stored secret: a prefix of its random salt (unique per hash, not secret). */
export function secretId(record: SecretRecord): string {
  return record.hash.split('$')[2]?.slice(0, 16) ?? ''
}

export function toSecretInfo(record: SecretRecord): SecretInfo {
  const info: SecretInfo = { id: secretId(record), createdAt: record.createdAt }
  if (record.expiresAt !== undefined) info.expiresAt = record.expiresAt
  return info
}

/** Whether the client authenticates: with a secret, or with a key (private_key_jwt). */
export function isConfidential(client: ClientRecord): boolean {
  return client.secrets.length > 0 || client.tokenEndpointAuthMethod === 'private_key_jwt'
}

/**
 * Whether the client registered itself (RFC 7591, or a client id metadata document) rather than
 * being configured by the host: such a client always gets the consent page (it is never implicit,
 * and no earlier consent in the session skips it), which says that the client registered itself.
 */
export function isSelfRegistered(client: ClientRecord): boolean {
  return client.registration !== undefined
}

/** What the consent page shows about a self-registered client for a redirect URI (undefined for the host's clients). */
export function selfRegistrationNotice(client: ClientRecord, redirectUri: string): SelfRegisteredNotice | undefined {
  const registration = client.registration
  if (registration === undefined) return undefined
  const notice: SelfRegisteredNotice = { kind: registration.kind, redirectHost: hostOf(redirectUri) }
  if (registration.kind === 'metadata_document')
    notice.documentHost = hostOf(registration.documentUrl ?? client.clientId)
  return notice
}

/** The host of a URL, or its scheme for a private-use scheme URI without one (`com.example.app:`). */
export function hostOf(url: string): string {
  try {
    const parsed = new URL(url)
    return parsed.host === '' ? parsed.protocol : parsed.host
  } catch {
    return url
  }
}

/** The host-facing view of a stored client. */
export function toClientInfo(record: ClientRecord): ClientInfo {
  return {
    clientId: record.clientId,
    displayName: record.displayName,
    type: isConfidential(record) ? 'confidential' : 'public',
    permissions: [...record.permissions],
    redirectUris: [...record.redirectUris],
    postLogoutRedirectUris: [...record.postLogoutRedirectUris],
    consentType: record.consentType,
    allowPlainPkce: record.allowPlainPkce,
    requirePkce: record.requirePkce,
    lifetimes: { ...record.lifetimes },
    ...(record.allowedNetworks ? { allowedNetworks: [...record.allowedNetworks] } : {}),
    secrets: record.secrets.map(toSecretInfo),
    ...(record.tokenEndpointAuthMethod ? { tokenEndpointAuthMethod: record.tokenEndpointAuthMethod } : {}),
    ...(record.jwks ? { jwks: structuredClone(record.jwks) } : {}),
    ...(record.jwksUri ? { jwksUri: record.jwksUri } : {}),
    ...(record.requirePushedAuthorizationRequests ? { requirePushedAuthorizationRequests: true } : {}),
    ...(record.requireDpop ? { requireDpop: true } : {}),
    ...(record.idTokenSignedResponseAlg ? { idTokenSignedResponseAlg: record.idTokenSignedResponseAlg } : {}),
    ...(record.backchannelLogoutUri ? { backchannelLogoutUri: record.backchannelLogoutUri } : {}),
    ...(record.backchannelLogoutSessionRequired ? { backchannelLogoutSessionRequired: true } : {}),
    ...(record.authorizationDetailsTypes ? { authorizationDetailsTypes: [...record.authorizationDetailsTypes] } : {}),
    ...(record.backchannelTokenDeliveryMode
      ? { backchannelTokenDeliveryMode: record.backchannelTokenDeliveryMode }
      : {}),
    ...(record.backchannelClientNotificationEndpoint
      ? { backchannelClientNotificationEndpoint: record.backchannelClientNotificationEndpoint }
      : {}),
    ...(record.registration
      ? {
          registration: {
            kind: record.registration.kind,
            ...(record.registration.lastUsedAt !== undefined ? { lastUsedAt: record.registration.lastUsedAt } : {}),
            ...(record.registration.documentUrl !== undefined ? { documentUrl: record.registration.documentUrl } : {}),
          },
        }
      : {}),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  }
}
