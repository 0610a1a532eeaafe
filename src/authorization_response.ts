/**
 * @module authorization_response
 * Redirects back to a client's verified redirect_uri (RFC 6749 §4.1.2, §4.1.2.1, RFC 9207 `iss`),
 * shared by the authorization endpoint, the interaction flow and logout; and the rule for when an
 * authorization error may be redirected at all (RFC 9700 §4.11.2, {@link authorizationError}).
 */
import { isSelfRegistered } from './client_record.ts'
import type { Context } from './context.ts'
import { type OAuthErrorCode, safeDescription } from './errors.ts'
import { errorPage } from './pages.ts'
import type { ClientRecord } from './storage/types.ts'

/**
 * An error of an authorization request whose client and redirect_uri are verified: an error
 * redirect (RFC 6749 §4.1.2.1), or, for a client that registered itself (dynamic registration or
 * a metadata document) whose redirect host the end-user has not yet confirmed, an error page on
 * the issuer.
 *
 * RFC 9700 §4.11.2: such a client may name any redirect URI, so redirecting its errors at once
 * (invalid scope, prompt=none, PKCE, …) would make the authorization endpoint an open redirector;
 * the server redirects automatically only to URIs it trusts, and only after authenticating the
 * end-user. `confirmed` is true once the end-user has signed in and seen the consent page, which
 * names the redirect host (deny → access_denied goes back to the client). A client the host
 * registered keeps its error redirects at every step; an unknown (deleted) client gets the page.
 */
export function authorizationError(
  request: { redirectUri: string; state?: string | undefined },
  client: ClientRecord | undefined,
  confirmed: boolean,
  code: OAuthErrorCode,
  description: string,
  ctx: Context,
): Response {
  if (client && (confirmed || !isSelfRegistered(client))) {
    return errorRedirect(request.redirectUri, code, description, request.state, ctx)
  }
  return errorPage(ctx.config.theme, code, description)
}

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
