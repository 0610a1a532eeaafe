/**
 * @module grants/refresh_token
 * The refresh token grant (RFC 6749 §6) with rotation on every use and reuse detection
 * (RFC 9700 §4.14.2). Checks, in order:
 * - `refresh_token` present (invalid_request)
 * - known, unexpired, issued to this client (invalid_grant; a foreign client does not burn it)
 * - bound to a DPoP key (a public client's token issued with DPoP, RFC 9449 §5): the request's
 *   proof must be made with that key, else invalid_grant (checked before reuse detection: a
 *   stolen bound token presented without the key revokes nothing)
 * - consumed before → reuse: the whole family is revoked, invalid_grant (a token this instance
 *   wrote is read from its copy, #44, which cannot know it was rotated at another instance: the
 *   store's atomic step finds that reuse, and a later check that fails first asks the store)
 * - the family is not revoked, nor the grant revision it was issued under (a Grant Management
 *   merge or replace ends earlier revisions), and has not reached its absolute lifetime
 * - a requested `scope` is a subset of the granted one (invalid_scope)
 * - the client still holds the permission of every scope issued (a lost one is dropped; nothing
 *   left is invalid_grant; a requested one that was lost is invalid_scope)
 * - `resource` (RFC 8707 §2.2): each permitted and one of the grant's resources, else invalid_target;
 *   the access token is for those (none named: all of the grant's), the next generation keeps all
 * - atomically rotate: exactly one of concurrent callers gets the next generation (#44: a store
 *   with `rotateUnlessRevoked`, PostgreSQL's or one Redis node's, checks the revocation in the same
 *   step); tokens that outlive the family's absolute end extend the grant's record (`Store.grants`)
 *   to their end; the grant's last use is recorded alongside, to the minute (`recordUse`)
 * The request's DPoP proof itself was checked by the endpoint before any of this: with one, the
 * access token is DPoP-bound and so is a public client's next refresh token (RFC 9449 §5); a
 * confidential client's refresh tokens are never bound.
 */
import type { Context } from '../context.ts'
import { checkKeyBinding, type DpopProof } from '../dpop/index.ts'
import { afterRedemption, type ClientRecord, type RefreshTokenRecord, type Store } from '../storage/index.ts'
import { OAuthError } from '../errors.ts'
import { Permissions } from '../clients/index.ts'
import { parseScope } from '../config/index.ts'
import { detailTypesOf, grantDetails, issueUserTokens, permittedScopes, requireAccount } from './issue.ts'
import { metaOf } from '../security/index.ts'
import { allValues, type Params } from '../http.ts'
import { grantResources, permittedClaims, scopesForResources } from '../protocol/index.ts'
import type { Grant } from './types.ts'
import { GRANT_USE_INTERVAL, revisionFamilyId, touchGrant } from './grant_update.ts'

export const refreshToken: Grant = {
  type: 'refresh_token',
  permission: Permissions.GrantTypes.RefreshToken,
  allowPublic: true,
  async handle(params, { client, request }, ctx: Context, proof) {
    const value = params.get('refresh_token')
    if (value === undefined) throw new OAuthError('invalid_request', 'refresh_token is required')
    const now = ctx.now()
    const id = await ctx.sha256(value)
    const copy = ctx.issued.refreshTokens.get(id, now) // #44: one this instance wrote, never knowing if consumed
    const record = copy ?? (await ctx.store.refreshTokens.get(id))
    if (!record || record.expiresAt <= now)
      throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired')
    if (record.clientId !== client.clientId) {
      throw new OAuthError('invalid_grant', 'the refresh token was issued to another client')
    }
    // RFC 9449 §5: "The binding MUST be validated when the refresh token is later presented".
    checkKeyBinding(record.dpopJkt, proof, 'refresh token')
    const subjects = { clientId: client.clientId, sub: record.sub, grantId: record.familyId }
    // Whether the store's atomic step may have rotated the token in this call, or found it reused.
    const step = { taken: false }
    const revokeFamily = async () => {
      step.taken = true
      await ctx.store.revocations.revokeFamily(record.familyId, record.familyExpiresAt)
      ctx.emit(metaOf(request), { type: 'refresh_token.reuse_detected', ...subjects })
    }
    if (record.consumedAt !== undefined) {
      await revokeFamily()
      throw reusedError()
    }
    // The family's revocation, and the revision's mark (a Grant Management merge or replace ends
    // earlier revisions' refresh tokens): a revoked one is refused before any state changes.
    const families = [record.familyId, revisionFamilyId(record.familyId, record.grantRevision)]
    const steps: Steps = { id, record, client, proof, now, families, revokeFamily, step }
    let issued: Issued
    try {
      const rotation = ctx.store.refreshTokens.rotateUnlessRevoked
        ? rotateAtOnce(params, steps, ctx)
        : rotateInSteps(params, steps, ctx)
      issued = await afterRedemption(ctx.issued, 'refreshTokens', id, rotation)
    } catch (err) {
      // The copy cannot tell a reuse (rotated at another instance): a failure before the store
      // found it is asked of the store, and a consumed token is the reuse it was (#44).
      const stored = copy && !step.taken ? await ctx.store.refreshTokens.get(id).catch(() => undefined) : undefined
      if (stored?.consumedAt === undefined) throw err
      await revokeFamily()
      throw reusedError()
    }
    const { response, jti, expiresAt } = issued
    // Tokens issued in the family's last moments outlive it: so does the grant's record, then (#39).
    if (expiresAt > record.familyExpiresAt) await extendGrant(record, expiresAt, now, ctx)
    ctx.emit(metaOf(request), {
      type: 'token.refreshed',
      ...subjects,
      jti,
      scope: response.scope ?? '',
      ...detailTypesOf(response),
    })
    return response
  },
}

