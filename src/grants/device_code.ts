/**
 * @module grants/device_code
 * The device authorization grant at the token endpoint (RFC 8628 §3.4, §3.5). Checks, in order:
 * - `device_code` present (invalid_request)
 * - the authorization is read, not polled: unknown → invalid_grant; issued to another client →
 *   invalid_grant. A failed check changes nothing (as for codes, issue #17 item 2): whoever learns
 *   another client's device code can neither poll it (no `slow_down` for its owner) nor redeem it.
 * - `resource` (RFC 8707 §2.2): each permitted and one of the authorization's, else invalid_target;
 *   the scopes still permitted (else invalid_grant)
 * - then one atomic poll of the store (`deviceCodes.poll`) answers: authorization_pending,
 *   slow_down (polled sooner than `interval` after the previous poll; the interval for this device
 *   code grows by 5 s), access_denied, expired_token, or the tokens, once. A redeemed device code
 *   polled again is a replay: the family's tokens are revoked (as for a code, RFC 6749 §4.1.2)
 *   and invalid_grant. Of concurrent redemptions exactly one answers 200.
 * The tokens are the code flow's (`issueUserTokens`): an access token (DPoP-bound with a proof),
 * an ID token with `openid` (auth_time, acr and amr of the approving sign-in; no nonce, no sid: a
 * device grant is not bound to the browser session that approved it), a refresh token per the
 * offline_access rules; the grant is recorded (`Store.grants`) with the refresh token. When the
 * authorization was already approved when read, the account and the family are checked before the
 * poll and the signing runs alongside it, as the code grant does around its consume.
 */
import type { ClientRecord, DeviceCodeRecord } from '../storage/index.ts'
import type { Context } from '../context.ts'
import type { DpopProof } from '../dpop/index.ts'
import { OAuthError } from '../errors.ts'
import { allValues } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import { metaOf } from '../security/index.ts'
import { grantResources, scopesForResources } from '../protocol/index.ts'
import {
  grantRecordOf,
  issueUserTokens,
  permittedScopes,
  requireAccount,
  type UserGrant,
  wantsRefreshToken,
} from './issue.ts'
import type { Grant } from './types.ts'

/** The grant type (RFC 8628 §3.4). */
export const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code'

/** What the tokens of an approved authorization are: its scopes and resources, narrowed by the request. */
export interface Target {
  scopes: string[]
  tokenScopes: string[]
  resources: string[]
}

/**
 * What must hold before an approved authorization is redeemed: the account still exists and the
 * family has not been revoked. Returns the account's claims.
 */
export async function checkApproved(
  record: Approved,
  login: NonNullable<DeviceCodeRecord['login']>,
  target: Target,
  ctx: Context,
): Promise<Record<string, unknown>> {
  const revoked = ctx.store.revocations.isFamilyRevoked(record.familyId)
  revoked.catch(() => {}) // awaited below; a store failure must not be an unhandled rejection meanwhile
  const account = await requireAccount(login.sub, ctx, { scopes: target.tokenScopes })
  if (await revoked) throw new OAuthError('invalid_grant', 'the authorization has been revoked')
  return account
}

/** What the helpers below read of an approved authorization (a device code's or a CIBA request's). */
type Approved = Pick<DeviceCodeRecord, 'familyId' | 'resources'>

/** The grant an approved authorization makes. */
export function userGrant(
  record: Approved,
  login: NonNullable<DeviceCodeRecord['login']>,
  target: Target,
  ctx: Context,
): UserGrant {
  return {
    familyId: record.familyId,
    sub: login.sub,
    scopes: target.scopes,
    tokenScopes: target.tokenScopes,
    ...(record.resources ? { resources: record.resources, tokenResources: target.resources } : {}),
    authTime: login.authTime,
    familyExpiresAt: ctx.now() + ctx.config.refreshTokenFamilyTtl,
    ...(login.acr !== undefined ? { acr: login.acr } : {}),
    ...(login.amr !== undefined ? { amr: login.amr } : {}),
  }
}

/** The grant and the signing of its tokens (nothing is stored yet). */
export interface Signing {
  grant: UserGrant
  issuing: ReturnType<typeof issueUserTokens>
}

/** Signs the tokens of a grant (nothing is stored yet). */
export function sign(
  grant: UserGrant,
  account: Record<string, unknown>,
  client: ClientRecord,
  ctx: Context,
  proof: DpopProof | undefined,
): Signing {
  const refresh = wantsRefreshToken(client, grant.scopes, ctx)
  return { grant, issuing: issueUserTokens(grant, client, ctx, { account, refresh, proof }) }
}

