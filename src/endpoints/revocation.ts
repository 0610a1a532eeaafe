/**
 * @module endpoints/revocation
 * Token revocation, POST /connect/revoke (RFC 7009). Checks, in order:
 * - the caller authenticates as at the token endpoint; public clients send client_id only
 * - `token` present (invalid_request); the hint only orders the search (§2.1)
 * - a token issued to another client is not revoked: invalid_request (§2.1 "refused")
 * - refresh token: its whole family is revoked (§2.1 SHOULD, RFC 9700 §4.14.2)
 * - JWT access token: its jti is denylisted until it expires
 * - unknown, expired or already revoked tokens: 200 all the same (§2.2), `{}` as JSON
 */
import { authenticateClient, requirePermission } from '../client_auth/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { noStoreJson, readForm } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import { looksLikeJwt, verifyAccessToken } from '../tokens/index.ts'
import type { RequestMeta } from '../events/index.ts'
import { metaOf } from '../security/index.ts'

function notYours(): OAuthError {
  return new OAuthError('invalid_request', 'the token was not issued to this client')
}

async function revokeRefreshToken(token: string, client: ClientRecord, ctx: Context, meta: RequestMeta) {
  const record = await ctx.store.refreshTokens.get(await ctx.sha256(token))
  if (!record) return false
  if (record.clientId !== client.clientId) throw notYours()
  await ctx.store.revocations.revokeFamily(record.familyId, record.familyExpiresAt)
  ctx.emit(meta, {
    type: 'token.revoked',
    tokenType: 'refresh_token',
    clientId: client.clientId,
    sub: record.sub,
    grantId: record.familyId,
  })
  return true
}

async function revokeAccessToken(token: string, client: ClientRecord, ctx: Context, meta: RequestMeta) {
  const claims = await verifyAccessToken(token, ctx.keyring, { issuer: ctx.config.issuer, now: ctx.now() })
  if (!claims) return false
  if (claims.client_id !== client.clientId) throw notYours()
  await ctx.store.revocations.revokeAccessToken(claims.jti, claims.exp)
  ctx.emit(meta, {
    type: 'token.revoked',
    tokenType: 'access_token',
    clientId: client.clientId,
    sub: claims.sub,
    jti: claims.jti,
    ...(claims.gid !== undefined ? { grantId: claims.gid } : {}),
  })
  return true
}

export async function handleRevocation(request: Request, ctx: Context): Promise<Response> {
  const params = await readForm(request, ctx.config.limits)
  const { client } = await authenticateClient(request, params, ctx, { allowPublic: true })
  requirePermission(client, Permissions.Endpoints.Revocation, 'the revocation endpoint')
  const token = params.get('token')
  if (token === undefined) throw new OAuthError('invalid_request', 'token is required')
  const meta = metaOf(request)
  if (looksLikeJwt(token)) {
    if (!(await revokeAccessToken(token, client, ctx, meta))) await revokeRefreshToken(token, client, ctx, meta)
  } else {
    await revokeRefreshToken(token, client, ctx, meta)
  }
  // RFC 7009 §2.2: 200 whether or not the token was known, and the client ignores the body. It is
  // `{}` as JSON rather than empty (#18): clients that parse every answer as JSON (simple-oauth2's
  // `revokeAll()`, through @hapi/wreck) fail on an empty body.
  return noStoreJson({})
}
