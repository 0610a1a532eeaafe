/**
 * @module grants/jwt_bearer_refresh
 * The opt-in refresh token of the jwt-bearer grant (#45, `identityAssertion.refreshTokens`): the
 * ID-JAG then makes a real end-user grant, recorded (`Store.grants`, kind `jwt_bearer`) with its
 * refresh token family, so the grants page, grant management, revocation and logout-free refresh
 * reach it as any other grant. Without the option (the default) there is no grant and no refresh
 * token: the client gets a new ID-JAG from the identity provider, whose policy then applies again.
 */
import type { ClientRecord } from '../storage/index.ts'
import type { Context } from '../context.ts'
import type { DpopProof } from '../dpop/index.ts'
import { randomToken } from '../crypto/index.ts'
import { grantRecordOf, issueUserTokens, type UserGrant, wantsRefreshToken } from './issue.ts'
import type { TokenResponse } from './types.ts'

/** What the grant decided to issue. */
export interface JwtBearerTarget {
  sub: string
  scopes: string[]
  resources: string[]
  authTime?: number
  /** The ID-JAG's scope had `offline_access`: the grant keeps it (what `requireOfflineAccess` reads at refresh). */
  offline: boolean
}

/**
 * Whether this redemption gets a refresh token: the host opted in, and the client may refresh
 * (`gt:refresh_token`; with `requireOfflineAccess`, the ID-JAG's scope has `offline_access`).
 */
export function offersRefresh(client: ClientRecord, assertionScopes: readonly string[], ctx: Context): boolean {
  return ctx.config.identityAssertion?.refreshTokens === true && wantsRefreshToken(client, assertionScopes, ctx)
}

/** Issues the access and refresh tokens of a new grant and records both. */
export async function issueWithRefresh(
  target: JwtBearerTarget,
  account: Record<string, unknown>,
  client: ClientRecord,
  ctx: Context,
  proof: DpopProof | undefined,
): Promise<{ response: TokenResponse; jti: string; grantId: string }> {
  const now = ctx.now()
  const grant: UserGrant = {
    familyId: randomToken(),
    sub: target.sub,
    // The grant keeps offline_access when the identity provider granted it; the access token never.
    scopes: target.offline ? [...target.scopes, 'offline_access'] : target.scopes,
    tokenScopes: target.scopes,
    ...(target.resources.length > 0 ? { resources: target.resources, tokenResources: target.resources } : {}),
    authTime: target.authTime ?? now,
    familyExpiresAt: now + ctx.config.refreshTokenFamilyTtl,
  }
  const { response, refreshRecord, jti, expiresAt } = await issueUserTokens(grant, client, ctx, {
    account,
    refresh: true,
    proof,
  })
  await Promise.all([
    refreshRecord && ctx.store.refreshTokens.insert(refreshRecord),
    ctx.store.grants.put(grantRecordOf(grant, client, { kind: 'jwt_bearer', createdAt: now, expiresAt })),
  ])
  return { response, jti, grantId: grant.familyId }
}