/** The approval of a record the store says is approved (a record without one is a store fault). */
function loginOf(record: DeviceCodeRecord): NonNullable<DeviceCodeRecord['login']> {
  if (!record.login) throw new OAuthError('server_error', 'an approved device authorization has no sign-in')
  return record.login
}

export const deviceCode: Grant = {
  type: DEVICE_CODE,
  permission: Permissions.GrantTypes.DeviceCode,
  allowPublic: true,
  async handle(params, { client, request }, ctx, proof) {
    const value = params.get('device_code')
    if (value === undefined) throw new OAuthError('invalid_request', 'device_code is required')
    const now = ctx.now()
    const id = await ctx.sha256(value)
    // Everything is checked before the poll changes anything.
    const record = await ctx.store.deviceCodes.get(id)
    if (!record) throw new OAuthError('invalid_grant', 'the device code is invalid')
    if (record.clientId !== client.clientId) {
      throw new OAuthError('invalid_grant', 'the device code was issued to another client')
    }
    // RFC 8707 §2.2: a subset of the authorization's resources (none named: all of them).
    const resources = grantResources(allValues(params, 'resource'), record.resources, client, ctx)
    const scopes = permittedScopes(client, record.scope === '' ? [] : record.scope.split(' '), ctx)
    const target: Target = { scopes, tokenScopes: scopesForResources(scopes, resources, ctx), resources }
    // Approved already: the account and the family are checked before the poll (a failed check
    // consumes nothing), and the tokens are signed while the store polls.
    let early: Signing | undefined
    if (record.status === 'approved' && record.consumedAt === undefined && record.expiresAt > now) {
      const login = loginOf(record)
      const account = await checkApproved(record, login, target, ctx)
      early = sign(userGrant(record, login, target, ctx), account, client, ctx, proof)
      early.issuing.catch(() => {}) // awaited below, once the poll has redeemed it
    }
    const polled = await ctx.store.deviceCodes.poll(id, now)
    const meta = metaOf(request)
    switch (polled.status) {
      case 'missing':
        throw new OAuthError('invalid_grant', 'the device code is invalid')
      case 'expired':
        throw new OAuthError('expired_token', 'the device code has expired; start a new device authorization')
      case 'pending':
        throw new OAuthError('authorization_pending', 'the end-user has not yet decided')
      case 'slow_down':
        throw new OAuthError('slow_down', `poll at most every ${polled.record.interval} seconds`)
      case 'denied':
        throw new OAuthError('access_denied', 'the end-user denied the authorization')
      case 'replayed': {
        const used = polled.record
        // As for a code replay (RFC 6749 §4.1.2): revoke what the redemption issued.
        await ctx.store.revocations.revokeFamily(used.familyId, now + ctx.config.refreshTokenFamilyTtl)
        ctx.emit(meta, {
          type: 'code.replay_detected',
          clientId: client.clientId,
          ...(used.login ? { sub: used.login.sub } : {}),
          grantId: used.familyId,
        })
        throw new OAuthError('invalid_grant', 'the device code has already been used')
      }
    }
    // 'ok': this call redeemed it (a concurrent replay may revoke the family from here on; what
    // is issued then carries the family id and is dead on arrival, as for codes).
    const login = loginOf(polled.record)
    const signing =
      early ??
      sign(
        userGrant(polled.record, login, target, ctx),
        await checkApproved(polled.record, login, target, ctx),
        client,
        ctx,
        proof,
      )
    const { response, refreshRecord, jti, expiresAt } = await signing.issuing
    // The grant is recorded with the refresh token, in the same round trip (#39).
    const made = { kind: 'device_code', createdAt: now, expiresAt } as const
    await Promise.all([
      refreshRecord && ctx.store.refreshTokens.insert(refreshRecord),
      ctx.store.grants.put(grantRecordOf(signing.grant, client, made)),
    ])
    const subjects = { clientId: client.clientId, sub: login.sub, grantId: polled.record.familyId }
    ctx.emit(meta, { type: 'device.redeemed', ...subjects })
    ctx.emit(meta, {
      type: 'token.issued',
      grantType: DEVICE_CODE,
      ...subjects,
      jti,
      scope: target.tokenScopes.join(' '),
    })
    return response
  },
}
