/**
 * @module protocol/active_token
 * Whether an access token is active: its signature verifies (cached until it expires) and neither
 * it nor its grant is revoked. Introspection (RFC 7662), UserInfo and token exchange's subject
 * token (RFC 8693 §2.1) all ask the same question.
 */
import type { Context } from '../context.ts'
import { type AccessTokenClaims, verifyAccessToken } from '../tokens/index.ts'

/** Verifies an access token and checks it is not revoked (denylisted jti or revoked grant). */
export async function findActiveAccessToken(token: string, ctx: Context): Promise<AccessTokenClaims | undefined> {
  const now = ctx.now()
  let claims = ctx.verifiedTokens.get(token, now)
  if (!claims) {
    claims = await verifyAccessToken(token, ctx.keyring, { issuer: ctx.config.issuer, now })
    if (!claims) return undefined
    ctx.verifiedTokens.set(token, claims)
  }
  // Asked together: stores that batch lookups answer them with one query (#20). An exchanged token
  // also depends on the grants in `gids` (#39 items 1 and 3).
  const revoked = await Promise.all([
    ctx.store.revocations.isAccessTokenRevoked(claims.jti),
    claims.gid !== undefined ? ctx.store.revocations.isFamilyRevoked(claims.gid) : false,
    ...(claims.gids ?? []).map((gid) => ctx.store.revocations.isFamilyRevoked(gid)),
  ])
  return revoked.includes(true) ? undefined : claims
}
