/**
 * @module endpoints/ciba
 * The backchannel authentication endpoint, POST /connect/ciba (OpenID CIBA Core 1.0 §7), as named
 * steps: read the form (`resource` may repeat), authenticate the client as the token endpoint does
 * (confidential clients only, CIBA §4), check its permissions (`ept:backchannel_authentication`
 * and the grant, else unauthorized_client), read the request (§7.1: `scope` with `openid`, exactly
 * one of `login_hint` and `id_token_hint`, no `login_hint_token`, `binding_message`,
 * `requested_expiry`, `acr_values`, `client_notification_token` for ping clients), find the
 * end-user (`unknown_user_id`), store the request under the SHA-256 of a fresh `auth_req_id`, reach
 * the end-user (the `ciba.notify` hook, which may refuse: `access_denied`) and answer 200 with
 * `auth_req_id`, `expires_in` and `interval` (§7.3). Every error is JSON (§13).
 *
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.7
 */
import { authenticateClient, requirePermission } from '../client_auth/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { allValues, noStoreJson, type Params, readForm } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import { metaOf } from '../security/index.ts'
import { parseAuthorizationDetails, RESOURCE_PARAMETERS, verifyIdTokenHint } from '../protocol/index.ts'
import type { CibaRequestRecord, ClientRecord } from '../storage/index.ts'
import { randomToken } from '../crypto/index.ts'
import { notifyUser } from '../interaction/index.ts'
import { requestedScopes } from './authorization_request.ts'

/** CIBA §7.3: the answer. */
export interface CibaResponse {
  auth_req_id: string
  expires_in: number
  interval: number
}

/** The longest binding message (CIBA §7.1 says it SHOULD be short enough for a small screen). */
const BINDING_MESSAGE_MAX = 64
/** The longest client notification token (CIBA §7.1 asks for at least 128 bits; a cap keeps records small). */
const NOTIFICATION_TOKEN_MAX = 1024

/**
 * What a binding message may not hold: control and format characters (bidi overrides, zero-width
 * ones: \p{Cf}) and markup, so what the user compares is what both sides show.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const NOT_PLAIN_TEXT = /[\u0000-\u001f\u007f-\u009f<>\p{Cf}]/u

/** The binding message, checked: ≤ 64 characters of plain text (no control characters, no markup). */
function bindingMessageOf(params: Params): string | undefined {
  const message = params.get('binding_message')
  if (message === undefined) return undefined
  if (message === '' || [...message].length > BINDING_MESSAGE_MAX || NOT_PLAIN_TEXT.test(message)) {
    throw new OAuthError(
      'invalid_binding_message',
      `binding_message must be 1 to ${BINDING_MESSAGE_MAX} characters of plain text`,
    )
  }
  return message
}

/** The request's lifetime: `cibaTtl`, or a shorter positive `requested_expiry` (CIBA §7.1). */
function lifetimeOf(params: Params, ctx: Context): number {
  const requested = params.get('requested_expiry')
  if (requested === undefined) return ctx.config.cibaTtl
  if (!/^[1-9]\d{0,8}$/.test(requested))
    throw new OAuthError('invalid_request', 'requested_expiry must be a positive integer')
  return Math.min(Number(requested), ctx.config.cibaTtl)
}

/** The end-user a `login_hint` (username or `sub`) names, with their claims; else unknown_user_id. */
async function userOfLoginHint(hint: string, ctx: Context): Promise<{ sub: string; claims: Record<string, unknown> }> {
  for (const sub of [ctx.users.subOf(hint), hint]) {
    if (sub === undefined) continue
    const claims = await ctx.accounts.findAccount(sub)
    if (claims) return { sub, claims }
  }
  throw new OAuthError('unknown_user_id', 'login_hint names no known end-user')
}

/** The end-user of an `id_token_hint`: an ID token this issuer gave this client (CIBA §7.1). */
async function userOfIdTokenHint(
  hint: string,
  client: ClientRecord,
  ctx: Context,
): Promise<{ sub: string; claims: Record<string, unknown> }> {
  const claims = await verifyIdTokenHint(hint, ctx)
  if (!claims) throw new OAuthError('invalid_request', 'id_token_hint is not an ID token of this issuer')
  const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  const issuedTo = claims.azp ?? (audience.length === 1 ? audience[0] : undefined)
  if (issuedTo !== client.clientId || !audience.includes(client.clientId)) {
    throw new OAuthError('invalid_request', 'id_token_hint was not issued to this client')
  }
  const account = await ctx.accounts.findAccount(claims.sub)
  if (!account) throw new OAuthError('unknown_user_id', 'id_token_hint names no known end-user')
  return { sub: claims.sub, claims: account }
}

