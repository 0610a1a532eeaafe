/**
 * @module interaction/ciba_approval
 * The CIBA approval page (OpenID CIBA Core 1.0 §7.2) at /connect/ciba/approve. The link the
 * end-user got (`ciba.notify`) carries an opaque reference, not the `auth_req_id`. Steps:
 * - GET `?ref=`: the pending request it names (else an error page) starts an interaction bound to
 *   this browser (as the device verification does), lasting no longer than the request; a live
 *   session signs the end-user in; then the browser goes to `?uid=`
 * - GET `?uid=`: the built-in sign-in form, or, signed in, the confirmation (client, scopes, binding
 *   message). Only the end-user the request names may decide: anyone else gets an error page and
 *   no decision is recorded
 * - POST (`uid`, `csrf`, same browser): a sign-in (the built-in form's checks and throttling), or
 *   the decision, once: the interaction is taken first, then the store decides a pending request
 * With the host's `interaction` hook and no session here, the hook signs the end-user in
 * (`kind: 'ciba'`), then the built-in confirmation follows; a host may also decide through
 * `service.ciba.decide` (its own app).
 */
import type { Context } from '../context.ts'
import { describeAuthorizationDetails, redirect } from '../protocol/index.ts'
import { errorPage, loginPage, textsOf } from '../pages/index.ts'
import { metaOf } from '../security/index.ts'
import type { AuthorizationDetail, CibaRequestRecord, ClientRecord, InteractionRecord } from '../storage/index.ts'
import type { InteractionResult, PendingInteraction } from '../config/index.ts'
import { randomToken, timingSafeEqual } from '../crypto/index.ts'
import { cibaRequestOfReference, recordCibaDecision } from './ciba.ts'
import { cibaConfirmPage, cibaDonePage } from './ciba_pages.ts'
import { browserCookieName, readCookie } from './cookies.ts'
import { deviceNotice, keepSession } from './device.ts'
import { authenticationOf, browserBinding, checkLogin, loadSession } from './flow.ts'
import { checkPassword } from './password.ts'
import type { Authentication } from './request.ts'

const EXPIRED = 'this request has expired or was already decided'
const CSRF = 'the form could not be verified (CSRF check failed)'

/** The approval page's URL of an interaction's step. */
function stepUrl(ctx: Context, uid: string): string {
  return `${ctx.urls.cibaApproval}?uid=${encodeURIComponent(uid)}`
}

/** The CIBA request of a live `ciba` interaction, still pending; else undefined. */
async function pendingOf(record: InteractionRecord | undefined, ctx: Context): Promise<CibaRequestRecord | undefined> {
  if (record?.kind !== 'ciba' || record.expiresAt <= ctx.now()) return undefined
  const ciba = await ctx.store.cibaRequests.get(String(record.request.cibaId))
  return ciba?.status === 'pending' && ciba.expiresAt > ctx.now() ? ciba : undefined
}

async function isSameBrowser(request: Request, record: InteractionRecord, ctx: Context): Promise<boolean> {
  const value = readCookie(request, browserCookieName(ctx))
  return value !== undefined && timingSafeEqual(await ctx.sha256(value), record.browserId)
}

