/**
 * @module grants/authorization_code
 * The authorization code grant (RFC 6749 §4.1.3, OpenID Connect Core §3.1.3). Checks, in order:
 * - `code` present (invalid_request), `redirect_uri` present (invalid_request)
 * - the code is read, not consumed: unknown or expired → invalid_grant
 * - bound to the authenticated client, to the redirect_uri (verbatim), to the PKCE challenge and,
 *   when it has one, to a DPoP key (RFC 9449 §10: the request's proof must be made with that key),
 *   each → invalid_grant. A failed check consumes and revokes nothing (issue #17 item 2, the
 *   order of node-oidc-provider): whoever intercepts a code cannot burn the rightful redemption.
 * - consumed before → a replay: the family's tokens are revoked (§4.1.2, §10.5, RFC 9700 §4.5);
 *   a code this instance wrote is read from its copy (#44), which cannot know it was consumed at
 *   another instance: the store's atomic step finds that replay, and a check failing before it
 *   asks the store, so a replay is reported and revokes as one whichever check it fails
 *   and invalid_grant. Only a replay that passed the checks above revokes: another client, or a
 *   wrong verifier or redirect_uri, presenting a redeemed code gets invalid_grant and revokes
 *   nothing, since it does not prove it holds what the rightful client holds and must not be able
 *   to end that client's grant with a leaked code.
 * - `resource` (RFC 8707 §2.2): each permitted and one of the code's resources, else invalid_target
 * - the scopes still permitted, the account still exists
 * - its family must not be revoked (logout ends the grants of its session), checked before the
 *   consume; then the code is consumed atomically (if a concurrent redemption won, this one is a
 *   replay). Of concurrent redemptions exactly one answers 200, every other invalid_grant, and
 *   the replays revoke what the winner got (#27 item 12)
 *   (#44: a store with `codes.redeem`, PostgreSQL's or one Redis node's, checks the revocation,
 *   consumes the code and writes what follows in one statement or script, after the tokens are signed)
 * - the grant is recorded (`Store.grants`, under the family id) with the refresh token, if any;
 *   a Grant Management merge or replace code (its family is the live grant's) needs the grant
 *   alive (else invalid_grant), issues from the merged or the new permissions, updates the record
 *   (next revision) and ends the refresh tokens of the earlier revision (`grant_update.ts`)
 * The request's DPoP proof itself was checked by the endpoint before any of this: with one, the
 * access token is DPoP-bound and so is a public client's refresh token (RFC 9449 §5).
 */
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { Permissions } from '../clients/index.ts'
import { checkCodeVerifier } from '../tokens/index.ts'
import { checkKeyBinding, type DpopProof } from '../dpop/index.ts'
import {
  detailTypesOf,
  grantDetails,
  grantRecordOf,
  issueUserTokens,
  type IssuedUserTokens,
  permittedScopes,
  requireAccount,
  type UserGrant,
  wantsRefreshToken,
} from './issue.ts'
import { metaOf } from '../security/index.ts'
import { allValues, type Params } from '../http.ts'
import { grantResources, permittedClaims, scopesForResources } from '../protocol/index.ts'
import {
  afterRedemption,
  type ClientRecord,
  type CodeRecord,
  type GrantRecord,
  type RequestedClaims,
  type Store,
} from '../storage/index.ts'
import { codePermissions, endRevision, liveGrantOf, mergedPermissions, updatedGrantRecord } from './grant_update.ts'
import type { Grant } from './types.ts'

/** A code used before: RFC 6749 §4.1.2, revoke all tokens previously issued based on it. */
async function replayedCode(
  used: CodeRecord,
  client: ClientRecord,
  request: Request,
  now: number,
  ctx: Context,
): Promise<never> {
  await ctx.store.revocations.revokeFamily(used.familyId, now + ctx.config.refreshTokenFamilyTtl)
  ctx.emit(metaOf(request), {
    type: 'code.replay_detected',
    clientId: client.clientId,
    sub: used.sub,
    grantId: used.familyId,
  })
  throw new OAuthError('invalid_grant', 'the code has already been used')
}

