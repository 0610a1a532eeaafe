/**
 * @module grants/grant_update
 * A Grant Management `merge` or `replace` (oauth-v2-grant-management-03 §5.2) when its code is
 * redeemed: the live grant's permissions with the code's (merge) or the code's alone (replace),
 * the grant's next revision (the refresh tokens of earlier ones are refused: §5.2 "shall
 * invalidate existing refresh tokens"), and the grant's last use (`grants.touch`, to the minute).
 */
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { canonicalDetail } from '../protocol/index.ts'
import type { AuthorizationDetail, CodeRecord, GrantRecord, RequestedClaims } from '../storage/index.ts'

/** A grant's last use is recorded at most once a minute: refreshes closer together write nothing. */
export const GRANT_USE_INTERVAL = 60

/** What a grant allows: scopes, resources (RFC 8707), claims request (Core §5.5), details (RFC 9396). */
export interface GrantPermissions {
  scopes: string[]
  resources?: string[] | undefined
  claims?: RequestedClaims | undefined
  authorizationDetails?: AuthorizationDetail[] | undefined
}

/**
 * The revocation key of the refresh tokens of one revision of a grant (`<grant id>.r<revision>`):
 * a merge or replace revokes the previous one, and the refresh grant asks for it with the family
 * (one batched query). `.` is outside base64url, so it never names a family.
 */
export function revisionFamilyId(grantId: string, revision: number | undefined): string {
  return `${grantId}.r${revision ?? 0}`
}

/** The permissions a code carries. */
export function codePermissions(record: CodeRecord): GrantPermissions {
  return {
    scopes: record.scope === '' ? [] : record.scope.split(' '),
    resources: record.resources,
    claims: record.claims,
    authorizationDetails: record.authorizationDetails,
  }
}

/**
 * The live grant a merge or replace code updates: unexpired, of the code's client and end-user
 * (its revocation is the family's, which the redemption checks). Gone → invalid_grant.
 */
export async function liveGrantOf(record: CodeRecord, now: number, ctx: Context): Promise<GrantRecord> {
  const grant = await ctx.store.grants.get(record.familyId, now)
  if (!grant || grant.clientId !== record.clientId || grant.sub !== record.sub) {
    throw new OAuthError('invalid_grant', 'the grant this code updates has ended')
  }
  return grant
}

function union(a: readonly string[] | undefined, b: readonly string[] | undefined): string[] {
  return [...new Set([...(a ?? []), ...(b ?? [])])]
}

function mergedClaims(a: RequestedClaims | undefined, b: RequestedClaims | undefined): RequestedClaims | undefined {
  if (!a || !b) return a ?? b
  const userinfo = union(a.userinfo, b.userinfo)
  const idToken = union(a.id_token, b.id_token)
  return { ...(userinfo.length ? { userinfo } : {}), ...(idToken.length ? { id_token: idToken } : {}) }
}

function mergedDetails(
  a: AuthorizationDetail[] | undefined,
  b: AuthorizationDetail[] | undefined,
): AuthorizationDetail[] | undefined {
  if (!a || !b) return a ?? b
  // RFC 9396 §2: equal details (as JSON values, whatever their member order) are one.
  const kept = new Map<string, AuthorizationDetail>()
  for (const detail of [...a, ...b]) if (!kept.has(canonicalDetail(detail))) kept.set(canonicalDetail(detail), detail)
  return [...kept.values()]
}

/**
 * A merge: the union of the live grant's permissions and the code's (§5.2). Resources: a grant
 * bound to resources stays bound only when both are (a request for no resource asks for its
 * scopes' own audiences, which a bound grant's resources are among: binding the union would drop
 * the scopes of the request the end-user just approved).
 */
export function mergedPermissions(live: GrantRecord, code: GrantPermissions): GrantPermissions {
  const bound = (live.resources?.length ?? 0) > 0 && (code.resources?.length ?? 0) > 0
  return {
    scopes: union(live.scope === '' ? [] : live.scope.split(' '), code.scopes),
    resources: bound ? union(live.resources, code.resources) : undefined,
    claims: mergedClaims(live.claims, code.claims),
    authorizationDetails: mergedDetails(live.authorizationDetails, code.authorizationDetails),
  }
}

/**
 * The grant's record after the update: the new permissions (`fresh`, as `grantRecordOf` made it)
 * under the grant's own id, creation and kind, its next revision, used now, ending with whichever
 * ends later.
 */
export function updatedGrantRecord(live: GrantRecord, fresh: GrantRecord, now: number): GrantRecord {
  return {
    ...fresh,
    kind: live.kind,
    createdAt: live.createdAt,
    expiresAt: Math.max(live.expiresAt, fresh.expiresAt),
    lastUsedAt: now,
    revision: (live.revision ?? 0) + 1,
  }
}

/**
 * Refuses the refresh tokens of the live grant's revision (§5.2) once the update's tokens are
 * issued; the mark lasts as long as any of them could.
 */
export function endRevision(live: GrantRecord, until: number, ctx: Context): Promise<void> {
  const end = Math.max(until, live.expiresAt, ctx.now() + ctx.config.refreshTokenFamilyTtl)
  return ctx.store.revocations.revokeFamily(revisionFamilyId(live.id, live.revision), end)
}

/**
 * Records a use of grant `id` now (`grants.touch`) when the last one recorded, `last`, is
 * `GRANT_USE_INTERVAL` or more ago: uses closer together write nothing (last use is kept to the
 * minute). Resolves whether it wrote; a failed write is logged, never the request's failure.
 */
export function touchGrant(id: string, last: number, now: number, ctx: Context): Promise<boolean> {
  const touch = ctx.store.grants.touch
  if (now - last < GRANT_USE_INTERVAL || !touch) return Promise.resolve(false)
  return touch.call(ctx.store.grants, id, now).then(
    () => true,
    (err: unknown) => {
      ctx.logger.warn('the grant’s last use was not recorded', { grantId: id, err })
      return true
    },
  )
}
