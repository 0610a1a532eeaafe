/**
 * @module endpoints/authorize
 * The authorization endpoint, GET and POST /connect/authorize (RFC 6749 §4.1.1, OpenID Connect
 * Core §3.1.2). Checks, in order (RFC 6749 §4.1.2.1: nothing is redirected until the client and
 * redirect_uri are verified; until then errors are an HTML page):
 * 1. client_id present, once, known            → error page
 * 2. redirect_uri present, once, registered     → error page (exact string match)
 * 3. client permissions                          → unauthorized_client
 * 4. request / request_uri                       → request_not_supported / request_uri_not_supported
 * 5. response_type = code, response_mode query   → invalid_request / unsupported_response_type
 * 6. repeated parameters                         → invalid_request
 * 7. resource (RFC 8707 §2): absolute, no fragment, the audience of a permitted scope → invalid_target;
 *    scope: known and permitted                  → invalid_scope
 * 8. PKCE (RFC 7636 §4.3, §4.4.1)                → invalid_request
 * 9. prompt, max_age, id_token_hint              → invalid_request
 * then: sign-in / consent when needed (prompt=none → login_required / consent_required), and the
 * code redirect with code, state and iss (RFC 9207).
 */
import { isConfidential, isSelfRegistered } from '../clients.ts'
import type { Context } from '../context.ts'
import { OAuthError, type OAuthErrorCode, safeDescription } from '../errors.ts'
import { checkParameter, formPairs, mediaType, notAForm, parameterName, readText } from '../http.ts'
import { type AuthorizationRequest, startInteraction, issueCodeRedirect, loadSession } from '../interaction/flow.ts'
import { errorPage } from '../pages.ts'
import { Permissions, scopePermission } from '../permissions.ts'
import {
  RESOURCE_PARAMETERS,
  defaultScopesForResources,
  parseResources,
  scopesForResources,
} from '../resource_indicators.ts'
import { parseScope } from '../scopes.ts'
import { verifyIdTokenHint } from '../tokens/id_token_hint.ts'
import { isValidChallenge } from '../tokens/pkce.ts'

/** Raw parameters with the names that were repeated, and every value of the multi-valued ones. */
interface RawParams {
  values: Map<string, string>
  repeated: Set<string>
  /** Non-empty values of the names that may repeat (`RESOURCE_PARAMETERS`), in order. */
  lists: Map<string, string[]>
}

function collect(search: URLSearchParams, maxLength: number): RawParams {
  const values = new Map<string, string>()
  const repeated = new Set<string>()
  const lists = new Map<string, string[]>()
  for (const [name, value] of search) {
    checkParameter(name, value, maxLength)
    // RFC 8707 §2: `resource` may be given once per target.
    if (RESOURCE_PARAMETERS.has(name)) {
      if (value !== '') lists.set(name, [...(lists.get(name) ?? []), value])
      continue
    }
    if (values.has(name)) repeated.add(name)
    if (value !== '') values.set(name, value)
  }
  return { values, repeated, lists }
}

