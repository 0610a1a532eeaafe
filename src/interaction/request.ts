/**
 * @module interaction/request
 * A validated authorization request, as the sign-in flow carries it, and the authentication it ends in.
 */
import type { Display, GrantManagementAction, ResponseMode } from '../protocol/index.ts'
import type { AuthorizationDetail, RequestedClaims } from '../storage/index.ts'

/** A validated authorization request. */
export interface AuthorizationRequest {
  clientId: string
  redirectUri: string
  scopes: string[]
  prompt: string[]
  state?: string
  nonce?: string
  codeChallenge?: string
  codeChallengeMethod?: 'S256' | 'plain'
  maxAge?: number
  loginHint?: string
  uiLocales?: string
  /** Core §3.1.2.1 `claims_locales`, as sent. */
  claimsLocales?: string
  /** Core §3.1.2.1 `display`. */
  display?: Display
  /** Core §3.1.2.1 `acr_values`, as sent (space-separated). */
  acrValues?: string
  /** The claims request (Core §5.5), by claim name. */
  claims?: RequestedClaims
  /** `form_post` (Form Post Response Mode §2); absent: query. */
  responseMode?: ResponseMode
  /** `sub` of a valid id_token_hint. */
  idTokenHintSub?: string
  /** Validated `resource` values (RFC 8707): the code remembers them. */
  resources?: string[]
  /**
   * The DPoP key the code is bound to (RFC 9449 §10): `dpop_jkt`, or the key of the pushed
   * request's proof. Kept in the interaction, so a resumed request still binds it.
   */
  dpopJkt?: string
  /** The checked `authorization_details` (RFC 9396): the consent page shows them, the code keeps them. */
  authorizationDetails?: AuthorizationDetail[]
  /** Grant Management §5.2 `grant_management_action`, as sent. */
  grantManagementAction?: GrantManagementAction
  /** The live grant of this client a `merge` or `replace` updates: the code's family. */
  grantId?: string
}

/** The authenticated end-user of a completed sign-in or a live session. */
export interface Authentication {
  sub: string
  authTime: number
  acr?: string
  amr?: string[]
}
