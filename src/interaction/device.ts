/**
 * @module interaction/device
 * The end-user's side of a device authorization (RFC 8628 §3.3): the interaction a found user
 * code starts (bound to the browser like an authorization's), its sign-in (a live session, the
 * built-in form or the host's hook, which sees `kind: 'device'`), and the decision on the
 * confirmation page, recorded once (`store.deviceCodes.decide`). The device grant is not tied to
 * the browser session: it gets no `sid` and no entry in the session's `grants` (the approving
 * browser may be a phone; signing it out does not sign the device out).
 */
import { hostOf, isSelfRegistered } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { redirect } from '../protocol/index.ts'
import type { RequestMeta } from '../events/index.ts'
import { errorPage } from '../pages/index.ts'
import { metaOf } from '../security/index.ts'
import type { ClientRecord, DeviceCodeRecord, InteractionRecord, SessionRecord } from '../storage/index.ts'
import { randomToken } from '../crypto/index.ts'
import { formatUserCode } from '../tokens/index.ts'
import type { Authentication } from './request.ts'
import { authenticationOf, browserBinding, checkLogin, loadSession, signedInSession } from './flow.ts'
import { deviceDonePage } from './device_pages.ts'
import { recordApprovedGrant } from './approved_grant.ts'
import type { InteractionResult, PendingInteraction } from '../config/index.ts'

/** What a device interaction's `request` holds. */
export interface DeviceInteractionRequest {
  /** The device authorization's id (`DeviceCodeRecord.id`). */
  deviceId: string
  clientId: string
  scopes: string[]
  /** The normalised user code. */
  userCode: string
}

/** The device request of an interaction of kind `device`. */
export function deviceRequestOf(record: InteractionRecord): DeviceInteractionRequest {
  return record.request as unknown as DeviceInteractionRequest
}

/** The URL of an interaction's step on the verification page. */
export function stepUrl(ctx: Context, uid: string): string {
  return `${ctx.urls.verification}?uid=${encodeURIComponent(uid)}`
}

/** The host's view of a device interaction: always a sign-in (the confirmation is built in). */
export function devicePending(
  record: InteractionRecord,
  client: ClientRecord | undefined,
  session?: SessionRecord,
): PendingInteraction {
  const req = deviceRequestOf(record)
  const pending: PendingInteraction = {
    uid: record.id,
    kind: 'device',
    device: { userCode: formatUserCode(req.userCode) },
    prompt: 'login',
    clientId: req.clientId,
    clientName: client?.displayName ?? req.clientId,
    scopes: [...req.scopes],
    requestedPrompt: [],
    expiresAt: record.expiresAt,
  }
  if (session) pending.session = { sub: session.sub, authTime: session.authTime }
  return pending
}

/**
 * Keeps the browser session for a sign-in, as the authorization flow does: the same end-user's
 * session gets the new authentication; another end-user's is ended and a new one starts. Returns
 * the Set-Cookie of a new session. Nothing of the device grant goes into it.
 */
export async function keepSession(
  auth: Authentication,
  request: Request | undefined,
  ctx: Context,
): Promise<string | undefined> {
  const { session: current } = request ? await loadSession(request, ctx) : {}
  const { session, setCookie } = await signedInSession(auth, current, ctx)
  await ctx.store.sessions.put(session)
  return setCookie
}

/** Records a sign-in on the interaction and sends the browser to the confirmation. */
export async function recordSignIn(
  record: InteractionRecord,
  auth: Authentication,
  request: Request | undefined,
  ctx: Context,
  headers = new Headers(),
): Promise<Response> {
  const cookie = await keepSession(auth, request, ctx)
  if (cookie) headers.append('set-cookie', cookie)
  await ctx.store.interactions.put({ ...record, login: auth })
  return redirect(stepUrl(ctx, record.id), headers)
}

/**
 * Starts the interaction of a pending device authorization found by its user code: bound to this
 * browser, lasting no longer than the device code. A live session skips the sign-in (never the
 * confirmation); otherwise the host's hook or the built-in sign-in form.
 */