/** GET `?ref=`: starts the interaction of the request the reference names. */
export async function startCibaApproval(request: Request, reference: string, ctx: Context): Promise<Response> {
  const ciba = await cibaRequestOfReference(reference, ctx)
  if (ciba?.status !== 'pending') return errorPage(ctx.config.theme, 'invalid_request', EXPIRED)
  const binding = await browserBinding(request, ctx)
  const record: InteractionRecord = {
    id: randomToken(24),
    kind: 'ciba',
    browserId: binding.id,
    csrf: randomToken(24),
    request: { cibaId: ciba.id, clientId: ciba.clientId },
    expiresAt: Math.min(ctx.now() + ctx.config.interactionTtl, ciba.expiresAt),
  }
  const { session } = await loadSession(request, ctx)
  if (session) record.login = authenticationOf(session)
  await ctx.store.interactions.put(record)
  const headers = new Headers()
  if (binding.setCookie) headers.append('set-cookie', binding.setCookie)
  const hook = ctx.config.interaction
  if (session || !hook) return redirect(stepUrl(ctx, record.id), headers)
  const outcome = await hook(request, cibaPending(record, ciba, await ctx.clients.get(ciba.clientId)))
  if (!(outcome instanceof Response)) return completeCibaInteraction(record, outcome, request, ctx, headers)
  if (!binding.setCookie) return outcome
  // Response.redirect() and fetch() responses have immutable headers: copy before adding.
  const response = new Response(outcome.body, outcome)
  response.headers.append('set-cookie', binding.setCookie)
  return response
}

/** The host's view of a CIBA interaction: always a sign-in (the confirmation is built in). */
export function cibaPending(
  record: InteractionRecord,
  ciba: CibaRequestRecord,
  client: ClientRecord | undefined,
): PendingInteraction {
  return {
    uid: record.id,
    kind: 'ciba',
    ciba: { sub: ciba.sub, ...(ciba.bindingMessage !== undefined ? { bindingMessage: ciba.bindingMessage } : {}) },
    prompt: 'login',
    clientId: ciba.clientId,
    clientName: client?.displayName ?? ciba.clientId,
    scopes: ciba.scope.split(' '),
    requestedPrompt: [],
    loginHint: ciba.sub,
    expiresAt: record.expiresAt,
  }
}

/**
 * The host's result for a CIBA interaction (its hook's, or `service.interactions.complete`): a
 * login goes on to the confirmation page (where only the named end-user may decide); an error
 * ends the interaction, and denies the request only when the named end-user had signed in to it
 * (anyone else who holds the link cannot cancel someone's request: it stays pending).
 */
export async function completeCibaInteraction(
  record: InteractionRecord,
  result: InteractionResult,
  request: Request | undefined,
  ctx: Context,
  headers = new Headers(),
): Promise<Response> {
  const { theme } = ctx.config
  if ('error' in result) {
    const ciba = await pendingOf(record, ctx)
    const taken = ciba && (await ctx.store.interactions.take(record.id))
    if (!ciba || !taken) return errorPage(theme, 'invalid_request', EXPIRED)
    if (record.login?.sub !== ciba.sub) {
      return errorPage(theme, 'access_denied', 'the sign-in did not complete: nothing was decided', 403)
    }
    const outcome = await recordCibaDecision(ciba, undefined, ctx, request ? metaOf(request) : undefined)
    return outcome === 'invalid' ? errorPage(theme, 'invalid_request', EXPIRED) : cibaDonePage(theme, false)
  }
  const auth = checkLogin(result.login, ctx)
  await ctx.store.interactions.put({ ...record, login: auth })
  return redirect(stepUrl(ctx, record.id), headers)
}

/** The page of the interaction's step: the sign-in form, or (the right end-user signed in) the confirmation. */
export async function cibaApprovalStep(
  request: Request,
  uid: string,
  ctx: Context,
  login?: { message: string; username?: string; init?: { status: number; headers: Headers } },
): Promise<Response> {
  const { theme } = ctx.config
  const record = await ctx.store.interactions.get(uid)
  const ciba = await pendingOf(record, ctx)
  if (!record || !ciba) return errorPage(theme, 'invalid_request', EXPIRED)
  if (!(await isSameBrowser(request, record, ctx))) {
    return errorPage(theme, 'invalid_request', 'this approval was started in another browser', 403)
  }
  const client = await ctx.clients.get(ciba.clientId)
  const common = {
    action: ctx.urls.cibaApproval,
    uid: record.id,
    csrf: record.csrf,
    clientName: client?.displayName ?? ciba.clientId,
  }
  if (record.login) {
    if (record.login.sub !== ciba.sub) return errorPage(theme, 'access_denied', wrongUser(ctx), 403)
    const scopes = ciba.scope.split(' ')
    const details = (ciba.authorizationDetails ?? []) as AuthorizationDetail[]
    const notice = deviceNotice(client)
    return cibaConfirmPage(theme, {
      ...common,
      ...(notice ? { selfRegistered: notice } : {}),
      scopes,
      authorizationDetails: describeAuthorizationDetails(details, ctx),
      ...(ciba.bindingMessage !== undefined ? { bindingMessage: ciba.bindingMessage } : {}),
    })
  }
  if (ctx.config.interaction)
    return errorPage(theme, 'login_required', 'sign in to this service first, then open the link again')
  const input = {
    ...common,
    ...(login?.message !== undefined ? { message: login.message } : {}),
    ...(login?.username !== undefined ? { username: login.username } : {}),
  }
  return loginPage(theme, input, login?.init)
}