/** Exactly one hint (CIBA §7.1; a login_hint_token is not supported), resolved to the end-user. */
function userOf(
  params: Params,
  client: ClientRecord,
  ctx: Context,
): Promise<{ sub: string; claims: Record<string, unknown> }> {
  if (params.get('login_hint_token') !== undefined)
    throw new OAuthError('invalid_request', 'login_hint_token is not supported')
  const loginHint = params.get('login_hint')
  const idTokenHint = params.get('id_token_hint')
  if ((loginHint === undefined) === (idTokenHint === undefined)) {
    throw new OAuthError('invalid_request', 'exactly one of login_hint and id_token_hint is required')
  }
  return loginHint !== undefined
    ? userOfLoginHint(loginHint, ctx)
    : userOfIdTokenHint(idTokenHint as string, client, ctx)
}

/** The ping client's notification token (CIBA §7.1: required in ping mode). */
function notificationTokenOf(params: Params, client: ClientRecord): string | undefined {
  const token = params.get('client_notification_token')
  if (client.backchannelTokenDeliveryMode !== 'ping') return undefined
  if (token === undefined || token === '')
    throw new OAuthError('invalid_request', 'client_notification_token is required in ping mode')
  if (token.length > NOTIFICATION_TOKEN_MAX)
    throw new OAuthError('invalid_request', 'client_notification_token is too long')
  // It is sent back as a Bearer token: RFC 6750 §2.1 b64token syntax.
  if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(token))
    throw new OAuthError('invalid_request', 'client_notification_token must be a bearer token (RFC 6750 b64token)')
  return token
}

/**
 * Answers a backchannel authentication request: 200 with the `auth_req_id`.
 *
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.7.1
 */
export async function handleBackchannelAuthentication(request: Request, ctx: Context): Promise<Response> {
  const params = await readForm(request, ctx.config.limits, RESOURCE_PARAMETERS)
  const { client } = await authenticateClient(request, params, ctx, {
    allowPublic: false,
    endpoint: 'backchannelAuthentication',
  })
  requirePermission(client, Permissions.Endpoints.BackchannelAuthentication, 'the backchannel authentication endpoint')
  requirePermission(client, Permissions.GrantTypes.Ciba, 'the CIBA grant')
  // CIBA §7.1: scope is required (a missing one is a malformed request, not an invalid scope).
  if (params.get('scope') === undefined) throw new OAuthError('invalid_request', 'scope is required')
  const { scopes, resources } = requestedScopes(params.get('scope'), allValues(params, 'resource'), client, ctx)
  if (!scopes.includes('openid')) throw new OAuthError('invalid_request', 'scope must contain openid')
  const bindingMessage = bindingMessageOf(params)
  const ttl = lifetimeOf(params, ctx)
  const clientNotificationToken = notificationTokenOf(params, client)
  const acrValues = params.get('acr_values')?.split(' ').filter(Boolean)
  // RFC 9396: checked as at the authorization endpoint (400 invalid_authorization_details here).
  const authorizationDetails = await parseAuthorizationDetails(params.get('authorization_details'), client, ctx)
  const user = await userOf(params, client, ctx)

  const authReqId = randomToken()
  const approval = randomToken()
  const now = ctx.now()
  const record: CibaRequestRecord = {
    id: await ctx.sha256(authReqId),
    approvalId: await ctx.sha256(approval),
    familyId: randomToken(),
    clientId: client.clientId,
    sub: user.sub,
    scope: scopes.join(' '),
    ...(bindingMessage !== undefined ? { bindingMessage } : {}),
    ...(acrValues?.length ? { acrValues } : {}),
    ...(resources.length > 0 ? { resources } : {}),
    ...(authorizationDetails ? { authorizationDetails } : {}),
    deliveryMode: client.backchannelTokenDeliveryMode ?? 'poll',
    ...(clientNotificationToken !== undefined ? { clientNotificationToken, authReqId } : {}),
    interval: ctx.config.cibaInterval,
    status: 'pending',
    issuedAt: now,
    expiresAt: now + ttl,
  }
  const meta = metaOf(request)
  // Stored before the end-user is told, so an immediate decision (the host's own app through
  // `service.ciba.decide`, a fast notifyUrl receiver) finds it (#41 review).
  await ctx.store.cibaRequests.insert(record)
  const reached = await notifyUser(record, { user, client, approval, meta }, ctx)
  if (reached === false) {
    // The host refused to ask (CIBA §13 access_denied): the stored request can never be approved.
    await ctx.store.cibaRequests.decide(record.id, { status: 'denied' }, ctx.now())
    throw new OAuthError('access_denied', 'the end-user cannot be asked', { status: 403 })
  }
  ctx.emit(meta, {
    type: 'ciba.requested',
    clientId: client.clientId,
    sub: user.sub,
    grantId: record.familyId,
    scope: record.scope,
    deliveryMode: record.deliveryMode,
  })
  const body: CibaResponse = { auth_req_id: authReqId, expires_in: ttl, interval: record.interval }
  return noStoreJson(body)
}
