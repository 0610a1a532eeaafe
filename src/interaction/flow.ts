/**
 * @module interaction/flow
 * The steps between a validated authorization request and its code redirect: reading the browser
 * session, starting an interaction (built-in pages or the host's hook), completing it, keeping the
 * session (single sign-on) and issuing the authorization code.
 */
import { isSelfRegistered, selfRegistrationNotice } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { browserCookieName, readCookie, setCookie } from './cookies.ts'
import {
  approvedClaims,
  authorizationError,
  authorizationResponse,
  redirect,
  requestedClaimNames,
  sessionFamilyId,
} from '../protocol/index.ts'
import type { ClientRecord, CodeRecord, InteractionRecord, RequestedClaims, SessionRecord } from '../storage/index.ts'
import { errorPage } from '../pages/index.ts'
import { codeTtl, type InteractionResult, type LoginResult, type PendingInteraction } from '../config/index.ts'
import { randomToken } from '../crypto/index.ts'
import type { RequestMeta } from '../events/index.ts'
import { startBackchannelLogout } from '../logout/index.ts'
import type { Authentication, AuthorizationRequest } from './request.ts'
import { detailsNeedConsent } from './detail_consent.ts'
import { keepSession, updatedGrant } from './code_session.ts'

export { SESSION_GRANTS_MAX } from './code_session.ts'

/**
 * Ends a session: deletes it and revokes the grants started in it without `offline_access` (their codes, refresh tokens
 * and access tokens), as node-oidc-provider and OpenIddict do, then starts the back-channel logout of its clients (in
 * the background: see src/logout/backchannel.ts). `meta` is the request's, for the delivery events.
 */
export async function endSession(session: SessionRecord, ctx: Context, meta?: RequestMeta): Promise<void> {
  await ctx.store.sessions.delete(session.id)
  const until = ctx.now() + ctx.config.refreshTokenFamilyTtl
  for (const familyId of session.grants ?? []) await ctx.store.revocations.revokeFamily(familyId, until)
  // Tokens exchanged from the session's ID tokens end with it too (#39 item 1).
  await ctx.store.revocations.revokeFamily(await sessionFamilyId(session.id, ctx), until)
  startBackchannelLogout(session, ctx, meta)
}

/** The session of the browser that sent `request`, if it has a live one. */
export async function loadSession(request: Request, ctx: Context): Promise<{ session?: SessionRecord }> {
  const value = readCookie(request, ctx.config.cookieName)
  if (value === undefined) return {}
  const session = await ctx.store.sessions.get(await ctx.sha256(value))
  if (!session || session.expiresAt <= ctx.now()) return {}
  return { session }
}

/** The browser-binding id of a request, creating a cookie value when it has none. */
export async function browserBinding(request: Request, ctx: Context): Promise<{ id: string; setCookie?: string }> {
  const existing = readCookie(request, browserCookieName(ctx))
  if (existing !== undefined) return { id: await ctx.sha256(existing) }
  const value = randomToken()
  return {
    id: await ctx.sha256(value),
    setCookie: setCookie(ctx, browserCookieName(ctx), value, ctx.config.sessionTtl),
  }
}

/** The host's view of an interaction. */
export function toPending(
  record: InteractionRecord,
  client: ClientRecord | undefined,
  session?: SessionRecord,
): PendingInteraction {
  const req = record.request as unknown as AuthorizationRequest
  const pending: PendingInteraction = {
    uid: record.id,
    kind: 'authorization',
    prompt: record.login ? 'consent' : 'login',
    clientId: req.clientId,
    clientName: client?.displayName ?? req.clientId,
    scopes: [...req.scopes],
    requestedPrompt: [...req.prompt],
    expiresAt: record.expiresAt,
  }
  if (req.loginHint !== undefined) pending.loginHint = req.loginHint
  if (req.maxAge !== undefined) pending.maxAge = req.maxAge
  if (req.uiLocales !== undefined) pending.uiLocales = req.uiLocales
  if (req.claimsLocales !== undefined) pending.claimsLocales = req.claimsLocales
  if (req.display !== undefined) pending.display = req.display
  if (req.acrValues !== undefined) pending.acrValues = req.acrValues.split(' ').filter((value) => value !== '')
  if (req.authorizationDetails) pending.authorizationDetails = structuredClone(req.authorizationDetails)
  if (req.claims)
    pending.claims = { userinfo: [...(req.claims.userinfo ?? [])], idToken: [...(req.claims.id_token ?? [])] }
  if (session) pending.session = { sub: session.sub, authTime: session.authTime }
  const notice = client && selfRegistrationNotice(client, req.redirectUri)
  if (notice) pending.selfRegistered = notice
  return pending
}