export async function startDeviceInteraction(
  request: Request,
  device: DeviceCodeRecord,
  ctx: Context,
): Promise<Response> {
  const binding = await browserBinding(request, ctx)
  const deviceRequest: DeviceInteractionRequest = {
    deviceId: device.id,
    clientId: device.clientId,
    scopes: device.scope.split(' ').filter((scope) => scope !== ''),
    userCode: device.userCode,
  }
  const record: InteractionRecord = {
    id: randomToken(24),
    kind: 'device',
    browserId: binding.id,
    csrf: randomToken(24),
    request: deviceRequest as unknown as Record<string, unknown>,
    expiresAt: Math.min(ctx.now() + ctx.config.interactionTtl, device.expiresAt),
  }
  const { session } = await loadSession(request, ctx)
  if (session) record.login = authenticationOf(session)
  await ctx.store.interactions.put(record)
  const headers = new Headers()
  if (binding.setCookie) headers.append('set-cookie', binding.setCookie)
  const hook = ctx.config.interaction
  if (session || !hook) return redirect(stepUrl(ctx, record.id), headers)

  const outcome = await hook(request, devicePending(record, await ctx.clients.get(device.clientId)))
  if (outcome instanceof Response) {
    if (!binding.setCookie) return outcome
    // Response.redirect() and fetch() responses have immutable headers: copy before adding.
    const response = new Response(outcome.body, outcome)
    response.headers.append('set-cookie', binding.setCookie)
    return response
  }
  return completeDeviceInteraction(record, outcome, request, ctx, headers)
}

/**
 * The host's result for a device interaction (its hook's, or `service.interactions.complete`):
 * a login goes on to the confirmation page (a `consent` is ignored: the end-user confirms on the
 * built-in page); an error denies the device.
 */
export async function completeDeviceInteraction(
  record: InteractionRecord,
  result: InteractionResult,
  request: Request | undefined,
  ctx: Context,
  headers?: Headers,
): Promise<Response> {
  if ('error' in result) {
    const meta = request ? metaOf(request) : undefined
    if ((await decideDevice(record.id, undefined, ctx, meta)) === 'denied')
      return deviceDonePage(ctx.config.theme, false)
    return errorPage(ctx.config.theme, 'invalid_request', 'the code is no longer valid')
  }
  return recordSignIn(record, checkLogin(result.login, ctx), request, ctx, new Headers(headers))
}

/** What a decision came to: recorded as approved or denied, or the code could no longer be decided. */
export type DeviceOutcome = 'approved' | 'denied' | 'invalid'

/**
 * The end-user's decision (`login` set: approved by them; undefined: denied), once: the
 * interaction is taken first, so a second submit finds nothing; then the store decides only a
 * pending, unexpired code (RFC 8628 §3.3).
 */
export async function decideDevice(
  uid: string,
  login: Authentication | undefined,
  ctx: Context,
  meta: RequestMeta | undefined,
): Promise<DeviceOutcome> {
  const record = await ctx.store.interactions.take(uid)
  if (record?.kind !== 'device' || record.expiresAt <= ctx.now()) return 'invalid'
  const req = deviceRequestOf(record)
  const device = await ctx.store.deviceCodes.get(req.deviceId)
  if (!device) return 'invalid'
  const decision = login ? ({ status: 'approved', login } as const) : ({ status: 'denied' } as const)
  if (!(await ctx.store.deviceCodes.decide(device.id, decision, ctx.now()))) return 'invalid'
  if (login) await recordApprovedGrant(device, 'device_code', login, ctx)
  const sub = login?.sub ?? record.login?.sub
  const subjects = { clientId: device.clientId, grantId: device.familyId, ...(sub !== undefined ? { sub } : {}) }
  if (login) ctx.emit(meta, { type: 'device.approved', ...subjects, scope: device.scope })
  else ctx.emit(meta, { type: 'device.denied', ...subjects })
  return login ? 'approved' : 'denied'
}

/** Whether the confirmation shows the self-registration notice, and what it names. */
export function deviceNotice(
  client: ClientRecord | undefined,
): { kind: 'dynamic' | 'metadata_document'; documentHost?: string } | undefined {
  const registration = client?.registration
  if (!client || !registration || !isSelfRegistered(client)) return undefined
  if (registration.kind !== 'metadata_document') return { kind: registration.kind }
  return { kind: 'metadata_document', documentHost: hostOf(registration.documentUrl ?? client.clientId) }
}
