/**
 * @module protocol/authorization_response
 * Redirects back to a client's verified redirect_uri (RFC 6749 §4.1.2, §4.1.2.1, RFC 9207 `iss`),
 * shared by the authorization endpoint, the interaction flow and logout; the authorization
 * response in the requested response mode (query, or an auto-submitted form: OAuth 2.0 Form Post
 * Response Mode §2); and the rule for when an authorization error may be redirected at all
 * (RFC 9700 §4.11.2, {@link authorizationError}).
 */
import { isSelfRegistered } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { type OAuthErrorCode, safeDescription } from '../errors.ts'
import { escapeHtml as e } from '../http.ts'
import { errorPage, pageHeaders, textsOf } from '../pages/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import { randomToken } from '../crypto/index.ts'

/**
 * How the authorization response reaches the redirect_uri: `query` (RFC 6749 §4.1.2, the default
 * of response_type code) or `form_post` (OAuth 2.0 Form Post Response Mode §2).
 */
export type ResponseMode = 'query' | 'form_post'

/** The response modes the authorization endpoint answers in (discovery `response_modes_supported`). */
export const RESPONSE_MODES: readonly ResponseMode[] = ['query', 'form_post']

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
  request: { redirectUri: string; state?: string | undefined; responseMode?: ResponseMode | undefined },
  client: ClientRecord | undefined,
  confirmed: boolean,
  code: OAuthErrorCode,
  description: string,
  ctx: Context,
): Response {
  if (client && (confirmed || !isSelfRegistered(client))) {
    return errorRedirect(request.redirectUri, code, description, request.state, ctx, request.responseMode)
  }
  return errorPage(ctx.config.theme, code, description)
}

/** An error response to a verified redirect_uri with error, error_description, state and iss. */
export function errorRedirect(
  redirectUri: string,
  code: OAuthErrorCode,
  description: string,
  state: string | undefined,
  ctx: Context,
  mode: ResponseMode = 'query',
): Response {
  const params = new URLSearchParams({ error: code, error_description: safeDescription(description) })
  if (state !== undefined) params.set('state', state)
  params.set('iss', ctx.config.issuer)
  return authorizationResponse(redirectUri, params, mode, ctx)
}

/**
 * The authorization response (success or error) in its response mode: a 303 redirect with the
 * parameters in the query, or {@link formPostPage}.
 */
export function authorizationResponse(
  redirectUri: string,
  params: URLSearchParams,
  mode: ResponseMode,
  ctx: Context,
  headers?: Headers,
): Response {
  if (mode === 'form_post') return formPostPage(redirectUri, params, ctx, headers)
  return redirect(appendQuery(redirectUri, params), headers)
}

/**
 * OAuth 2.0 Form Post Response Mode §2: a 200 HTML page whose form POSTs the parameters, as hidden
 * inputs, to the redirect_uri, submitted by the one inline script the CSP admits (its nonce); a
 * `<noscript>` button submits it without JavaScript. Every value is HTML-escaped; the page is
 * never cached (§4: it carries the code) and sends no Referer.
 */
export function formPostPage(redirectUri: string, params: URLSearchParams, ctx: Context, headers?: Headers): Response {
  const nonce = randomToken(16)
  const inputs = [...params]
    .map(([name, value]) => `<input type="hidden" name="${e(name)}" value="${e(value)}">`)
    .join('')
  const button = e(textsOf(ctx.config.theme).continueButton)
  const html = `<!doctype html>
<html lang="${e(ctx.config.theme.lang ?? 'en')}"><head><meta charset="utf-8"><meta name="robots" content="noindex"><meta name="referrer" content="no-referrer"><title>${button}</title></head>
<body><form method="post" action="${e(redirectUri)}">${inputs}<noscript><button type="submit">${button}</button></noscript></form>
<script nonce="${nonce}">document.forms[0].submit()</script></body></html>`
  const h = new Headers(headers)
  for (const [name, value] of Object.entries(pageHeaders(nonce))) h.set(name, value)
  // Only the nonce-bearing script runs; no style, image or other source is needed.
  h.set(
    'content-security-policy',
    `default-src 'none'; script-src 'nonce-${nonce}'; base-uri 'none'; frame-ancestors 'none'`,
  )
  return new Response(html, { status: 200, headers: h })
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