/** Starts a sign-in or consent interaction: the host's hook, or a redirect to the built-in page. */
export async function startInteraction(
  request: Request,
  authRequest: AuthorizationRequest,
  prompt: 'login' | 'consent',
  session: SessionRecord | undefined,
  ctx: Context,
): Promise<Response> {
  const binding = await browserBinding(request, ctx)
  const record: InteractionRecord = {
    id: randomToken(24),
    kind: 'authorization',
    browserId: binding.id,
    csrf: randomToken(24),
    request: authRequest as unknown as Record<string, unknown>,
    expiresAt: ctx.now() + ctx.config.interactionTtl,
  }
  if (prompt === 'consent' && session) {
    record.login = authenticationOf(session)
  }
  await ctx.store.interactions.put(record)
  const headers = new Headers()
  if (binding.setCookie) headers.append('set-cookie', binding.setCookie)

  const hook = ctx.config.interaction
  if (hook) {
    const client = await ctx.clients.get(authRequest.clientId)
    const outcome = await hook(request, toPending(record, client, session))
    if (outcome instanceof Response) {
      if (!binding.setCookie) return outcome
      // Response.redirect() and fetch() responses have immutable headers: copy before adding.
      const response = new Response(outcome.body, outcome)
      response.headers.append('set-cookie', binding.setCookie)
      return response
    }
    return completeInteraction(record.id, outcome, request, ctx, headers)
  }
  return redirect(`${ctx.urls.interaction}?uid=${encodeURIComponent(record.id)}`, headers)
}

/** The authentication of a live session. */
export function authenticationOf(session: SessionRecord): Authentication {
  return {
    sub: session.sub,
    authTime: session.authTime,
    ...(session.acr !== undefined ? { acr: session.acr } : {}),
    ...(session.amr !== undefined ? { amr: session.amr } : {}),
  }
}

/** The host's login result, checked (a TypeError names what is wrong). */
export function checkLogin(login: LoginResult, ctx: Context): Authentication {
  if (typeof login.sub !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(login.sub)) {
    throw new TypeError('login.sub must be 1 to 255 printable ASCII characters')
  }
  const authTime = login.authTime ?? ctx.now()
  if (!Number.isSafeInteger(authTime) || authTime < 0) throw new TypeError('login.authTime must be epoch seconds')
  return {
    sub: login.sub,
    authTime,
    ...(login.acr !== undefined ? { acr: String(login.acr) } : {}),
    ...(Array.isArray(login.amr) ? { amr: login.amr.map(String) } : {}),
  }
}

/**
 * Completes an interaction once (it is taken from the store atomically): an error goes back to
 * the client (a self-registered client's only once the end-user saw the consent page naming its
 * redirect host, RFC 9700 §4.11.2; before that, an error page); a login establishes or refreshes
 * the session and redirects with the code.
 */
