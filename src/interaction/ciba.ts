/**
 * @module interaction/ciba
 * The end-user's side of a CIBA request (OpenID CIBA Core 1.0 §7.2, §8): reaching them (the host's
 * `ciba.notify` hook, with the approval page's URL, whose opaque reference is not the
 * `auth_req_id`), and recording their decision once (`store.cibaRequests.decide`), only by the
 * end-user the request's hint named, then pinging a ping-mode client (ciba_ping.ts). The approval
 * page and `service.ciba.decide` both decide through `decideCiba`.
 */
import type { Context } from '../context.ts'
import type { RequestMeta } from '../events/index.ts'
import type { CibaRequestRecord, ClientRecord } from '../storage/index.ts'
import { recordApprovedGrant } from './approved_grant.ts'
import { startCibaPing } from './ciba_ping.ts'

/** The approval page's URL for a reference. */
export function cibaApprovalUrl(ctx: Context, reference: string): string {
  return `${ctx.urls.cibaApproval}?ref=${encodeURIComponent(reference)}`
}

/**
 * Reaches the end-user through the `ciba.notify` hook: false when the host refused the request
 * (access_denied); a hook that throws is a failure to reach them, reported as an event (the
 * request stands: the end-user may still be told another way). Without a hook, nothing is sent.
 */
export async function notifyUser(
  record: CibaRequestRecord,
  asked: {
    user: { sub: string; claims: Record<string, unknown> }
    client: ClientRecord
    approval: string
    meta: RequestMeta
  },
  ctx: Context,
): Promise<boolean> {
  const notify = ctx.config.ciba.notify
  if (!notify) {
    if (ctx.config.ciba.notifyUrl !== undefined) startNotifyPost(record, asked, ctx)
    return true
  }
  try {
    const answer = await notify({
      user: { sub: asked.user.sub, claims: asked.user.claims },
      client: {
        clientId: asked.client.clientId,
        ...(asked.client.displayName ? { name: asked.client.displayName } : {}),
      },
      scopes: record.scope.split(' '),
      ...(record.bindingMessage !== undefined ? { bindingMessage: record.bindingMessage } : {}),
      ...(record.authorizationDetails ? { authorizationDetails: record.authorizationDetails } : {}),
      approvalUrl: cibaApprovalUrl(ctx, asked.approval),
      expiresAt: record.expiresAt,
    })
    return answer !== false
  } catch (err) {
    ctx.logger.warn('ciba.notify failed', { clientId: record.clientId, err })
    ctx.emit(asked.meta, {
      type: 'ciba.notification_failed',
      target: 'user',
      clientId: record.clientId,
      sub: record.sub,
      grantId: record.familyId,
      attempts: 1,
      error: err instanceof Error ? err.message : String(err),
    })
    return true
  }
}

/** POSTs the request as JSON to `ciba.notifyUrl` after the answer (`waitUntil` when set); a failure is an event. */
function startNotifyPost(
  record: CibaRequestRecord,
  asked: { client: ClientRecord; approval: string; meta: RequestMeta },
  ctx: Context,
): void {
  const body = JSON.stringify({
    sub: record.sub,
    client_id: record.clientId,
    client_name: asked.client.displayName ?? record.clientId,
    scope: record.scope,
    ...(record.bindingMessage !== undefined ? { binding_message: record.bindingMessage } : {}),
    ...(record.authorizationDetails ? { authorization_details: record.authorizationDetails } : {}),
    approval_uri: cibaApprovalUrl(ctx, asked.approval),
    expires_in: record.expiresAt - ctx.now(),
  })
  const settings = ctx.config.backchannelLogout
  const send = settings.fetch ?? ((url: string, init: RequestInit) => fetch(url, init))
  const work = (async () => {
    let error: string | undefined
    try {
      const response = await send(ctx.config.ciba.notifyUrl as string, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(settings.timeout * 1000),
      })
      await response.body?.cancel().catch(() => {})
      if (response.status < 200 || response.status >= 300) error = String(response.status)
    } catch (err) {
      error = err instanceof Error ? err.name : 'network'
    }
    if (error === undefined) return
    const subjects = { clientId: record.clientId, sub: record.sub, grantId: record.familyId }
    ctx.emit(asked.meta, { type: 'ciba.notification_failed', target: 'user', ...subjects, attempts: 1, error })
  })()
  ctx.config.waitUntil?.(work)
}

/** A decision on a CIBA request, by the end-user who signed in (the approval page or the host's app). */
export interface CibaDecisionInput {
  /** The approval page's URL (as `ciba.notify` got it) or its `ref` parameter. */
  approval: string
  /** Who decides: must be the end-user the request names. */
  sub: string
  approve: boolean
  /** How they signed in (approval only). Default: now, no acr, no amr. */
  authTime?: number
  acr?: string
  amr?: string[]
}

/** What a decision did: `decided` once; `wrong_user`, `invalid` (unknown, expired, decided before) change nothing. */
export type CibaDecisionOutcome = 'approved' | 'denied' | 'wrong_user' | 'invalid'

/** The reference of an approval URL or the reference itself. */
function referenceOf(approval: string): string {
  if (!approval.includes('?')) return approval
  try {
    return new URL(approval).searchParams.get('ref') ?? ''
  } catch {
    return ''
  }
}

/** The pending request an approval reference names, or undefined. */
export async function cibaRequestOfReference(reference: string, ctx: Context): Promise<CibaRequestRecord | undefined> {
  if (reference === '') return undefined
  return ctx.store.cibaRequests.findByApproval(await ctx.sha256(reference), ctx.now())
}

/**
 * Records a decision on a pending request once (`login` set: approved by them; undefined: denied):
 * the store decides only a pending, unexpired request; then the audit event and a ping-mode
 * client's ping. The caller checked that the decider is the request's end-user.
 */
export async function recordCibaDecision(
  record: CibaRequestRecord,
  login: NonNullable<CibaRequestRecord['login']> | undefined,
  ctx: Context,
  meta: RequestMeta | undefined,
): Promise<'approved' | 'denied' | 'invalid'> {
  const decision = login ? ({ status: 'approved', login } as const) : ({ status: 'denied' } as const)
  if (!(await ctx.store.cibaRequests.decide(record.id, decision, ctx.now()))) return 'invalid'
  if (login) await recordApprovedGrant(record, 'ciba', login, ctx)
  const subjects = { clientId: record.clientId, sub: record.sub, grantId: record.familyId }
  ctx.emit(
    meta,
    login ? { type: 'ciba.approved', ...subjects, scope: record.scope } : { type: 'ciba.denied', ...subjects },
  )
  startCibaPing(record, ctx, meta)
  return login ? 'approved' : 'denied'
}

/** Records the decision once (only the named end-user, only a pending request), then pings a ping client. */
export async function decideCiba(
  input: CibaDecisionInput,
  ctx: Context,
  meta?: RequestMeta,
): Promise<CibaDecisionOutcome> {
  const record = await cibaRequestOfReference(referenceOf(input.approval), ctx)
  if (record?.status !== 'pending') return 'invalid'
  if (record.sub !== input.sub) return 'wrong_user'
  const now = ctx.now()
  const login = {
    sub: input.sub,
    authTime: input.authTime ?? now,
    ...(input.acr !== undefined ? { acr: input.acr } : {}),
    ...(input.amr !== undefined ? { amr: [...input.amr] } : {}),
  }
  return recordCibaDecision(record, input.approve ? login : undefined, ctx, meta)
}