/** The wrong-user message of the theme. */
function wrongUser(ctx: Context): string {
  return textsOf(ctx.config.theme).cibaWrongUser
}

/** The decision, once: the interaction is taken first (a second submit finds nothing). */
async function decide(request: Request, record: InteractionRecord, approve: boolean, ctx: Context): Promise<Response> {
  const { theme } = ctx.config
  const login = record.login
  const ciba = await pendingOf(record, ctx)
  if (!login || !ciba) return cibaApprovalStep(request, record.id, ctx)
  if (login.sub !== ciba.sub) return errorPage(theme, 'access_denied', wrongUser(ctx), 403)
  const taken = await ctx.store.interactions.take(record.id)
  if (!taken) return errorPage(theme, 'invalid_request', EXPIRED)
  const outcome = await recordCibaDecision(ciba, approve ? login : undefined, ctx, metaOf(request))
  return outcome === 'invalid'
    ? errorPage(theme, 'invalid_request', EXPIRED)
    : cibaDonePage(theme, outcome === 'approved')
}

/** Records a sign-in on the interaction and goes back to its step. */
async function signedIn(
  request: Request,
  record: InteractionRecord,
  auth: Authentication,
  ctx: Context,
): Promise<Response> {
  const headers = new Headers()
  const cookie = await keepSession(auth, request, ctx)
  if (cookie) headers.append('set-cookie', cookie)
  await ctx.store.interactions.put({ ...record, login: auth })
  return redirect(stepUrl(ctx, record.id), headers)
}

/** POST: the sign-in form or the decision (CSRF token and the browser binding checked first). */
export async function submitCibaApproval(request: Request, form: Map<string, string>, ctx: Context): Promise<Response> {
  const { theme } = ctx.config
  const uid = form.get('uid') ?? ''
  const record = await ctx.store.interactions.get(uid)
  if (record?.kind !== 'ciba' || record.expiresAt <= ctx.now()) return errorPage(theme, 'invalid_request', EXPIRED)
  if (!timingSafeEqual(form.get('csrf') ?? '', record.csrf) || !(await isSameBrowser(request, record, ctx))) {
    return errorPage(theme, 'invalid_request', CSRF, 403)
  }
  const decision = form.get('decision')
  if (form.get('action') === 'confirm' && (decision === 'approve' || decision === 'deny')) {
    return decide(request, record, decision === 'approve', ctx)
  }
  if (record.login || ctx.config.interaction) return cibaApprovalStep(request, uid, ctx)
  const username = form.get('username')
  const password = form.get('password')
  if (username === undefined || password === undefined) {
    return cibaApprovalStep(request, uid, ctx, { message: 'Enter your username and password.' })
  }
  const outcome = await checkPassword(request, ctx, String(record.request.clientId), username, password)
  if (!('login' in outcome)) {
    return cibaApprovalStep(request, uid, ctx, {
      message: outcome.message,
      username,
      ...(outcome.init ? { init: outcome.init } : {}),
    })
  }
  return signedIn(request, record, outcome.login, ctx)
}