/** What a rotation needs once the token passed its checks. */
interface Steps {
  id: string
  record: RefreshTokenRecord
  client: ClientRecord
  proof: DpopProof | undefined
  now: number
  /** The family and its revision's mark: either revoked refuses the token. */
  families: string[]
  revokeFamily: () => Promise<void>
  /** Set once the store's atomic step may have rotated the token (its answer then decides). */
  step: { taken: boolean }
}

type Issued = Awaited<ReturnType<typeof issueUserTokens>>

const revokedError = (): OAuthError => new OAuthError('invalid_grant', 'the refresh token has been revoked')
const reusedError = (): OAuthError => new OAuthError('invalid_grant', 'the refresh token has already been used')

/** Whether the family or its revision is revoked (the stores answer both keys with one query). */
async function isRevoked(families: string[], ctx: Context): Promise<boolean> {
  const answers = await Promise.all(families.map((id) => ctx.store.revocations.isFamilyRevoked(id)))
  return answers.some(Boolean)
}

/**
 * #44 item 1: the next generation is signed, then the store's `rotateUnlessRevoked` checks the
 * revocation and rotates in one atomic step (one round trip). A refusal of the checks is reported
 * after the revocation, which is then asked on its own (a revoked family is the error reported first).
 */
async function rotateAtOnce(params: Params, s: Steps, ctx: Context): Promise<Issued> {
  let issued: Issued
  try {
    issued = await issueNext(params, s.record, s.client, ctx, s.proof, s.now)
  } catch (err) {
    if (await isRevoked(s.families, ctx)) throw revokedError()
    throw err
  }
  const next = issued.refreshRecord
  if (!next) throw new Error('rotation produced no refresh token')
  // The grant's last use, to the minute: written alongside the rotation (no round trip of its own).
  const touched = recordUse(s.record, next, s.now, ctx)
  const rotate = ctx.store.refreshTokens.rotateUnlessRevoked as NonNullable<
    Store['refreshTokens']['rotateUnlessRevoked']
  >
  s.step.taken = true
  const rotated = await rotate(s.id, next, s.now, s.families)
  await touched
  // Revoked or missing: the step changed nothing (a reuse elsewhere is then asked of the store).
  if (rotated.status === 'revoked' || rotated.status === 'missing') s.step.taken = false
  if (rotated.status === 'revoked') throw revokedError()
  if (rotated.status === 'replayed') {
    await s.revokeFamily()
    throw reusedError()
  }
  if (rotated.status === 'missing') throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired')
  return issued
}

/**
 * The rotation in steps: the family's revocation is asked for now and answered while the checks
 * run and the tokens are signed (one round trip less before the rotation); it is still decided
 * before any state changes, and a revoked family is still the error reported first.
 */
