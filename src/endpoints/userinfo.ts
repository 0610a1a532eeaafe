/**
 * @module endpoints/userinfo
 * The UserInfo endpoint, GET and POST /connect/userinfo (OpenID Connect Core §5.3). Checks:
 * - the access token comes from the Authorization header, scheme Bearer (RFC 6750 §2.1) or DPoP
 *   (RFC 9449 §7.1), case-insensitive, or, for a POST form, the `access_token` parameter (RFC 6750
 *   §2.2, a Bearer use); both at once is invalid_request
 * - no token: 401 with a Bearer challenge and no error code (RFC 6750 §3.1)
 * - bad, expired or revoked token: 401 invalid_token
 * - DPoP (see `checkTokenBinding`): a DPoP-bound token needs the DPoP scheme and a proof for this
 *   URL with `ath`, made with the token's key; the DPoP scheme needs a DPoP-bound token. Each
 *   failure is a 401 with a DPoP challenge (`use_dpop_nonce` with a `DPoP-Nonce` header, §9)
 * - a token issued for explicit `resource` indicators (RFC 8707) none of which is the issuer: 401
 *   invalid_token (it is for those resource servers, not for the end-user's claims; #27 item 4)
 * - token without `openid`: 403 insufficient_scope
 * - claims released by the token's identity scopes and its claims request (Core §5.5), always with `sub`;
 *   a requested claim of a scope the client is not permitted (now) is not (§5.4; #39 item 4)
 */
import type { Context } from '../context.ts'
import { type PresentedToken, checkTokenBinding, dpopChallengeError, readAuthorization } from '../dpop/index.ts'
import { OAuthError, type OAuthErrorCode } from '../errors.ts'
import { mediaType, noStoreJson, readForm } from '../http.ts'
import { scopedClaims } from '../grants/index.ts'
import { findActiveAccessToken, isForUserinfo, isPermittedClaim } from '../protocol/index.ts'
import type { AccessTokenClaims } from '../tokens/index.ts'

async function readAccessToken(request: Request, ctx: Context): Promise<PresentedToken | undefined> {
  const fromHeader = readAuthorization(request.headers.get('authorization'))
  if (fromHeader === undefined) {
    throw new OAuthError('invalid_token', 'the Authorization header is not a Bearer or DPoP token', {
      challenge: 'Bearer',
    })
  }
  let fromBody: string | undefined
  if (
    request.method === 'POST' &&
    mediaType(request.headers.get('content-type') ?? '') === 'application/x-www-form-urlencoded'
  ) {
    fromBody = (await readForm(request, ctx.config.limits)).get('access_token')
  }
  if (fromHeader !== null && fromBody !== undefined) {
    throw new OAuthError('invalid_request', 'send the access token in one place only', { challenge: 'Bearer' })
  }
  return fromHeader ?? (fromBody === undefined ? undefined : { token: fromBody, scheme: 'Bearer' })
}

/** An error challenging with the scheme the token came with. */
function tokenError(presented: PresentedToken, code: OAuthErrorCode, description: string, ctx: Context): OAuthError {
  return presented.scheme === 'DPoP'
    ? dpopChallengeError(code, description, ctx)
    : new OAuthError(code, description, { challenge: 'Bearer' })
}

/**
 * The claims the token's claims request asks userinfo for (its `uic`, Core §5.5) that the client
 * may still ask for: a claim of a scope it is no longer permitted is dropped (Core §5.4), as the
 * ID token and refresh drop it. The client is looked up only when the token names claims.
 */
async function requestedClaims(claims: AccessTokenClaims, ctx: Context): Promise<string[]> {
  const requested = Array.isArray(claims.uic) ? claims.uic.filter((name) => typeof name === 'string') : []
  if (requested.length === 0) return requested
  // A client gone (or whose metadata document is now unusable) is permitted no scope.
  let permissions: string[] = []
  try {
    permissions = (await ctx.clients.get(claims.client_id))?.permissions ?? []
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err
  }
  return requested.filter((name) => isPermittedClaim(name, { permissions }, ctx))
}

export async function handleUserinfo(request: Request, ctx: Context): Promise<Response> {
  const presented = await readAccessToken(request, ctx)
  if (presented === undefined) {
    throw new OAuthError('invalid_token', 'an access token is required', { challenge: 'Bearer', challengeError: false })
  }
  const claims = await findActiveAccessToken(presented.token, ctx)
  if (!claims) throw tokenError(presented, 'invalid_token', 'the access token is invalid, expired or revoked', ctx)
  await checkTokenBinding(presented, claims, request, ctx.urls.userinfo, ctx)
  if (!(await isForUserinfo(claims, ctx))) {
    throw tokenError(presented, 'invalid_token', 'the access token was issued for another resource', ctx)
  }
  const scopes = claims.scope.split(' ')
  if (!scopes.includes('openid')) {
    throw tokenError(presented, 'insufficient_scope', 'the access token lacks the openid scope', ctx)
  }
  // Core §5.5: the claims the grant's claims request asked userinfo for (carried by the token).
  const requested = await requestedClaims(claims, ctx)
  const account = await ctx.accounts.findAccount(claims.sub, { use: 'userinfo', scopes, claims: requested })
  if (!account) throw tokenError(presented, 'invalid_token', 'the end-user no longer exists', ctx)
  return noStoreJson({ sub: claims.sub, ...scopedClaims(account, scopes, ctx, requested) })
}
