/**
 * @module endpoints/verify
 * The verification page of the device authorization grant (RFC 8628 §3.3) at /connect/verify.
 * GET: the user-code form (prefilled from `user_code`, as `verification_uri_complete` sends it),
 * or with `uid` the current step of a device interaction. POST: a user code (see
 * interaction/device_user_code.ts), or a step's form. Checks of a step's form:
 * - the interaction exists, is a device's and has not expired (else an error page)
 * - it belongs to this browser (binding cookie) and the form's csrf token matches
 * - the sign-in is the built-in one (with the host's hook the host signs in)
 * - the device code is still pending: a decided or expired one says the code is no longer valid
 * The confirmation always follows the sign-in, whatever the client's consent setting.
 */
import type { Context } from '../context.ts'
import {
  browserCookieName,
  checkPassword,
  decideDevice,
  deviceConfirmPage,
  deviceDonePage,
  deviceNotice,
  type DeviceOutcome,
  deviceRequestOf,
  isUserCodeFormGenuine,
  readCookie,
  recordSignIn,
  submitUserCode,
  userCodeForm,
} from '../interaction/index.ts'
import { OAuthError } from '../errors.ts'
import { parseParams, readForm } from '../http.ts'
import { errorPage, loginPage, textsOf } from '../pages/index.ts'
import { metaOf } from '../security/index.ts'
import type { InteractionRecord } from '../storage/index.ts'
import { timingSafeEqual } from '../crypto/index.ts'
import { formatUserCode } from '../tokens/index.ts'

// The error page adds its hint ("Return to the application and try again"): not said twice here.
const EXPIRED = 'the sign-in request has expired or was already used'
const CSRF = 'the form could not be verified (CSRF check failed)'

/** The live device interaction `uid` names. */
async function loadRecord(uid: string | undefined, ctx: Context): Promise<InteractionRecord | undefined> {
  const record = uid ? await ctx.store.interactions.get(uid) : undefined
  return record?.kind === 'device' && record.expiresAt > ctx.now() ? record : undefined
}

async function isSameBrowser(request: Request, record: InteractionRecord, ctx: Context): Promise<boolean> {
  const value = readCookie(request, browserCookieName(ctx))
  return value !== undefined && timingSafeEqual(await ctx.sha256(value), record.browserId)
}

/** The form again, saying the code can no longer be decided (expired, or decided meanwhile). */
function noLongerValid(request: Request, ctx: Context): Promise<Response> {
  return userCodeForm(request, ctx, { message: textsOf(ctx.config.theme).userCodeExpired }, { status: 400 })
}

/** The page of the interaction's step: the built-in sign-in, or (signed in) the confirmation. */
async function showStep(
  request: Request,
  record: InteractionRecord,
  ctx: Context,
  login?: { message: string; username?: string; init?: { status: number; headers: Headers } },
): Promise<Response> {
  const req = deviceRequestOf(record)
  const device = await ctx.store.deviceCodes.get(req.deviceId)
  if (device?.status !== 'pending' || device.expiresAt <= ctx.now()) return noLongerValid(request, ctx)
  const client = await ctx.clients.get(req.clientId)
  const common = {
    action: ctx.urls.verification,
    uid: record.id,
    csrf: record.csrf,
    clientName: client?.displayName ?? req.clientId,
  }
  if (record.login) {
    const notice = deviceNotice(client)
    const input = { ...common, scopes: req.scopes, userCode: formatUserCode(req.userCode) }
    return deviceConfirmPage(ctx.config.theme, notice ? { ...input, selfRegistered: notice } : input)
  }
  if (ctx.config.interaction) return errorPage(ctx.config.theme, 'invalid_request', 'the sign-in has not completed')
  const input = {
    ...common,
    ...(login?.message !== undefined ? { message: login.message } : {}),
    ...(login?.username !== undefined ? { username: login.username } : {}),
  }
  return loginPage(ctx.config.theme, input, login?.init)
}

async function outcomePage(outcome: DeviceOutcome, request: Request, ctx: Context): Promise<Response> {
  return outcome === 'invalid' ? noLongerValid(request, ctx) : deviceDonePage(ctx.config.theme, outcome === 'approved')
}

export async function handleVerification(request: Request, ctx: Context): Promise<Response> {
  const { theme } = ctx.config
  // HEAD is routed here as GET (handler.ts): it must show the page, not read a form.
  if (request.method === 'GET' || request.method === 'HEAD') {
    let query: Map<string, string>
    try {
      query = parseParams(new URL(request.url).search.slice(1), ctx.config.limits.maxParameterLength)
    } catch (err) {
      if (err instanceof OAuthError) return errorPage(theme, err.code, err.message, err.status)
      throw err
    }
    const uid = query.get('uid')
    if (uid === undefined) {
      const userCode = query.get('user_code')
      return userCodeForm(request, ctx, userCode !== undefined ? { userCode } : {})
    }
    const record = await loadRecord(uid, ctx)
    if (!record) return errorPage(theme, 'invalid_request', EXPIRED)
    if (!(await isSameBrowser(request, record, ctx))) {
      return errorPage(theme, 'invalid_request', 'this sign-in was started in another browser', 403)
    }
    return showStep(request, record, ctx)
  }

  let form: Map<string, string>
  try {
    form = await readForm(request, ctx.config.limits)
  } catch (err) {
    if (err instanceof OAuthError) return errorPage(theme, err.code, err.message, err.status)
    throw err
  }
  const uid = form.get('uid')
  if (uid === undefined) {
    if (!(await isUserCodeFormGenuine(request, form.get('csrf'), ctx)))
      return errorPage(theme, 'invalid_request', CSRF, 403)
    return submitUserCode(request, form.get('user_code') ?? '', ctx)
  }
  const record = await loadRecord(uid, ctx)
  if (!record) return errorPage(theme, 'invalid_request', EXPIRED)
  // CSRF: the form's token must match, and the browser must be the one that started the flow.
  if (!timingSafeEqual(form.get('csrf') ?? '', record.csrf) || !(await isSameBrowser(request, record, ctx))) {
    return errorPage(theme, 'invalid_request', CSRF, 403)
  }
  const meta = metaOf(request)
  const decision = form.get('decision')
  if (form.get('action') === 'confirm') {
    if (!record.login || (decision !== 'approve' && decision !== 'deny')) return showStep(request, record, ctx)
    return outcomePage(
      await decideDevice(record.id, decision === 'approve' ? record.login : undefined, ctx, meta),
      request,
      ctx,
    )
  }
  // Cancelling the sign-in denies the device, as cancelling an authorization denies the client.
  if (decision === 'cancel') return outcomePage(await decideDevice(record.id, undefined, ctx, meta), request, ctx)
  // Signed in already, or the host signs in (its hook): no password is taken here.
  if (record.login || ctx.config.interaction) return showStep(request, record, ctx)
  const username = form.get('username')
  const password = form.get('password')
  if (username === undefined || password === undefined) {
    const message = 'Enter your username and password.'
    return showStep(request, record, ctx, { message, ...(username !== undefined ? { username } : {}) })
  }
  const outcome = await checkPassword(request, ctx, deviceRequestOf(record).clientId, username, password)
  if (!('login' in outcome)) {
    return showStep(request, record, ctx, {
      message: outcome.message,
      username,
      ...(outcome.init ? { init: outcome.init } : {}),
    })
  }
  return recordSignIn(record, outcome.login, request, ctx)
}