export async function completeInteraction(
  uid: string,
  result: InteractionResult,
  request: Request | undefined,
  ctx: Context,
  extraHeaders?: Headers,
): Promise<Response> {
  const record = await ctx.store.interactions.take(uid)
  if (record?.kind !== 'authorization') {
    return errorPage(ctx.config.theme, 'invalid_request', 'the sign-in request has expired or was already used')
  }
  const authRequest = record.request as unknown as AuthorizationRequest
  if ('error' in result) {
    // Confirmed once signed in: the error comes from the consent step (the built-in consent page,
    // which names the redirect host, or the host's hook asked for consent), not the sign-in page.
    const client = await ctx.clients.get(authRequest.clientId)
    const description = result.description ?? 'the request was not approved'
    return authorizationError(authRequest, client, record.login !== undefined, result.error, description, ctx)
  }
  const auth = checkLogin(result.login, ctx)
  // Core §3.1.2.2: the end-user named by id_token_hint must be the one signed in.
  if (authRequest.idTokenHintSub !== undefined && authRequest.idTokenHintSub !== auth.sub) {
    const client = await ctx.clients.get(authRequest.clientId)
    const description = 'the signed-in end-user is not the one of id_token_hint'
    return authorizationError(authRequest, client, result.consent !== undefined, 'login_required', description, ctx)
  }
  if (result.consent === undefined) {
    // A self-registered client is never approved implicitly, nor are authorization details
    // (#41): a host that signed the end-user in without asking consent hands over to the
    // built-in consent page.
    const client = await ctx.clients.get(authRequest.clientId)
    if ((client && isSelfRegistered(client)) || detailsNeedConsent(authRequest)) {
      await ctx.store.interactions.put({ ...record, login: auth })
      return redirect(`${ctx.urls.interaction}?uid=${encodeURIComponent(record.id)}`, new Headers(extraHeaders))
    }
  }
  const consented = consentedScopes(authRequest.scopes, result.consent?.scopes)
  // RFC 6749 §4.1.2.1: a consent to nothing is a denial, never a code without scopes.
  if (consented.length === 0) {
    // Only after a consent (an empty one): the end-user saw the consent step.
    const client = await ctx.clients.get(authRequest.clientId)
    return authorizationError(authRequest, client, true, 'access_denied', 'no scope was approved', ctx)
  }
  const { session } = request ? await loadSession(request, ctx) : {}
  // Claims requested on their own (Core §5.5): every one without a consent step, else those named.
  const consentedClaims =
    result.consent === undefined ? undefined : consentedClaimNames(authRequest.claims, result.consent.claims)
  return issueCodeRedirect({ ...authRequest, scopes: consented }, auth, session, ctx, {
    consented,
    ...(consentedClaims !== undefined ? { consentedClaims } : {}),
    extraHeaders,
  })
}

/** The requested claims a consent names (none when it names none): only names the request asked for. */
function consentedClaimNames(
  requested: RequestedClaims | undefined,
  consent: readonly unknown[] | undefined,
): string[] {
  if (consent === undefined) return []
  if (!Array.isArray(consent)) throw new TypeError('consent.claims must be an array of claim names')
  return requestedClaimNames(requested).filter((name) => consent.includes(name))
}

/**
 * The claims of a claims request that need the end-user's own consent: supported ones
 * (discovery `claims_supported`) that no granted scope releases. Others are never released.
 */
export function claimsNeedingConsent(authRequest: AuthorizationRequest, ctx: Context): string[] {
  const byScopes = ctx.scopes.claims(authRequest.scopes)
  const supported = new Set(ctx.scopes.allClaims())
  return requestedClaimNames(authRequest.claims).filter((name) => !byScopes.has(name) && supported.has(name))
}

/** The claims request as released: claims of the granted scopes, and the others consented to. */
function releasedClaims(
  authRequest: AuthorizationRequest,
  consented: readonly string[] | undefined,
  ctx: Context,
): RequestedClaims | undefined {
  const byScopes = ctx.scopes.claims(authRequest.scopes)
  const own = new Set(claimsNeedingConsent(authRequest, ctx))
  return approvedClaims(
    authRequest.claims,
    (name) => byScopes.has(name) || (own.has(name) && (consented === undefined || consented.includes(name))),
  )
}

/**
 * The scopes the end-user approved: the requested ones the consent names (in request order), or
 * every requested scope when no consent was given. A consent never adds a scope the request did
 * not ask for; identity scopes (`openid`, `profile`, …) are granted only when named too.
 */
export function consentedScopes(requested: readonly string[], consent: readonly unknown[] | undefined): string[] {
  if (consent === undefined) return [...requested]
  if (!Array.isArray(consent)) throw new TypeError('consent.scopes must be an array of scope names')
  return requested.filter((scope) => consent.includes(scope))
}

/**
 * The browser session after a sign-in (not yet stored): the same end-user's session with the new
 * authentication, or a new session (another end-user's is ended) with its Set-Cookie.
 */
