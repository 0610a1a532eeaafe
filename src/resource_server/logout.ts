/**
 * @module resource_server/logout
 * Verification of a back-channel logout token by a relying party (OpenID Connect Back-Channel
 * Logout 1.0 §2.6), with the issuer's published keys as for access tokens. Checks, in order:
 * - a compact JWS, header `typ` `logout+jwt` (§2.4; Gatehouse always sets it)
 * - the signature, by one of the issuer's keys with an allowed alg
 * - `iss` the issuer, `aud` containing the client id, `iat` present and not in the future, `exp`
 *   not passed, `jti` present (§2.4)
 * - `events` a JSON object with the member `http://schemas.openid.net/event/backchannel-logout`,
 *   itself a JSON object
 * - `sub` or `sid` present (and `sid` when `sessionRequired`), both strings when present
 * - no `nonce` (§2.4: prohibited, so an ID token cannot pass as a logout token)
 * Failures reject with {@link InvalidLogoutTokenError} (answer the OP 400, §2.8); an issuer whose
 * keys cannot be fetched rejects with `IssuerUnavailableError` (answer 5xx so that it retries).
 */
import { errors, jwtVerify } from 'jose'
import type { IssuerAccess } from './issuer.ts'
import type { ResourceServerSettings } from './options.ts'

/** The `events` member of a back-channel logout token. */
const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

/** A logout token that is malformed, forged, expired, for another client or not a logout token. */
export class InvalidLogoutTokenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'InvalidLogoutTokenError'
  }
}

/** Options of {@link ResourceServer.verifyLogoutToken}. */
export interface VerifyLogoutTokenOptions {
  /** The relying party's client id: the token's `aud` must contain it. */
  clientId: string
  /** The token must carry `sid` (the client registered `backchannel_logout_session_required`). Default false. */
  sessionRequired?: boolean
}

/** The claims of a verified logout token. */
export interface LogoutTokenClaims {
  iss: string
  aud: string | string[]
  iat: number
  exp: number
  jti: string
  events: Record<string, Record<string, unknown>>
  /** The end-user; present unless `sid` is. */
  sub?: string
  /** The session that ended (the ID token's `sid`); present unless `sub` is. */
  sid?: string
  [claim: string]: unknown
}

/** A fixed description for a failed verification (never echoing the token). */
function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the logout token has expired'
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'iss':
        return 'the logout token was issued by another issuer'
      case 'aud':
        return 'the logout token is not meant for this client'
      case 'typ':
        return 'the token is not a logout token (typ logout+jwt)'
      case 'iat':
        return 'the logout token has an invalid issue time'
      default:
        return `the logout token lacks a required claim (${err.claim})`
    }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the logout token signature is invalid'
  if (err instanceof errors.JWKSNoMatchingKey) return 'the logout token is signed by an unknown key'
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the logout token is signed with an algorithm that is not allowed'
  return 'the logout token is invalid'
}

/** Creates `verifyLogoutToken` for one issuer (see the module comment for the checks). */
export function createLogoutTokenVerifier(
  settings: ResourceServerSettings,
  issuerAccess: IssuerAccess,
): (token: string, options: VerifyLogoutTokenOptions) => Promise<LogoutTokenClaims> {
  return async (token, options) => {
    if (typeof options?.clientId !== 'string' || options.clientId === '') {
      throw new TypeError('options.clientId: must be the client id the logout token is for')
    }
    if (typeof token !== 'string' || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) {
      throw new InvalidLogoutTokenError('the logout token is not a signed JWT')
    }
    const { now, clockTolerance } = settings
    const current = now?.()
    let claims: LogoutTokenClaims
    try {
      const { payload } = await jwtVerify(token, issuerAccess.getKey, {
        issuer: settings.issuer,
        audience: options.clientId,
        typ: 'logout+jwt',
        algorithms: settings.algorithms,
        clockTolerance,
        ...(current !== undefined ? { currentDate: new Date(current * 1000) } : {}),
        requiredClaims: ['iss', 'aud', 'iat', 'exp', 'jti'],
      })
      claims = payload as LogoutTokenClaims
    } catch (err) {
      if (err instanceof errors.JOSEError) throw new InvalidLogoutTokenError(reason(err), { cause: err })
      throw err
    }
    const bad = (message: string): never => {
      throw new InvalidLogoutTokenError(message)
    }
    if (claims.iat > (current ?? Date.now() / 1000) + clockTolerance) bad('the logout token was issued in the future')
    if (typeof claims.jti !== 'string') bad('the logout token lacks a required claim (jti)')
    const events = claims.events as unknown
    const event =
      typeof events === 'object' && events !== null
        ? (events as Record<string, unknown>)[BACKCHANNEL_LOGOUT_EVENT]
        : undefined
    if (Array.isArray(events) || typeof event !== 'object' || event === null || Array.isArray(event)) {
      bad('the logout token lacks the back-channel logout event')
    }
    if (claims.sub !== undefined && typeof claims.sub !== 'string') bad('the logout token sub is not a string')
    if (claims.sid !== undefined && typeof claims.sid !== 'string') bad('the logout token sid is not a string')
    if (claims.sub === undefined && claims.sid === undefined) bad('the logout token has neither sub nor sid')
    if (options.sessionRequired === true && claims.sid === undefined) bad('the logout token lacks sid')
    // §2.4: a nonce is prohibited (a logout token must not be usable as an ID token, nor one as it).
    if ('nonce' in claims) bad('the logout token carries a nonce')
    return claims
  }
}
