/**
 * @module endpoints/logout
 * OpenID Connect RP-Initiated Logout 1.0, GET and POST /connect/logout. Checks, in order:
 * - parameters once each (else an error page)
 * - an id_token_hint must be an ID token we signed (alg none or foreign keys: error page)
 * - client_id, when sent with a hint, must be one of the hint's audiences
 * - the client needs `ept:logout`
 * - post_logout_redirect_uri needs a valid hint and must exactly match one registered for that
 *   client (§3); otherwise no redirect happens
 * - without a hint, or with a hint for another end-user or another session (its `sid`) than the
 *   current one, the end-user confirms on a CSRF-protected page first (§2)
 * - a redirect to a self-registered client's post_logout_redirect_uri (a metadata document names
 *   any it likes, and hints are accepted long after they expire) always waits for that page, which
 *   names the client and the target host; without a session the page only offers to continue
 *   (RFC 9700 §4.11.2, open redirector; #27 item 3)
 * Ending the session deletes it from the store, revokes the grants made in it without
 * `offline_access` (their refresh and access tokens), sends back-channel logout tokens to its
 * clients in the background (src/logout/backchannel.ts) and clears the cookie; a
 * logout without a session is not an error (§4).
 */
import { hostOf, isSelfRegistered, Permissions } from '../clients/index.ts'
import type { Context } from '../context.ts'
import {
  browserBinding,
  browserCookieName,
  endSession,
  loadSession,
  readCookie,
  setCookie,
} from '../interaction/index.ts'
import { OAuthError } from '../errors.ts'
import { parseParams, readForm } from '../http.ts'
import { errorPage, logoutConfirmPage, page, signedOutPage } from '../pages/index.ts'
import type { InteractionRecord, SessionRecord } from '../storage/index.ts'
import { randomToken, timingSafeEqual } from '../crypto/index.ts'
import { appendQuery, redirect, verifyIdTokenHint } from '../protocol/index.ts'
import { metaOf } from '../security/index.ts'

async function readParams(request: Request, ctx: Context): Promise<Map<string, string>> {
  if (request.method === 'POST') return readForm(request, ctx.config.limits)
  return parseParams(new URL(request.url).search.slice(1), ctx.config.limits.maxParameterLength)
}

/** Ends a browser session: the store, its grants, back-channel logout, the `session.ended` event. */
async function endBrowserSession(
  session: SessionRecord,
  ctx: Context,
  request: Request,
  clientId?: string,
): Promise<void> {
  await endSession(session, ctx, metaOf(request))
  ctx.emit(metaOf(request), {
    type: 'session.ended',
    sub: session.sub,
    sid: session.sid,
    ...(clientId !== undefined ? { clientId } : {}),
  })
}

/** The `Set-Cookie` value that clears the session cookie. */
function clearedSessionCookie(ctx: Context): string {
  return setCookie(ctx, ctx.config.cookieName, 'deleted-session-cookie', 0)
}

/**
 * The host's sign-out (`service.sessions.end(request)`): ends the session of the browser that sent
 * `request`, as RP-Initiated Logout does (grants revoked, back-channel logout tokens sent), and
 * gives the `Set-Cookie` value that clears its cookie.
 */
export async function endRequestSession(
  request: Request,
  ctx: Context,
): Promise<{ ended: boolean; sub?: string; sid?: string; setCookie: string }> {
  const { session } = await loadSession(request, ctx)
  if (session) await endBrowserSession(session, ctx, request)
  return {
    ended: session !== undefined,
    ...(session ? { sub: session.sub, sid: session.sid } : {}),
    setCookie: clearedSessionCookie(ctx),
  }
}

/**
 * The host's `service.sessions.endAll(sub)`: ends every live session of an end-user (after a
 * password change, a lock-out), each as RP-Initiated Logout does. Resolves how many it ended.
 */
export async function endSubjectSessions(sub: string, ctx: Context): Promise<number> {
  if (typeof sub !== 'string' || sub === '') throw new TypeError('sub: must be a non-empty string')
  const list = ctx.store.sessions.listBySub
  if (!list) throw new TypeError('sessions.endAll needs a store with sessions.listBySub (every built-in store has it)')
  const sessions = await list.call(ctx.store.sessions, sub)
  for (const session of sessions) {
    await endSession(session, ctx)
    ctx.emit(undefined, { type: 'session.ended', sub: session.sub, sid: session.sid })
  }
  return sessions.length
}

/** Ends the session (if any) and answers with a redirect or the signed-out page. */
async function signOut(
  session: SessionRecord | undefined,
  target: string | undefined,
  ctx: Context,
  request: Request,
  clientId?: string,
): Promise<Response> {
  if (session) await endBrowserSession(session, ctx, request, clientId)
  const headers = new Headers({ 'set-cookie': clearedSessionCookie(ctx) })
  return target !== undefined ? redirect(target, headers) : signedOutPage(ctx.config.theme, { headers })
}