export async function signedInSession(
  auth: Authentication,
  current: SessionRecord | undefined,
  ctx: Context,
): Promise<{ session: SessionRecord; setCookie?: string }> {
  if (current && current.sub === auth.sub) {
    const session: SessionRecord = { ...current, authTime: auth.authTime }
    if (auth.acr !== undefined) session.acr = auth.acr
    if (auth.amr !== undefined) session.amr = auth.amr
    return { session }
  }
  if (current) await endSession(current, ctx)
  const cookie = randomToken()
  const session: SessionRecord = {
    id: await ctx.sha256(cookie),
    sid: randomToken(16),
    sub: auth.sub,
    authTime: auth.authTime,
    clients: [],
    consents: {},
    expiresAt: ctx.now() + ctx.config.sessionTtl,
    ...(auth.acr !== undefined ? { acr: auth.acr } : {}),
    ...(auth.amr !== undefined ? { amr: auth.amr } : {}),
  }
  return { session, setCookie: setCookie(ctx, ctx.config.cookieName, cookie, ctx.config.sessionTtl) }
}

/**
 * Keeps the session (creates it, or refreshes the authentication of the same end-user) and
 * redirects to the client with code, state and iss (RFC 6749 §4.1.2, RFC 9207), in the request's
 * response mode. `consentedClaims`: the claims requested on their own that a consent step
 * approved (absent: no consent step was needed, so all of them).
 */
export async function issueCodeRedirect(
  authRequest: AuthorizationRequest,
  auth: Authentication,
  current: SessionRecord | undefined,
  ctx: Context,
  options: { consented?: string[]; consentedClaims?: string[]; extraHeaders?: Headers } = {},
): Promise<Response> {
  const client = await ctx.clients.get(authRequest.clientId)
  if (!client) return errorPage(ctx.config.theme, 'invalid_client', 'the client is unknown')
  const now = ctx.now()
  const headers = new Headers(options.extraHeaders)
  // Grant Management §5.4: a merge or replace is the grant owner's, and the grant still alive.
  const updated = authRequest.grantId === undefined ? undefined : await updatedGrant(authRequest, auth, ctx)
  if (updated === null) {
    const description = 'grant_id has ended or is not of the signed-in end-user'
    return authorizationError(authRequest, client, true, 'invalid_grant_id', description, ctx)
  }
  const { session, setCookie: cookie } = await signedInSession(auth, current, ctx)
  if (cookie) headers.append('set-cookie', cookie)
  // A merge or replace issues into the grant it updates (its family); any other request starts one.
  const familyId = updated?.id ?? randomToken(16)
  await keepSession(session, client.clientId, familyId, updated?.offline ?? false, authRequest, options, ctx)
  const claims = releasedClaims(authRequest, options.consentedClaims, ctx)
  const code = randomToken()
  const record: CodeRecord = {
    id: await ctx.sha256(code),
    familyId,
    ...(updated ? { grantAction: updated.action } : {}),
    clientId: client.clientId,
    redirectUri: authRequest.redirectUri,
    scope: authRequest.scopes.join(' '),
    sub: auth.sub,
    sid: session.sid,
    sessionId: session.id,
    authTime: auth.authTime,
    issuedAt: now,
    // The client's or the service's lifetime, capped by the profile (FAPI 2.0 §5.3.2.1).
    expiresAt: now + codeTtl(client, ctx.config),
    ...(auth.acr !== undefined ? { acr: auth.acr } : {}),
    ...(auth.amr !== undefined ? { amr: auth.amr } : {}),
    ...(authRequest.nonce !== undefined ? { nonce: authRequest.nonce } : {}),
    ...(authRequest.codeChallenge !== undefined
      ? { codeChallenge: authRequest.codeChallenge, codeChallengeMethod: authRequest.codeChallengeMethod ?? 'plain' }
      : {}),
    ...(authRequest.maxAge !== undefined ? { requireAuthTime: true } : {}),
    ...(authRequest.resources?.length ? { resources: authRequest.resources } : {}),
    ...(claims ? { claims } : {}),
    ...(authRequest.authorizationDetails ? { authorizationDetails: authRequest.authorizationDetails } : {}),
    ...(authRequest.dpopJkt !== undefined ? { dpopJkt: authRequest.dpopJkt } : {}),
  }
  await ctx.store.codes.insert(record)
  ctx.issued.codes.set(record)
  const params = new URLSearchParams({ code })
  if (authRequest.state !== undefined) params.set('state', authRequest.state)
  params.set('iss', ctx.config.issuer)
  return authorizationResponse(authRequest.redirectUri, params, authRequest.responseMode ?? 'query', ctx, headers)
}
