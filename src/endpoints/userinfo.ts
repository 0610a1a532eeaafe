/**
 * @module endpoints/userinfo
 * The UserInfo endpoint, GET and POST /connect/userinfo (OpenID Connect Core §5.3). Checks:
 * - the access token comes from the Authorization header (scheme case-insensitive) or, for a POST
 *   form, the `access_token` parameter (RFC 6750 §2.2); both at once is invalid_request
 * - no token: 401 with a Bearer challenge and no error code (RFC 6750 §3.1)
 * - bad, expired or revoked token: 401 invalid_token
 * - token without `openid`: 403 insufficient_scope
 * - claims released by the token's identity scopes, always with `sub`
 */
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { bearerToken, mediaType, noStoreJson, readForm } from '../http.ts'
import { scopedClaims } from '../grants/issue.ts'
import { findActiveAccessToken } from './introspection.ts'

async function readAccessToken(request: Request, ctx: Context): Promise<string | undefined> {
  const header = request.headers.get('authorization')
  const fromHeader = bearerToken(header)
  if (header !== null && header.trim() !== '' && fromHeader === undefined) {
    throw new OAuthError('invalid_token', 'the Authorization header is not a Bearer token', { challenge: 'Bearer' })
  }
  let fromBody: string | undefined
  if (
    request.method === 'POST' &&
    mediaType(request.headers.get('content-type') ?? '') === 'application/x-www-form-urlencoded'
  ) {
    fromBody = (await readForm(request, ctx.config.limits)).get('access_token')
  }
  if (fromHeader !== undefined && fromBody !== undefined) {
    throw new OAuthError('invalid_request', 'send the access token in one place only', { challenge: 'Bearer' })
  }
  return fromHeader ?? fromBody
}

export async function handleUserinfo(request: Request, ctx: Context): Promise<Response> {
  const token = await readAccessToken(request, ctx)
  if (token === undefined) {
    throw new OAuthError('invalid_token', 'an access token is required', { challenge: 'Bearer', challengeError: false })
  }
  const claims = await findActiveAccessToken(token, ctx)
  if (!claims)
    throw new OAuthError('invalid_token', 'the access token is invalid, expired or revoked', { challenge: 'Bearer' })
  const scopes = claims.scope.split(' ')
  if (!scopes.includes('openid')) {
    throw new OAuthError('insufficient_scope', 'the access token lacks the openid scope', { challenge: 'Bearer' })
  }
  const account = await ctx.accounts.findAccount(claims.sub)
  if (!account) throw new OAuthError('invalid_token', 'the end-user no longer exists', { challenge: 'Bearer' })
  return noStoreJson({ sub: claims.sub, ...scopedClaims(account, scopes, ctx) })
}
