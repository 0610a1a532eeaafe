/**
 * @module grants/types
 * The shape every grant handler has (node-oidc-provider `grants/*`): a type, the permission it
 * needs, and a handler from authenticated client and parameters to a token response body.
 */
import type { AuthenticatedClient } from '../client_auth/index.ts'
import type { Context } from '../context.ts'
import type { DpopProof } from '../dpop/index.ts'
import type { Params } from '../http.ts'
import type { AuthorizationDetail } from '../storage/index.ts'

export type GrantType =
  | 'authorization_code'
  | 'refresh_token'
  | 'client_credentials'
  | 'urn:ietf:params:oauth:grant-type:token-exchange'
  | 'urn:ietf:params:oauth:grant-type:device_code'
  | 'urn:openid:params:grant-type:ciba'
  | 'urn:ietf:params:oauth:grant-type:jwt-bearer'

export interface Grant {
  type: GrantType
  /** The `gt:` permission the client needs. */
  permission: string
  /** Whether public clients may use it. */
  allowPublic: boolean
  /** Whether the service offers it (default: always); when not, its grant_type is unsupported. */
  isOffered?(ctx: Context): boolean
  /**
   * Issues the tokens. `proof`: the request's checked DPoP proof (RFC 9449 §5), if it sent one;
   * the access token is then bound to its key (`cnf.jkt`) and the response's `token_type` is DPoP.
   */
  handle(params: Params, auth: AuthenticatedClient, ctx: Context, proof?: DpopProof): Promise<TokenResponse>
}

/**
 * Set on a token response by a grant whose `access_token` is a compact JWS it just signed: base64url
 * segments joined by dots, nothing JSON escapes. The endpoint then writes the usual answer without
 * scanning the token for such characters (#44 item 4). A symbol: never a member of the JSON.
 */
export const PLAIN_ACCESS_TOKEN: unique symbol = Symbol('plain access token')

/** RFC 6749 §5.1 token response. */
export interface TokenResponse {
  /** See {@link PLAIN_ACCESS_TOKEN}. */
  [PLAIN_ACCESS_TOKEN]?: true
  access_token: string
  /** RFC 9449 §5: `DPoP` for an access token bound to the proof's key; RFC 8693 §2.2.1 `N_A`: not an access token (an ID-JAG). */
  token_type: 'Bearer' | 'DPoP' | 'N_A'
  expires_in: number
  refresh_token?: string
  id_token?: string
  scope?: string
  /** RFC 8693 §2.2.1: the type of the issued token (token exchange only). */
  issued_token_type?: string
  /** RFC 9396 §7: the authorization details the access token is for. */
  authorization_details?: AuthorizationDetail[]
  /** Grant Management for OAuth 2.0 §5.5: the id of the end-user grant the tokens are issued from. */
  grant_id?: string
}
