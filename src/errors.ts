/**
 * @module errors
 * The one error type of the service, mapped to RFC 6749 §5.2 and RFC 6750 §3.1 responses.
 */

/** Every error code the service answers with. */
export type OAuthErrorCode =
  // RFC 6749 §5.2
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  // RFC 6749 §4.1.2.1 (authorization endpoint)
  | 'access_denied'
  | 'unsupported_response_type'
  // OpenID Connect Core §3.1.2.6
  | 'login_required'
  | 'consent_required'
  | 'interaction_required'
  | 'account_selection_required'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  // RFC 6750 §3.1
  | 'invalid_token'
  | 'insufficient_scope'
  // RFC 7009 §2.2.1
  | 'unsupported_token_type'
  // RFC 8628 §3.5 (device authorization grant)
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  // RFC 8707 §2 (resource indicators)
  | 'invalid_target'
  // RFC 7591 §3.2.2 (dynamic client registration)
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  // RFC 9449 §5, §7.1, §8, §9 (DPoP): 400 at the token endpoint; a resource answers 401 + DPoP challenge
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'
  // RFC 9396 §5 (rich authorization requests): 400 at the token endpoint, a redirect at authorization
  | 'invalid_authorization_details'
  // Grant Management for OAuth 2.0 §5.4 (authorization request: an unknown, ended or foreign
  // grant_id, a redirect) and §6.6 (the grant management endpoint: a 404)
  | 'invalid_grant_id'
  // OpenID CIBA Core 1.0 §13 (backchannel authentication endpoint)
  | 'unknown_user_id'
  | 'invalid_binding_message'
  | 'server_error'
  | 'temporarily_unavailable'

const STATUS: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  server_error: 500,
  temporarily_unavailable: 503,
}

/** How a 401/403 challenges the caller (the `WWW-Authenticate` scheme; DPoP: RFC 9449 §7.1). */
export type Challenge = 'Basic' | 'Bearer' | 'DPoP'

export interface OAuthErrorOptions {
  /** HTTP status; defaults by code (400 unless listed in the status table). */
  status?: number
  /** Adds `WWW-Authenticate` with this scheme. */
  challenge?: Challenge
  /** With a Bearer or DPoP challenge: whether the `error` attribute is sent (RFC 6750 §3.1: not when no token was sent). */
  challengeError?: boolean
  /** More challenge parameters, after `error_description` (e.g. DPoP's `algs`, RFC 9449 §7.1). */
  challengeParams?: Record<string, string>
  /** Private detail for logs; never sent to the caller. */
  cause?: unknown
  /** Extra response headers (e.g. `Allow` for 405, `Retry-After` for 503). */
  headers?: Record<string, string>
}

/**
 * An OAuth error. `message` is the `error_description`: short, stable and safe to show.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-5.2
 */
export class OAuthError extends Error {
  readonly code: OAuthErrorCode
  readonly status: number
  readonly challenge: Challenge | undefined
  readonly challengeError: boolean
  readonly challengeParams: Record<string, string> | undefined
  readonly headers: Record<string, string> | undefined

  constructor(code: OAuthErrorCode, description: string, options?: OAuthErrorOptions) {
    super(description, { cause: options?.cause })
    this.name = 'OAuthError'
    this.code = code
    this.status = options?.status ?? STATUS[code] ?? 400
    this.challenge = options?.challenge
    this.challengeError = options?.challengeError ?? true
    this.challengeParams = options?.challengeParams
    this.headers = options?.headers
  }
}

/** RFC 6749 §5.2: error and error_description use %x20-21 / %x23-5B / %x5D-7E only. */
export function safeDescription(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?')
}

function quote(value: string): string {
  return `"${safeDescription(value)}"`
}

/** `WWW-Authenticate` value for an error, RFC 9110 §11.6.1 syntax. */
export function challengeHeader(err: OAuthError, realm: string): string | undefined {
  if (!err.challenge) return undefined
  const parts = [`realm=${quote(realm)}`]
  if (err.challenge !== 'Basic' && err.challengeError) {
    parts.push(`error=${quote(err.code)}`, `error_description=${quote(err.message)}`)
  }
  for (const [name, value] of Object.entries(err.challengeParams ?? {})) parts.push(`${name}=${quote(value)}`)
  return `${err.challenge} ${parts.join(', ')}`
}

/** Turns any thrown value into an OAuthError; unknown errors become a fixed `server_error`. */
export function toOAuthError(err: unknown): OAuthError {
  if (err instanceof OAuthError) return err
  if (err instanceof StoreUnavailableError) {
    return new OAuthError('temporarily_unavailable', 'the service is temporarily unavailable', {
      cause: err,
      headers: { 'retry-after': '5' },
    })
  }
  return new OAuthError('server_error', 'the server encountered an unexpected condition', {
    cause: err,
  })
}

/** The JSON error response for an OAuthError (RFC 6749 §5.2, RFC 6750 §3). */
export function errorResponse(err: OAuthError, realm: string): Response {
  const headers = new Headers({
    'content-type': 'application/json',
    'cache-control': 'no-store',
    pragma: 'no-cache',
  })
  const challenge = challengeHeader(err, realm)
  if (challenge && (err.status === 401 || err.status === 403)) headers.set('www-authenticate', challenge)
  for (const [name, value] of Object.entries(err.headers ?? {})) headers.set(name, value)
  const body = JSON.stringify({ error: err.code, error_description: safeDescription(err.message) })
  return new Response(body, { status: err.status, headers })
}

/**
 * Thrown by a store that cannot reach its backend. The handler answers 503
 * `temporarily_unavailable` instead of a 500.
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StoreUnavailableError'
  }
}