export const authorizationCode: Grant = {
  type: 'authorization_code',
  permission: Permissions.GrantTypes.AuthorizationCode,
  allowPublic: true,
  async handle(params, { client, request }, ctx: Context, proof) {
    const code = params.get('code')
    if (code === undefined) throw new OAuthError('invalid_request', 'code is required')
    const redirectUri = params.get('redirect_uri')
    if (redirectUri === undefined) throw new OAuthError('invalid_request', 'redirect_uri is required')
    const now = ctx.now()
    const id = await ctx.sha256(code)
    // Everything is checked before the code is consumed: a failed attempt (a foreign client, a
    // wrong verifier or redirect_uri) must not burn the code of the client it was issued to.
    const copy = ctx.issued.codes.get(id, now) // #44: a code this instance wrote, never knowing if consumed
    const record = copy ?? (await ctx.store.codes.get(id))
    if (!record || record.expiresAt <= now) throw new OAuthError('invalid_grant', 'the code is invalid or expired')
    if (record.clientId !== client.clientId) {
      throw new OAuthError('invalid_grant', 'the code was issued to another client')
    }
    // RFC 6749 §4.1.3: redirect_uri must be identical to the authorization request's.
    if (record.redirectUri !== redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri does not match')
    await checkCodeVerifier(params.get('code_verifier'), record.codeChallenge, record.codeChallengeMethod, ctx.sha256)
    // RFC 9449 §10: a code bound with dpop_jkt (or a pushed request's proof) needs that key's proof.
    checkKeyBinding(record.dpopJkt, proof, 'code')
    // Whether the store's atomic step may have consumed the code in this call, or found it replayed.
    const step = { taken: false }
    const replayed = (used: CodeRecord): Promise<never> => {
      step.taken = true
      return replayedCode(used, client, request, now, ctx)
    }
    if (record.consumedAt !== undefined) return replayed(record)
    let redeemed: Redeemed & { tokenScopes: string[] }
    try {
      redeemed = await redeemUnconsumed(record, { id, params, client, proof, now, replayed, step }, ctx)
    } catch (err) {
      // The copy cannot tell a replay (consumed at another instance): a failure before the store
      // found it is asked of the store, and a consumed code is the replay it was (#44).
      const stored = copy && !step.taken ? await ctx.store.codes.get(id).catch(() => undefined) : undefined
      if (stored?.consumedAt !== undefined) return replayed(stored)
      throw err
    }
    const { response, jti, tokenScopes } = redeemed
    const meta = metaOf(request)
    const subjects = { clientId: client.clientId, sub: record.sub, grantId: record.familyId }
    ctx.emit(meta, { type: 'code.redeemed', ...subjects })
    const issued = { type: 'token.issued', grantType: 'authorization_code', jti, scope: tokenScopes.join(' ') } as const
    ctx.emit(meta, { ...issued, ...subjects, ...detailTypesOf(response) })
    return response
  },
}

/** What a redemption needs once the code passed its checks. */
interface Redeeming {
  id: string
  record: CodeRecord
  client: ClientRecord
  grant: UserGrant
  tokenScopes: string[]
  claims: RequestedClaims | undefined
  proof: DpopProof | undefined
  now: number
  replayed: (used: CodeRecord) => Promise<never>
  /** Set once the store's atomic step may have consumed the code (its answer then decides). */
  step: { taken: boolean }
}

type Redeemed = Pick<IssuedUserTokens, 'response' | 'jti'>

/**
 * The redemption of an unconsumed code's record: the grant it issues from, then one atomic step
 * (revocation, consume, refresh token, grant: #44) where the store has it; a Grant Management
 * merge or replace (a live grant, §5.2: gone is invalid_grant) takes the steps.
 */
async function redeemUnconsumed(
  record: CodeRecord,
  r: Pick<Redeeming, 'id' | 'client' | 'proof' | 'now' | 'replayed' | 'step'> & { params: Params },
  ctx: Context,
): Promise<Redeemed & { tokenScopes: string[] }> {
  const live = record.grantAction ? await liveGrantOf(record, r.now, ctx) : undefined
  const { grant, tokenScopes, claims } = await codeGrant(record, live, r.params, r.client, r.now, ctx)
  const redeeming: Redeeming = { ...r, record, grant, tokenScopes, claims }
  const { response, jti } = await afterRedemption(
    ctx.issued,
    'codes',
    r.id,
    !live && ctx.store.codes.redeem ? redeemAtOnce(redeeming, ctx) : redeemInSteps(redeeming, live, ctx),
  )
  return { response, jti, tokenScopes }
}

/**
 * The tokens are signed first, then the store's `codes.redeem` checks the family's revocation,
 * consumes the code, stores the refresh token and the grant in one atomic step (#44 item 1: one
 * round trip). A revoked family stops there, unconsumed; a lost race is a replay.
 */
async function redeemAtOnce(r: Redeeming, ctx: Context): Promise<IssuedUserTokens> {
  const { record, client, grant, now } = r
  const account = await requireAccount(record.sub, ctx, { scopes: r.tokenScopes, claims: r.claims })
  const refresh = wantsRefreshToken(client, grant.scopes, ctx)
  const issued = await issueUserTokens(grant, client, ctx, { account, refresh, proof: r.proof })
  r.step.taken = true
  const outcome = await (ctx.store.codes.redeem as NonNullable<Store['codes']['redeem']>)(r.id, now, {
    unlessRevoked: [record.familyId],
    ...(issued.refreshRecord ? { refreshToken: issued.refreshRecord } : {}),
    grant: codeGrantRecord(r, issued),
  })
  // Revoked or missing: the step changed nothing (a replay elsewhere is then asked of the store).
  if (outcome.status === 'revoked' || outcome.status === 'missing') r.step.taken = false
  if (outcome.status === 'revoked') throw new OAuthError('invalid_grant', 'the code has been revoked')
  if (outcome.status === 'missing') throw new OAuthError('invalid_grant', 'the code is invalid or expired')
  if (outcome.status === 'replayed') return r.replayed(record)
  return issued
}

/** The grant a redeemed code records: made by this code, for as long as its tokens last. */
function codeGrantRecord(r: Redeeming, issued: IssuedUserTokens): GrantRecord {
  const made = { kind: 'authorization_code', createdAt: r.now, expiresAt: issued.expiresAt } as const
  return grantRecordOf(r.grant, r.client, { ...made, sessionId: r.record.sessionId })
}

/** The redemption in steps: the revocation check, the consume, then the refresh token and the grant. */
async function redeemInSteps(r: Redeeming, live: GrantRecord | undefined, ctx: Context): Promise<IssuedUserTokens> {
  const { id, record, client, grant, now } = r
  // Logout ends the grants of its session, codes not yet redeemed included. Asked BEFORE the
  // consume (#27 item 12): a replay revokes the family only after some consume won, so a check
  // made before this consume never sees a concurrent replay's revocation, and the winner of a
  // double redemption always answers 200 (its tokens are then revoked by the replay). Asked
  // alongside the account lookup and the signing, so it adds little to the consume's round trip.
  const revokedCheck = ctx.store.revocations.isFamilyRevoked(record.familyId)
  revokedCheck.catch(() => {}) // awaited below; a store failure must not be an unhandled rejection meanwhile
  const account = await requireAccount(record.sub, ctx, { scopes: r.tokenScopes, claims: r.claims })
  const issuing = issueUserTokens(grant, client, ctx, {
    account,
    refresh: wantsRefreshToken(client, grant.scopes, ctx),
    proof: r.proof,
  })
  issuing.catch(() => {}) // awaited below, once the consume has won
  // Consuming a revoked code takes nothing from anyone: a revoked family stops here, unconsumed.
  if (await revokedCheck) throw new OAuthError('invalid_grant', 'the code has been revoked')
  r.step.taken = true
  const consumed = await ctx.store.codes.consume(id, now)
  if (consumed.status === 'missing') throw new OAuthError('invalid_grant', 'the code is invalid or expired')
  if (consumed.status === 'replayed') return r.replayed(consumed.record)
  // A concurrent replay may revoke the family from here on: this redemption still answers
  // (exactly one caller does), and what it issues is dead on arrival (it carries the family id):
  // its refresh token is refused and its access tokens are inactive at introspection and userinfo.
  const issued = await issuing
  // The grant is recorded with the refresh token, in the same round trip (#39).
  const fresh = codeGrantRecord(r, issued)
  await Promise.all([
    issued.refreshRecord && ctx.store.refreshTokens.insert(issued.refreshRecord),
    ctx.store.grants.put(live ? updatedGrantRecord(live, fresh, now) : fresh),
    // §5.2: a merge or replace ends the refresh tokens of the grant's earlier revision.
    live && endRevision(live, issued.expiresAt, ctx),
  ])
  return issued
}

/**
 * The grant a code's redemption issues from: the code's permissions or, for a merge, those merged
 * into the live grant's (a replace: the code's alone, §5.2), narrowed to what the client may still
 * use and to the token request's `resource` and `authorization_details`.
 */
async function codeGrant(
  record: CodeRecord,
  live: GrantRecord | undefined,
  params: Params,
  client: ClientRecord,
  now: number,
  ctx: Context,
): Promise<{ grant: UserGrant; tokenScopes: string[]; claims: RequestedClaims | undefined }> {
  const granted =
    live && record.grantAction === 'merge' ? mergedPermissions(live, codePermissions(record)) : codePermissions(record)
  // RFC 8707 §2.2: a subset of the grant's resources (none named: all of them).
  const resources = grantResources(allValues(params, 'resource'), granted.resources, client, ctx)
  const scopes = permittedScopes(client, granted.scopes, ctx)
  const tokenScopes = scopesForResources(scopes, resources, ctx)
  // Core §5.4: the claims request holds only claims of scopes the client is still permitted (#39 item 4).
  const claims = permittedClaims(granted.claims, client, ctx)
  const grant: UserGrant = {
    familyId: record.familyId,
    sub: record.sub,
    scopes,
    tokenScopes,
    ...(granted.resources ? { resources: granted.resources, tokenResources: resources } : {}),
    // RFC 9396 §6.1: a subset of the grant's authorization details (none named: all of them).
    ...(await grantDetails(params, granted.authorizationDetails, client, ctx)),
    authTime: record.authTime,
    familyExpiresAt: now + ctx.config.refreshTokenFamilyTtl,
    ...(live ? { grantRevision: (live.revision ?? 0) + 1 } : {}),
    ...(record.sid !== undefined ? { sid: record.sid } : {}),
    ...(record.acr !== undefined ? { acr: record.acr } : {}),
    ...(record.amr !== undefined ? { amr: record.amr } : {}),
    ...(record.nonce !== undefined ? { nonce: record.nonce } : {}),
    ...(claims ? { claims } : {}),
  }
  return { grant, tokenScopes, claims }
}