function audiences(aud: string | string[]): string[] {
  return Array.isArray(aud) ? aud : [aud]
}

async function handleConfirmation(form: Map<string, string>, request: Request, ctx: Context): Promise<Response> {
  const record = await ctx.store.interactions.get(form.get('uid') ?? '')
  const browser = readCookie(request, browserCookieName(ctx))
  if (
    record?.kind !== 'logout' ||
    !timingSafeEqual(form.get('csrf') ?? '', record.csrf) ||
    browser === undefined ||
    !timingSafeEqual(await ctx.sha256(browser), record.browserId)
  ) {
    return errorPage(ctx.config.theme, 'invalid_request', 'the sign-out form could not be verified; try again', 403)
  }
  await ctx.store.interactions.take(record.id)
  if (form.get('decision') !== 'yes')
    return page(ctx.config.theme, 'Still signed in', '<p>You are still signed in.</p>')
  const { session } = await loadSession(request, ctx)
  const target = typeof record.request.target === 'string' ? record.request.target : undefined
  const clientId = typeof record.request.clientId === 'string' ? record.request.clientId : undefined
  return signOut(session, target, ctx, request, clientId)
}

export async function handleLogout(request: Request, ctx: Context): Promise<Response> {
  let params: Map<string, string>
  try {
    params = await readParams(request, ctx)
  } catch (err) {
    if (err instanceof OAuthError) return errorPage(ctx.config.theme, err.code, err.message, err.status)
    throw err
  }
  if (request.method === 'POST' && params.has('uid') && params.has('confirm')) {
    return handleConfirmation(params, request, ctx)
  }
  const theme = ctx.config.theme
  const hintValue = params.get('id_token_hint')
  const hint = hintValue === undefined ? undefined : await verifyIdTokenHint(hintValue, ctx)
  if (hintValue !== undefined && !hint)
    return errorPage(theme, 'invalid_request', 'id_token_hint is not a valid ID token of this issuer')
  let clientId = params.get('client_id')
  if (hint) {
    const aud = audiences(hint.aud)
    if (clientId !== undefined && !aud.includes(clientId)) {
      return errorPage(theme, 'invalid_request', 'client_id is not an audience of id_token_hint')
    }
    clientId ??= typeof hint.azp === 'string' ? hint.azp : aud[0]
  }
  const client = clientId === undefined ? undefined : await ctx.clients.get(clientId)
  if (clientId !== undefined && !client) return errorPage(theme, 'invalid_client', 'the client is unknown')
  if (client && !client.permissions.includes(Permissions.Endpoints.Logout)) {
    return errorPage(theme, 'unauthorized_client', 'the client may not use the logout endpoint')
  }

  let target: string | undefined
  const plru = params.get('post_logout_redirect_uri')
  if (plru !== undefined) {
    if (!hint) return errorPage(theme, 'invalid_request', 'post_logout_redirect_uri requires id_token_hint')
    // RPL §3: redirect only to a URI registered for this client, compared exactly.
    if (!client?.postLogoutRedirectUris.includes(plru)) {
      return errorPage(theme, 'invalid_request', 'post_logout_redirect_uri is not registered for this client')
    }
    const state = params.get('state')
    target = state === undefined ? plru : appendQuery(plru, new URLSearchParams({ state }))
  }

  const { session } = await loadSession(request, ctx)
  // The hint vouches for its own session only: a later session of the same end-user (the hinted
  // one already ended) is not ended without asking (#17.10).
  const confirmed =
    hint !== undefined &&
    (!session || (session.sub === hint.sub && (typeof hint.sid !== 'string' || hint.sid === session.sid)))
  // RFC 9700 §4.11.2: a self-registered client's URI is not one the service trusts; the browser
  // goes there only after a page that names the host (#27 item 3).
  const unreviewed = target !== undefined && client !== undefined && isSelfRegistered(client)
  if (!unreviewed && (!session || confirmed)) return signOut(session, target, ctx, request, clientId)

  // RPL §2: ask the end-user before logging out on an unverified request.
  const binding = await browserBinding(request, ctx)
  const record: InteractionRecord = {
    id: randomToken(24),
    kind: 'logout',
    browserId: binding.id,
    csrf: randomToken(24),
    request: {
      ...(target !== undefined ? { target } : {}),
      ...(clientId !== undefined ? { clientId } : {}),
    },
    expiresAt: ctx.now() + ctx.config.interactionTtl,
  }
  await ctx.store.interactions.put(record)
  const response = logoutConfirmPage(theme, {
    action: ctx.urls.logout,
    uid: record.id,
    csrf: record.csrf,
    signedIn: session !== undefined,
    ...(unreviewed && client ? { redirect: { clientName: client.displayName, host: hostOf(plru as string) } } : {}),
  })
  if (binding.setCookie) response.headers.append('set-cookie', binding.setCookie)
  return response
}
