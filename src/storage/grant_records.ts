/**
 * @module storage/grant_records
 * What an end-user granted a client, as the stores keep it: the grant record (`Store.grants`), and
 * the claims request (OpenID Connect Core §5.5) and authorization details (RFC 9396) a grant, a
 * code and a refresh token carry. Re-exported by types.ts.
 */

/** The claim names a claims request asks for, by where they go (Core §5.5). */
export interface RequestedClaims {
  /** Claims requested from the UserInfo endpoint (§5.5 `userinfo`). */
  userinfo?: string[]
  /** Claims requested in the ID token (§5.5 `id_token`). */
  id_token?: string[]
}

/**
 * One element of RFC 9396 `authorization_details`: an object with a string `type` and the
 * type's fields (JSON values), as the end-user approved it.
 */
export interface AuthorizationDetail {
  type: string
  [field: string]: unknown
}

/**
 * A grant: what one end-user allowed one client, recorded when its first tokens are issued. Keyed
 * by the family id.
 */
export interface GrantRecord {
  /** The family id (the access tokens' `gid`). */
  id: string
  clientId: string
  /** The end-user's subject. */
  sub: string
  /** The granted scopes, space-separated (offline_access included when granted). */
  scope: string
  /** The resources (RFC 8707) of the grant. */
  resources?: string[]
  /** The approved claims request (Core §5.5). */
  claims?: RequestedClaims
  /** The approved authorization details (RFC 9396). */
  authorizationDetails?: AuthorizationDetail[]
  /** The public session id (`sid`) the grant was made in, if any. */
  sid?: string
  /** The session's store id (SessionRecord.id): lets the service check the session is still alive. */
  sessionId?: string
  /** How it was made. */
  kind: 'authorization_code' | 'device_code' | 'ciba' | 'jwt_bearer'
  /** When the end-user authenticated (epoch s). */
  authTime: number
  /** Creation time (epoch s). */
  createdAt: number
  /**
   * The grant's end (epoch s): the refresh family's absolute end, else the end of the last token
   * issued from it. An expired grant is missing.
   */
  expiresAt: number
  /**
   * When a token was last issued from the grant after its first ones (a refresh, a token exchange;
   * epoch s, kept to the minute: `grants.touch`). Absent until then.
   */
  lastUsedAt?: number
  /**
   * How many times the grant's permissions were updated (Grant Management `merge` or `replace`,
   * #42): refresh tokens of an earlier revision are refused. Absent is 0.
   */
  revision?: number
}