async function readParams(request: Request, ctx: Context): Promise<RawParams> {
  const max = ctx.config.limits.maxParameterLength
  if (request.method === 'POST') {
    if (mediaType(request.headers.get('content-type') ?? '') !== 'application/x-www-form-urlencoded') throw notAForm()
    const body = await readText(request, ctx.config.limits.maxBodyBytes, ctx.config.limits.trustContentLength)
    return collect(formPairs(body), max)
  }
  return collect(new URL(request.url).searchParams, max)
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

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account'])

export async function handleAuthorize(request: Request, ctx: Context): Promise<Response> {
  let raw: RawParams
  try {
    raw = await readParams(request, ctx)
  } catch (err) {
    if (err instanceof OAuthError) return errorPage(ctx.config.theme, err.code, err.message, err.status)
    throw err
  }
  const p = raw.values

  // 1–2: until client and redirect_uri are verified, errors are shown, never redirected.
  const clientId = p.get('client_id')
  if (clientId === undefined || raw.repeated.has('client_id')) {
    return errorPage(ctx.config.theme, 'invalid_request', 'client_id is missing or repeated')
  }
  const client = await ctx.clients.get(clientId)
  if (!client) return errorPage(ctx.config.theme, 'invalid_client', 'the client is unknown')
  const redirectUri = p.get('redirect_uri')
  if (redirectUri === undefined || raw.repeated.has('redirect_uri')) {
    return errorPage(ctx.config.theme, 'invalid_request', 'redirect_uri is missing or repeated')
  }
  if (!client.redirectUris.includes(redirectUri)) {
    return errorPage(ctx.config.theme, 'invalid_request', 'redirect_uri is not registered for this client')
  }

  const state = raw.repeated.has('state') ? undefined : p.get('state')
  const fail = (code: OAuthErrorCode, description: string) => errorRedirect(redirectUri, code, description, state, ctx)

  // 3
  for (const [permission, what] of [
    [Permissions.Endpoints.Authorization, 'the authorization endpoint'],
    [Permissions.GrantTypes.AuthorizationCode, 'the authorization code grant'],
    [Permissions.ResponseTypes.Code, 'response_type code'],
  ] as const) {
    if (!client.permissions.includes(permission)) return fail('unauthorized_client', `the client may not use ${what}`)
  }
  // 4: request objects are not supported, and saying so beats ignoring them (Core §6).
  if (p.has('request')) return fail('request_not_supported', 'the request parameter is not supported')
  if (p.has('request_uri')) return fail('request_uri_not_supported', 'the request_uri parameter is not supported')
  // 5
  const responseType = p.get('response_type')
  if (responseType === undefined) return fail('invalid_request', 'response_type is required')
  if (responseType !== 'code') return fail('unsupported_response_type', 'only response_type code is supported')
  const responseMode = p.get('response_mode')
  if (responseMode !== undefined && responseMode !== 'query')
    return fail('invalid_request', 'only response_mode query is supported')
  // 6: RFC 6749 §3.1, parameters must not be included more than once.
  if (raw.repeated.size > 0) return fail('invalid_request', `${parameterName([...raw.repeated][0] ?? '')} is repeated`)

  // 7
  let scopes: string[]
  let resources: string[]
  try {
    scopes = parseScope(p.get('scope'), ctx.config.limits.maxScopes)
    resources = parseResources(raw.lists.get('resource') ?? [], client, ctx)
  } catch (err) {
    if (err instanceof OAuthError) return fail(err.code, err.message)
    throw err
  }
  // RFC 6749 §3.3: without scope, a request naming resources asks for the scopes of those resources
  // the client is permitted (MCP clients may send no scope); without either, scope is required.
  if (scopes.length === 0) scopes = defaultScopesForResources(client, resources, ctx)
  if (scopes.length === 0) return fail('invalid_scope', 'scope is required')
  const granted: string[] = []
  for (const scope of scopes) {
    if (!ctx.scopes.get(scope)) return fail('invalid_scope', 'scope contains an unknown scope')
    if (scope === 'offline_access') {
      // Core §11: offline_access is ignored unless the client may use refresh tokens.
      if (client.permissions.includes(Permissions.GrantTypes.RefreshToken)) granted.push(scope)
      continue
    }
    if (!client.permissions.includes(scopePermission(scope)))
      return fail('invalid_scope', 'scope contains a scope the client is not allowed')
    granted.push(scope)
  }
  // RFC 8707: with resources, the grant holds only the API scopes of those resources (plus identity
  // scopes and offline_access). A requested scope of another audience is dropped here, not only
  // from the access token: the code and refresh family are bound to the resources and could never
  // issue it, so the end-user is not asked to consent to it and no token response lists it.
  if (resources.length > 0) {
    const kept = scopesForResources(granted, resources, ctx)
    if (kept.length === 0) return fail('invalid_scope', 'scope names no scope of the requested resources')
    granted.splice(0, granted.length, ...kept)
  }

  // 8: PKCE
  const codeChallenge = p.get('code_challenge')
  const method = p.get('code_challenge_method')
  if (codeChallenge === undefined) {
    if (method !== undefined) return fail('invalid_request', 'code_challenge_method without code_challenge')
    if (!isConfidential(client) || client.requirePkce)
      return fail('invalid_request', 'PKCE (code_challenge) is required for this client')
  }
  const challengeMethod = method ?? 'plain' // RFC 7636 §4.3: absent means plain
  if (codeChallenge !== undefined) {
    if (challengeMethod !== 'S256' && challengeMethod !== 'plain')
      return fail('invalid_request', 'code_challenge_method must be S256')
    if (challengeMethod === 'plain' && !client.allowPlainPkce)
      return fail('invalid_request', 'code_challenge_method plain is not allowed; use S256')
    if (!isValidChallenge(codeChallenge)) return fail('invalid_request', 'code_challenge is malformed')
  }

  // 9
  const prompt = (p.get('prompt') ?? '').split(' ').filter((value) => value !== '')
  for (const value of prompt)
    if (!PROMPTS.has(value)) return fail('invalid_request', 'prompt contains an unsupported value')
  if (prompt.includes('none') && prompt.length > 1)
    return fail('invalid_request', 'prompt=none cannot be combined with other values')
  let maxAge: number | undefined
  const rawMaxAge = p.get('max_age')
  if (rawMaxAge !== undefined) {
    if (!/^\d{1,10}$/.test(rawMaxAge)) return fail('invalid_request', 'max_age must be a non-negative integer')
    maxAge = Number(rawMaxAge)
  }
  let hintSub: string | undefined
  const hint = p.get('id_token_hint')
  if (hint !== undefined) {
    const claims = await verifyIdTokenHint(hint, ctx)
    if (!claims) return fail('invalid_request', 'id_token_hint is not a valid ID token of this issuer')
    hintSub = claims.sub
  }

  const authRequest: AuthorizationRequest = {
    clientId,
    redirectUri,
    scopes: granted,
    prompt,
    ...(state !== undefined ? { state } : {}),
    ...(p.get('nonce') !== undefined ? { nonce: p.get('nonce') as string } : {}),
    ...(codeChallenge !== undefined ? { codeChallenge, codeChallengeMethod: challengeMethod as 'S256' | 'plain' } : {}),
    ...(maxAge !== undefined ? { maxAge } : {}),
    ...(p.get('login_hint') !== undefined ? { loginHint: p.get('login_hint') as string } : {}),
    ...(p.get('ui_locales') !== undefined ? { uiLocales: p.get('ui_locales') as string } : {}),
    ...(hintSub !== undefined ? { idTokenHintSub: hintSub } : {}),
    ...(resources.length > 0 ? { resources } : {}),
  }

  const { session } = await loadSession(request, ctx)
  const now = ctx.now()
  const needsLogin =
    !session ||
    prompt.includes('login') ||
    prompt.includes('select_account') ||
    maxAge === 0 || // Core §3.1.2.1: max_age=0 is prompt=login
    (maxAge !== undefined && now - session.authTime > maxAge) ||
    (hintSub !== undefined && hintSub !== session.sub)
  // A client that registered itself asks every time: no earlier consent stands in for it.
  const needsConsent =
    isSelfRegistered(client) ||
    (client.consentType === 'explicit' &&
      (prompt.includes('consent') || !granted.every((scope) => session?.consents[clientId]?.includes(scope))))

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
