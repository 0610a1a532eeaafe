/**
 * @module endpoints/grant_management
 * The Grant Management API (Grant Management for OAuth 2.0, OpenID FAPI WG, §6), GET and DELETE
 * {issuer}/connect/grants/{grant_id}: a client queries or revokes one of its grants. Checks:
 * - the access token comes from the Authorization header, scheme Bearer (RFC 6750 §2.1) or DPoP
 *   (RFC 9449 §7.1), checked as UserInfo checks it: none → 401 with a challenge and no error
 *   code (RFC 6750 §3.1); bad, expired or revoked → 401 invalid_token; a DPoP-bound token needs
 *   the DPoP scheme and a proof for the grant's URL (`checkTokenBinding`)
 * - §6.1: the token is the client's own, from the client credentials grant: `gty` is
 *   `client_credentials`, `sub` is its `client_id`, it belongs to no grant (`gid`, `gids`) and
 *   has no actor (`act`): a token a user granted (or one exchanged from it) acts for that user,
 *   not for the client, and is 401 invalid_token
 * - §6.1: the scope `grant_management_query` for GET, `grant_management_revoke` for DELETE, and
 *   the client still holds it (`scp:`): else 403 insufficient_scope (RFC 6750 §3.1)
 * - its audience holds the issuer (the scopes' audience; a token for a resource server is not for
 *   this API): else 401 invalid_token
 * - §6.6: the grant is a live grant of that client: an unknown, malformed, expired or revoked
 *   grant id and another client's grant are all the same 404 `invalid_grant_id`: nothing revealed
 * - GET (§6.4): 200 with the grant's scopes (with its resources, RFC 8707), the claim names of its
 *   claims request, its authorization details (RFC 9396), created_at and expires_at; no-store
 * - DELETE (§6.5): 204; the grant and every token of it (codes, refresh and access tokens,
 *   exchanged ones too) are revoked at once, and `grant.revoked` is emitted (by: client)
 */
import { scopePermission } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { type PresentedToken, checkTokenBinding, dpopChallengeError, readAuthorization } from '../dpop/index.ts'
import { OAuthError, type OAuthErrorCode } from '../errors.ts'
import { noStoreJson } from '../http.ts'
import { findActiveAccessToken, findGrantRecord, revokeGrant } from '../protocol/index.ts'
import { metaOf } from '../security/index.ts'
import type { GrantRecord } from '../storage/index.ts'
import type { AccessTokenClaims } from '../tokens/index.ts'

/** A grant id as the service makes them (base64url random); anything else is unknown without a lookup. */
const GRANT_ID = /^[A-Za-z0-9_-]{1,128}$/

/** The scope each method needs (§6.1). */
const SCOPE_OF: Readonly<Record<string, string>> = {
  GET: 'grant_management_query',
  HEAD: 'grant_management_query',
  DELETE: 'grant_management_revoke',
}

/** An error challenging with the scheme the token came with. */
function tokenError(
  presented: PresentedToken,
  code: OAuthErrorCode,
  description: string,
  ctx: Context,
  scope?: string,
): OAuthError {
  if (presented.scheme === 'DPoP') return dpopChallengeError(code, description, ctx)
  return new OAuthError(code, description, {
    challenge: 'Bearer',
    // RFC 6750 §3: the scope the request needs.
    ...(scope !== undefined ? { challengeParams: { scope } } : {}),
  })
}

/** §6.6: every grant the caller may not see is answered alike. */
function unknownGrant(): OAuthError {
  return new OAuthError('invalid_grant_id', 'no such grant', { status: 404 })
}

/**
 * The request's URL as the service names it (the issuer's origin, the request's path: the DPoP
 * proof's `htu`, RFC 9449 §4.3) and the grant id of its path, when it has the form of one.
 */
function grantIdOf(request: Request, ctx: Context): { url: string; id: string | undefined } {
  const prefix = `${new URL(ctx.urls.grantManagement).pathname}/`
  const pathname = new URL(request.url).pathname
  const rest = pathname.startsWith(prefix) ? pathname.slice(prefix.length) : ''
  return { url: new URL(pathname, ctx.config.issuer).href, id: GRANT_ID.test(rest) ? rest : undefined }
}

