/**
 * @module authorization_response
 * Redirects back to a client's verified redirect_uri (RFC 6749 §4.1.2, §4.1.2.1, RFC 9207 `iss`),
 * shared by the authorization endpoint, the interaction flow and logout.
 */
import type { Context } from './context.ts'
import { type OAuthErrorCode, safeDescription } from './errors.ts'

/** An error redirect to a verified redirect_uri with error, error_description, state and iss. */
export function errorRedirect(
  redirectUri: string,
  code: OAuthErrorCode,
  description: string,
  state: string | undefined,
  ctx: Context,
): Response {
  const params = new URLSearchParams({ error: code, error_description: safeDescription(description) })
  if (state !== undefined) params.set('state', state)
  params.set('iss', ctx.config.issuer)
  return redirect(appendQuery(redirectUri, params))
}

/** Appends parameters to a URI, keeping its own query verbatim (RFC 6749 §3.1.2). */
export function appendQuery(uri: string, params: URLSearchParams): string {
  return `${uri}${uri.includes('?') ? '&' : '?'}${params.toString()}`
}

/** A 303 redirect (RFC 9700 §4.12: never 307 after a credential POST). */
export function redirect(location: string, headers?: Headers): Response {
  const h = new Headers(headers)
  h.set('location', location)
  h.set('cache-control', 'no-store')
  return new Response(null, { status: 303, headers: h })
}
