/**
 * @module endpoints/interaction
 * The built-in sign-in and consent pages at /connect/interaction (used when the host plugs in no
 * interaction hook). GET shows the form of the pending interaction; POST submits it. Checks:
 * - the interaction exists and has not expired (else an error page)
 * - it belongs to this browser (binding cookie, SameSite=Lax) and the form's csrf token matches
 * - a wrong username or password shows the form again with a message, never a redirect
 * - cancel / deny → access_denied to the client
 */
import { isSelfRegistered, selfRegistrationNotice } from '../clients/index.ts'
import type { Context } from '../context.ts'
import {
  type AuthorizationRequest,
  browserCookieName,
  checkPassword,
  claimsNeedingConsent,
  completeInteraction,
  detailsNeedConsent,
  loadSession,
  readCookie,
} from '../interaction/index.ts'
import { OAuthError } from '../errors.ts'
import { describeAuthorizationDetails } from '../protocol/index.ts'
import { parseParams, readForm } from '../http.ts'
import { consentPage, errorPage, loginPage } from '../pages/index.ts'
import type { InteractionRecord } from '../storage/index.ts'
import { timingSafeEqual } from '../crypto/index.ts'

// The error page adds its hint ("Return to the application and try again"): not said twice here.
const EXPIRED = 'the sign-in request has expired or was already used'

async function isSameBrowser(request: Request, record: InteractionRecord, ctx: Context): Promise<boolean> {
  const value = readCookie(request, browserCookieName(ctx))
  return value !== undefined && timingSafeEqual(await ctx.sha256(value), record.browserId)
}

async function needsConsent(record: InteractionRecord, request: Request, ctx: Context): Promise<boolean> {
  const req = record.request as unknown as AuthorizationRequest
  const client = await ctx.clients.get(req.clientId)
  if (client && isSelfRegistered(client)) return true
  const { session } = await loadSession(request, ctx)
  const same = session && record.login && session.sub === record.login.sub ? session : undefined
  // Authorization details always ask (RFC 9396, #41), whatever the consent type.
  if (detailsNeedConsent(req)) return true
  if (client?.consentType !== 'explicit') return false
  if (req.prompt.includes('consent')) return true
  const given = same?.consents[req.clientId]
  const givenClaims = same?.claimConsents?.[req.clientId]
  return (
    !req.scopes.every((scope) => given?.includes(scope)) ||
    !claimsNeedingConsent(req, ctx).every((claim) => givenClaims?.includes(claim))
  )
}

async function render(
  record: InteractionRecord,
  ctx: Context,
  message?: string,
  username?: string,
  init?: { status: number; headers: Headers },
): Promise<Response> {
  const req = record.request as unknown as AuthorizationRequest
  const client = await ctx.clients.get(req.clientId)
  const common = {
    action: ctx.urls.interaction,
    uid: record.id,
    csrf: record.csrf,
    clientName: client?.displayName ?? req.clientId,
  }
  if (record.login) {
    const notice = client && selfRegistrationNotice(client, req.redirectUri)
    return consentPage(ctx.config.theme, {
      ...common,
      scopes: req.scopes,
      claims: claimsNeedingConsent(req, ctx),
      ...(req.authorizationDetails
        ? { authorizationDetails: describeAuthorizationDetails(req.authorizationDetails, ctx) }
        : {}),
      ...(notice ? { selfRegistered: notice } : {}),
    })
  }
  const name = username ?? req.loginHint
  return loginPage(
    ctx.config.theme,
    {
      ...common,
      ...(message !== undefined ? { message } : {}),
      ...(name !== undefined ? { username: name } : {}),
    },
    init,
  )
}

export async function handleInteraction(request: Request, ctx: Context): Promise<Response> {
  // HEAD is routed here as GET (handler.ts): it must show the page, not read a form.
  if (request.method === 'GET' || request.method === 'HEAD') {
    let query: Map<string, string>
    try {
      query = parseParams(new URL(request.url).search.slice(1), ctx.config.limits.maxParameterLength)
    } catch (err) {
      if (err instanceof OAuthError) return errorPage(ctx.config.theme, err.code, err.message, err.status)
      throw err
    }
    const uid = query.get('uid')
    const record = uid ? await ctx.store.interactions.get(uid) : undefined
    if (record?.kind !== 'authorization') return errorPage(ctx.config.theme, 'invalid_request', EXPIRED)
    if (!(await isSameBrowser(request, record, ctx))) {
      return errorPage(ctx.config.theme, 'invalid_request', 'this sign-in was started in another browser', 403)
    }
    return render(record, ctx)
  }

  let form: Map<string, string>
  try {
    form = await readForm(request, ctx.config.limits)
  } catch (err) {
    if (err instanceof OAuthError) return errorPage(ctx.config.theme, err.code, err.message, err.status)
    throw err
  }
  const uid = form.get('uid')
  const record = uid ? await ctx.store.interactions.get(uid) : undefined
  if (record?.kind !== 'authorization') return errorPage(ctx.config.theme, 'invalid_request', EXPIRED)
  // CSRF: the form's token must match, and the browser must be the one that started the flow.
  if (!timingSafeEqual(form.get('csrf') ?? '', record.csrf) || !(await isSameBrowser(request, record, ctx))) {
    return errorPage(ctx.config.theme, 'invalid_request', 'the form could not be verified (CSRF check failed)', 403)
  }
  const decision = form.get('decision')
  if (decision === 'cancel' || decision === 'deny') {
    const description = decision === 'cancel' ? 'the end-user cancelled the sign-in' : 'the end-user denied the request'
    return completeInteraction(record.id, { error: 'access_denied', description }, request, ctx)
  }

  if (form.get('action') === 'consent') {
    if (!record.login || decision !== 'allow') return render(record, ctx)
    // Exactly the scopes and claims the page listed (render() shows every scope of the stored
    // request and every claim it asks for that no scope releases).
    const req = record.request as unknown as AuthorizationRequest
    const consent = { scopes: req.scopes, claims: claimsNeedingConsent(req, ctx) }
    return completeInteraction(record.id, { login: record.login, consent }, request, ctx)
  }

  const username = form.get('username')
  const password = form.get('password')
  if (username === undefined || password === undefined) {
    return render(record, ctx, 'Enter your username and password.', username)
  }
  const clientId = String((record.request as { clientId?: unknown }).clientId)
  const outcome = await checkPassword(request, ctx, clientId, username, password)
  if (!('login' in outcome)) return render(record, ctx, outcome.message, username, outcome.init)
  const { login } = outcome
  if (await needsConsent({ ...record, login }, request, ctx)) {
    await ctx.store.interactions.put({ ...record, login })
    return render({ ...record, login }, ctx)
  }
  return completeInteraction(record.id, { login }, request, ctx)
}