async function rotateInSteps(params: Params, s: Steps, ctx: Context): Promise<Issued> {
  const revoked = isRevoked(s.families, ctx)
  revoked.catch(() => {}) // awaited below; a store failure must not be an unhandled rejection meanwhile
  let issued: Issued
  try {
    issued = await issueNext(params, s.record, s.client, ctx, s.proof, s.now)
  } catch (err) {
    if (await revoked) throw revokedError()
    throw err
  }
  if (await revoked) throw revokedError()
  const next = issued.refreshRecord
  if (!next) throw new Error('rotation produced no refresh token')
  const touched = recordUse(s.record, next, s.now, ctx)
  s.step.taken = true
  const rotated = await ctx.store.refreshTokens.rotate(s.id, next, s.now)
  await touched
  if (rotated.status === 'replayed') {
    await s.revokeFamily()
    throw reusedError()
  }
  if (rotated.status === 'missing') throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired')
  return issued
}

/**
 * Records the grant's use (`touchGrant`) measured from the last one recorded through this family
 * (the rotation carries it: `grantUsedAt`, else the generation's issue), which `next` carries on.
 */
function recordUse(record: RefreshTokenRecord, next: RefreshTokenRecord, now: number, ctx: Context): Promise<boolean> {
  const last = record.grantUsedAt ?? record.issuedAt
  const touching = now - last >= GRANT_USE_INTERVAL && ctx.store.grants.touch !== undefined
  next.grantUsedAt = touching ? now : last
  return touchGrant(record.familyId, last, now, ctx)
}

/**
 * Extends the grant's record to `until` when it ends sooner. Only a refresh whose tokens outlive
 * the family's absolute end needs it (the record lasts until that end otherwise): a read and a
 * write then, none on every other refresh.
 */
async function extendGrant(record: RefreshTokenRecord, until: number, now: number, ctx: Context): Promise<void> {
  const grant = await ctx.store.grants.get(record.familyId, now)
  // Only the revision this token belongs to: a record a merge or replace rewrote since is not put back.
  if (!grant || grant.expiresAt >= until || (grant.revision ?? 0) !== (record.grantRevision ?? 0)) return
  await ctx.store.grants.put({ ...grant, expiresAt: until })
}

/**
 * The next generation's tokens, after the checks that need no store: the family's absolute
 * lifetime, a requested `scope` within the granted and still permitted ones, `resource`, the account.
 */
async function issueNext(
  params: Parameters<Grant['handle']>[0],
  record: RefreshTokenRecord,
  client: ClientRecord,
  ctx: Context,
  proof: DpopProof | undefined,
  now: number,
): ReturnType<typeof issueUserTokens> {
  if (record.familyExpiresAt <= now) throw new OAuthError('invalid_grant', 'the refresh token has expired')
  const requested = parseScope(params.get('scope'), ctx.config.limits.maxScopes)
  const original = record.scope === '' ? [] : record.scope.split(' ')
  for (const scope of requested) {
    if (!original.includes(scope)) throw new OAuthError('invalid_scope', 'scope contains a scope that was not granted')
  }
  // The next generation keeps only what the client may still use (its permissions today).
  const granted = permittedScopes(client, original, ctx)
  for (const scope of requested) {
    if (!granted.includes(scope))
      throw new OAuthError('invalid_scope', 'scope names a scope the client may no longer use')
  }
  const resources = grantResources(allValues(params, 'resource'), record.resources, client, ctx)
  const tokenScopes = scopesForResources(requested.length > 0 ? requested : granted, resources, ctx)
  // RFC 9396 §7.2: a subset of the grant's authorization details (none named: all of them).
  const details = await grantDetails(params, record.authorizationDetails, client, ctx)
  // Core §5.4: the claims request holds only claims of scopes the client is still permitted (#39 item 4).
  const claims = permittedClaims(record.claims, client, ctx)
  const account = await requireAccount(record.sub, ctx, { scopes: tokenScopes, claims })
  return issueUserTokens(
    {
      familyId: record.familyId,
      sub: record.sub,
      scopes: granted,
      tokenScopes,
      ...(record.resources ? { resources: record.resources, tokenResources: resources } : {}),
      ...details,
      authTime: record.authTime,
      familyExpiresAt: record.familyExpiresAt,
      // The next generation belongs to the grant's same revision (#42: a merge or replace ends the earlier ones).
      ...(record.grantRevision ? { grantRevision: record.grantRevision } : {}),
      ...(record.sid !== undefined ? { sid: record.sid } : {}),
      ...(record.acr !== undefined ? { acr: record.acr } : {}),
      ...(record.amr !== undefined ? { amr: record.amr } : {}),
      ...(claims ? { claims } : {}),
    },
    client,
    ctx,
    { account, refresh: true, proof },
  )
}
