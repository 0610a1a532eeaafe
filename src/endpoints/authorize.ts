/**
 * @module endpoints/authorize
 * The authorization endpoint, GET and POST /connect/authorize (RFC 6749 §4.1.1, OpenID Connect
 * Core §3.1.2). In order:
 * 1. read the parameters; with `request_uri=urn:ietf:params:oauth:request_uri:…` (RFC 9126 §4),
 *    take the pushed request once, for the client_id that pushed it, and use its parameters
 *    instead of the query's (an unknown, expired, used or foreign one → invalid_request_uri page;
 *    a foreign client's attempt leaves it to its owner)
 * 2. validate them (`authorization_request.ts`: errors before client and redirect_uri are
 *    verified are an HTML page, RFC 6749 §4.1.2.1; later ones an error redirect with state and iss,
 *    except for a self-registered client, whose errors before sign-in and consent are a page too:
 *    RFC 9700 §4.11.2, `authorizationError`)
 * 3. sign-in / consent when needed (prompt=none → login_required / consent_required), and the
 *    code redirect with code, state and iss (RFC 9207).
 */
import { authorizationError } from '../protocol/index.ts'
import { isSelfRegistered } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { OAuthError, type OAuthErrorCode } from '../errors.ts'
import { formPairs, mediaType, notAForm, readText } from '../http.ts'
import {
  type AuthorizationRequest,
  claimsNeedingConsent,
  detailsNeedConsent,
  issueCodeRedirect,
  loadSession,
  startInteraction,
} from '../interaction/index.ts'
import { errorPage } from '../pages/index.ts'
import { metaOf } from '../security/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import {
  type RawParams,
  Refusal,
  type RequestOrigin,
  type VerifiedClient,
  collectParams,
  parseAuthorizationRequest,
  verifyClientAndRedirect,
} from './authorization_request.ts'
import { REQUEST_URI_PREFIX, takePushedRequest } from './par.ts'

async function readParams(request: Request, ctx: Context): Promise<RawParams> {
  const max = ctx.config.limits.maxParameterLength
  if (request.method === 'POST') {
    if (mediaType(request.headers.get('content-type') ?? '') !== 'application/x-www-form-urlencoded') throw notAForm()
    const body = await readText(request, ctx.config.limits.maxBodyBytes, ctx.config.limits.trustContentLength)
    return collectParams(formPairs(body), max)
  }
  return collectParams(new URL(request.url).searchParams, max)
}

/**
 * Answers an authorization request: a page, an interaction, or a redirect to the client.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.1.1
 * @see https://www.rfc-editor.org/rfc/rfc9126#section-4
 */
export async function handleAuthorize(request: Request, ctx: Context): Promise<Response> {
  let resolved: { raw: RawParams; origin: RequestOrigin }
  let verified: VerifiedClient
  try {
    const found = await resolveRequest(await readParams(request, ctx), ctx, metaOf(request).address)
    if (found instanceof Response) return found
    resolved = found
    verified = await verifyClientAndRedirect(resolved.raw, ctx, undefined, metaOf(request).address)
  } catch (err) {
    if (err instanceof OAuthError) return errorPage(ctx.config.theme, err.code, err.message, err.status)
    throw err
  }
  // Nothing here comes after the end-user confirmed the redirect host on the consent page: a
  // self-registered client's errors are a page, not a redirect (RFC 9700 §4.11.2; #27 item 1).
  const fail = (code: OAuthErrorCode, description: string) =>
    authorizationError(verified, verified.client, false, code, description, ctx)
  let authRequest: AuthorizationRequest
  try {
    authRequest = await parseAuthorizationRequest(resolved.raw, verified, ctx, resolved.origin)
  } catch (err) {
    if (err instanceof Refusal) return fail(err.code, err.description)
    throw err
  }
  return continueWithSession(request, authRequest, verified.client, ctx, fail)
}

/**
 * The parameters to validate: the request's own, or those of the pushed request its request_uri
 * names (RFC 9126 §4: the query's other parameters are then ignored). A request_uri that is not a
 * pushed one stays in the parameters (→ request_uri_not_supported, Core §6.2). No redirect is
 * safe while the pushed request, which holds the redirect_uri, is unknown: errors are pages.
 */
async function resolveRequest(
  query: RawParams,
  ctx: Context,
  address: string | undefined,
): Promise<Response | { raw: RawParams; origin: RequestOrigin }> {
  const requestUri = query.values.get('request_uri')
  if (requestUri === undefined || !requestUri.startsWith(REQUEST_URI_PREFIX)) {
    return { raw: query, origin: { pushed: false } }
  }
  const { theme } = ctx.config
  const clientId = query.values.get('client_id')
  if (clientId === undefined || query.repeated.has('client_id')) {
    return errorPage(theme, 'invalid_request', 'client_id is missing or repeated')
  }
  if (query.repeated.has('request_uri')) return errorPage(theme, 'invalid_request', 'request_uri is repeated')
  const client = await ctx.clients.get(clientId, address)
  if (!client) return errorPage(theme, 'invalid_client', 'the client is unknown')
  // RFC 9126 §2.2: bound to the client that pushed it; §4: used once, and an expired one is invalid.
  const record = await takePushedRequest(requestUri, client.clientId, ctx)
  if (!record) {
    return errorPage(
      theme,
      'invalid_request_uri',
      'request_uri is unknown, expired, already used or not of this client',
    )
  }
  const raw = collectParams(record.params, ctx.config.limits.maxParameterLength)
  return { raw, origin: { pushed: true, dpopJkt: record.dpopJkt } }
}

/**
 * Then: the code redirect when the browser's session may skip sign-in and consent, else an
 * interaction (prompt=none → login_required / consent_required).
 */
async function continueWithSession(
  request: Request,
  authRequest: AuthorizationRequest,
  client: ClientRecord,
  ctx: Context,
  fail: (code: OAuthErrorCode, description: string) => Response,
): Promise<Response> {
  const { clientId, prompt, maxAge, idTokenHintSub: hintSub, scopes: granted } = authRequest
  const { session } = await loadSession(request, ctx)
  const now = ctx.now()
  const needsLogin =
    !session ||
    prompt.includes('login') ||
    prompt.includes('select_account') ||
    maxAge === 0 || // Core §3.1.2.1: max_age=0 is prompt=login
    (maxAge !== undefined && now - session.authTime > maxAge) ||
    (hintSub !== undefined && hintSub !== session.sub)
  // A client that registered itself asks every time: no earlier consent stands in for it; nor
  // does any request with authorization details (RFC 9396, #41).
  const needsConsent =
    isSelfRegistered(client) ||
    detailsNeedConsent(authRequest) ||
    (client.consentType === 'explicit' &&
      (prompt.includes('consent') ||
        !granted.every((scope) => session?.consents[clientId]?.includes(scope)) ||
        !claimsNeedingConsent(authRequest, ctx).every((claim) => session?.claimConsents?.[clientId]?.includes(claim))))

  if (prompt.includes('none')) {
    if (needsLogin) return fail('login_required', 'the end-user is not signed in')
    if (needsConsent) return fail('consent_required', 'the end-user has not consented')
  }
  if (!needsLogin && !needsConsent && session) {
    return issueCodeRedirect(
      authRequest,
      {
        sub: session.sub,
        authTime: session.authTime,
        ...(session.acr !== undefined ? { acr: session.acr } : {}),
        ...(session.amr !== undefined ? { amr: session.amr } : {}),
      },
      session,
      ctx,
    )
  }
  return startInteraction(request, authRequest, needsLogin ? 'login' : 'consent', session, ctx)
}