/** Whether the token is the client's own, from the client credentials grant (§6.1; see the module). */
function isClientToken(claims: AccessTokenClaims): boolean {
  return (
    claims.gty === 'client_credentials' &&
    claims.sub === claims.client_id &&
    claims.gid === undefined &&
    claims.gids === undefined &&
    claims.act === undefined
  )
}

/** Whether the token is for this service (its audience holds the issuer, as the Grant Management scopes' does). */
function isForIssuer(claims: AccessTokenClaims, ctx: Context): boolean {
  return (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).includes(ctx.config.issuer)
}

/** Whether the client still exists and holds `scope` (a client gone or unusable holds none). */
async function holdsScope(clientId: string, scope: string, ctx: Context): Promise<boolean> {
  try {
    return (await ctx.clients.get(clientId))?.permissions.includes(scopePermission(scope)) ?? false
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err
    return false
  }
}

/**
 * Authenticates the caller: the client whose own token, with the scope `scope`, the request carries.
 * Throws the RFC 6750 / RFC 9449 error otherwise.
 */
async function authenticate(request: Request, url: string, scope: string, ctx: Context): Promise<string> {
  const presented = readAuthorization(request.headers.get('authorization'))
  if (presented === undefined) {
    throw new OAuthError('invalid_token', 'the Authorization header is not a Bearer or DPoP token', {
      challenge: 'Bearer',
    })
  }
  if (presented === null) {
    throw new OAuthError('invalid_token', 'an access token is required', { challenge: 'Bearer', challengeError: false })
  }
  const claims = await findActiveAccessToken(presented.token, ctx)
  if (!claims) throw tokenError(presented, 'invalid_token', 'the access token is invalid, expired or revoked', ctx)
  await checkTokenBinding(presented, claims, request, url, ctx)
  if (!isClientToken(claims)) {
    throw tokenError(presented, 'invalid_token', "the access token is not the client's own (client credentials)", ctx)
  }
  if (!claims.scope.split(' ').includes(scope) || !(await holdsScope(claims.client_id, scope, ctx))) {
    throw tokenError(presented, 'insufficient_scope', `the access token lacks the ${scope} scope`, ctx, scope)
  }
  if (!isForIssuer(claims, ctx)) {
    throw tokenError(presented, 'invalid_token', 'the access token was issued for another resource', ctx)
  }
  return claims.client_id
}

/**
 * §6.4: the grant as its client may see it. Its scopes are one chunk with its resources (the
 * mapping is the AS's choice); `claims` are the claim names of its claims request (Core §5.5).
 */
export function grantResource(record: GrantRecord): Record<string, unknown> {
  const claims = [...new Set([...(record.claims?.userinfo ?? []), ...(record.claims?.id_token ?? [])])]
  const chunk = {
    ...(record.scope !== '' ? { scope: record.scope } : {}),
    ...(record.resources?.length ? { resource: record.resources } : {}),
  }
  return {
    scopes: Object.keys(chunk).length > 0 ? [chunk] : [],
    ...(claims.length > 0 ? { claims } : {}),
    ...(record.authorizationDetails?.length ? { authorization_details: record.authorizationDetails } : {}),
    created_at: record.createdAt,
    expires_at: record.expiresAt,
  }
}

/** GET and DELETE {grant_management_endpoint}/{grant_id}. */
export async function handleGrantManagement(request: Request, ctx: Context): Promise<Response> {
  const scope = SCOPE_OF[request.method]
  if (scope === undefined) throw new OAuthError('invalid_request', 'the request method is not allowed here')
  // RFC 9449 §4.3: the proof's htu is the grant's URL, on the issuer's origin (never from Host).
  const { url, id } = grantIdOf(request, ctx)
  const clientId = await authenticate(request, url, scope, ctx)
  if (id === undefined) throw unknownGrant()
  if (request.method === 'DELETE') {
    const revoked = await revokeGrant(id, ctx, { by: 'client', meta: metaOf(request), owner: { clientId } })
    if (!revoked) throw unknownGrant()
    return new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } })
  }
  const record = await findGrantRecord(id, ctx)
  if (!record || record.clientId !== clientId) throw unknownGrant()
  return noStoreJson(grantResource(record))
}
