/**
 * @module grants/ciba
 * The CIBA grant at the token endpoint (OpenID CIBA Core 1.0 §10.1, §11), for poll and ping clients
 * alike (a ping client redeems as a poll client does, CIBA §10.2). Checks, in order:
 * - `auth_req_id` present (invalid_request)
 * - the request is read, not polled: unknown → invalid_grant; issued to another client →
 *   invalid_grant, changing nothing (no `slow_down` for its owner, no redemption)
 * - `resource` (RFC 8707 §2.2): a subset of the request's; the scopes still permitted
 * - one atomic poll of the store (`cibaRequests.poll`) answers: authorization_pending, slow_down
 *   (the interval grows by 5 s), access_denied, expired_token, or the tokens, once; a redeemed
 *   `auth_req_id` polled again revokes what it issued (as a code replay) and is invalid_grant.
 * The tokens are the device grant's (device_code.ts): access token, ID token (auth_time, acr, amr of
 * the approving sign-in; no nonce), a refresh token per the offline_access rules; the grant is
 * recorded (`Store.grants`, kind `ciba`).
 *
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.11
 */
import type { AuthorizationDetail, CibaRequestRecord } from '../storage/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { allValues } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import { metaOf } from '../security/index.ts'
import { grantResources, scopesForResources } from '../protocol/index.ts'
import { checkApproved, sign, type Target, userGrant } from './device_code.ts'
import { grantDetails, grantRecordOf, permittedScopes } from './issue.ts'
import type { Grant } from './types.ts'

/** The grant type (CIBA §10.1). */
export const CIBA = 'urn:openid:params:grant-type:ciba'

/** The approval of a record the store says is approved (a record without one is a store fault). */
function loginOf(record: CibaRequestRecord): NonNullable<CibaRequestRecord['login']> {
  if (!record.login) throw new OAuthError('server_error', 'an approved CIBA request has no sign-in')
  return record.login
}

/** The error of every poll answer but `ok` (after revoking the family of a replay). */
async function refuse(
  polled: Exclude<Awaited<ReturnType<Context['store']['cibaRequests']['poll']>>, { status: 'ok' }>,
  ctx: Context,
  request: Request,
  clientId: string,
): Promise<never> {
  switch (polled.status) {
    case 'missing':
      throw new OAuthError('invalid_grant', 'the auth_req_id is invalid')
    case 'expired':
      throw new OAuthError('expired_token', 'the auth_req_id has expired; start a new backchannel authentication')
    case 'pending':
      throw new OAuthError('authorization_pending', 'the end-user has not yet decided')
    case 'slow_down':
      throw new OAuthError('slow_down', `poll at most every ${polled.record.interval} seconds`)
    case 'denied':
      throw new OAuthError('access_denied', 'the end-user denied the authorization')
    case 'replayed': {
      const used = polled.record
      await ctx.store.revocations.revokeFamily(used.familyId, ctx.now() + ctx.config.refreshTokenFamilyTtl)
      ctx.emit(metaOf(request), { type: 'code.replay_detected', clientId, sub: used.sub, grantId: used.familyId })
      throw new OAuthError('invalid_grant', 'the auth_req_id has already been used')
    }
  }
}

export const ciba: Grant = {
  type: CIBA,
  permission: Permissions.GrantTypes.Ciba,
  allowPublic: false,
  async handle(params, { client, request }, ctx, proof) {
    const value = params.get('auth_req_id')
    if (value === undefined) throw new OAuthError('invalid_request', 'auth_req_id is required')
    const now = ctx.now()
    const id = await ctx.sha256(value)
    const record = await ctx.store.cibaRequests.get(id)
    if (!record) throw new OAuthError('invalid_grant', 'the auth_req_id is invalid')
    if (record.clientId !== client.clientId) {
      throw new OAuthError('invalid_grant', 'the auth_req_id was issued to another client')
    }
    const resources = grantResources(allValues(params, 'resource'), record.resources, client, ctx)
    const scopes = permittedScopes(client, record.scope.split(' '), ctx)
    const target: Target = { scopes, tokenScopes: scopesForResources(scopes, resources, ctx), resources }
    // RFC 9396 §6.1: the token request may narrow the approved authorization details, never widen them.
    const details = await grantDetails(
      params,
      record.authorizationDetails as AuthorizationDetail[] | undefined,
      client,
      ctx,
    )
    // Approved already: the account and the family are checked before the poll consumes anything
    // (after it, a concurrent replay may already have revoked the family this call redeems: what
    // is issued then carries the family id and is dead on arrival, as for codes).
    let account: Record<string, unknown> | undefined
    if (record.status === 'approved' && record.consumedAt === undefined && record.expiresAt > now) {
      account = await checkApproved(record, loginOf(record), target, ctx)
    }
    const polled = await ctx.store.cibaRequests.poll(id, now)
    if (polled.status !== 'ok') return refuse(polled, ctx, request, client.clientId)
    const login = loginOf(polled.record)
    account ??= await checkApproved(polled.record, login, target, ctx)
    const signing = sign({ ...userGrant(polled.record, login, target, ctx), ...details }, account, client, ctx, proof)
    const { response, refreshRecord, jti, expiresAt } = await signing.issuing
    const made = { kind: 'ciba', createdAt: now, expiresAt } as const
    await Promise.all([
      refreshRecord && ctx.store.refreshTokens.insert(refreshRecord),
      ctx.store.grants.put(grantRecordOf(signing.grant, client, made)),
    ])
    const subjects = { clientId: client.clientId, sub: login.sub, grantId: polled.record.familyId }
    const meta = metaOf(request)
    ctx.emit(meta, { type: 'ciba.redeemed', ...subjects })
    ctx.emit(meta, { type: 'token.issued', grantType: CIBA, ...subjects, jti, scope: target.tokenScopes.join(' ') })
    return response
  },
}
