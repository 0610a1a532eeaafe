/**
 * @module grants/client_credentials
 * The client credentials grant (RFC 6749 §4.4) for service-to-service callers.
 * - only confidential clients (§4.4.2)
 * - each requested scope must be an API scope the client holds `scp:` for, else invalid_scope
 * - identity scopes (openid, profile, email, offline_access) need an end-user: invalid_scope
 * - no scope requested: every API scope the client is permitted
 * - `resource` (RFC 8707 §2): each the audience of a permitted scope, else invalid_target; the token's
 *   `aud` is exactly the resources, its scope only the scopes of those resources
 * - the response holds exactly access_token, token_type and expires_in (§4.4.3: no refresh token)
 * - with a DPoP proof (checked by the endpoint) the token is bound to its key, `cnf.jkt`, and the
 *   token_type is DPoP (RFC 9449 §5, §6.1)
 */
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { Permissions, scopePermission } from '../clients/index.ts'
import { parseScope } from '../config/index.ts'
import { type IssueAccessTokenInput, issueAccessToken } from '../tokens/index.ts'
import { metaOf } from '../security/index.ts'
import { allValues } from '../http.ts'
import { parseResources, scopesForResources } from '../protocol/index.ts'
import type { Grant } from './types.ts'

function grantedScopes(requested: string[], permissions: readonly string[], ctx: Context): string[] {
  if (requested.length === 0) {
    return permissions
      .filter((p) => p.startsWith(Permissions.Prefixes.Scope))
      .map((p) => p.slice(Permissions.Prefixes.Scope.length))
      .filter((scope) => ctx.scopes.get(scope) !== undefined && !ctx.scopes.isUserScope(scope))
  }
  for (const scope of requested) {
    if (ctx.scopes.get(scope) === undefined) throw new OAuthError('invalid_scope', 'scope contains an unknown scope')
    if (ctx.scopes.isUserScope(scope)) {
      throw new OAuthError('invalid_scope', 'scope contains a scope that requires an end-user')
    }
    if (!permissions.includes(scopePermission(scope))) {
      throw new OAuthError('invalid_scope', 'scope contains a scope the client is not allowed')
    }
  }
  return requested
}

export const clientCredentials: Grant = {
  type: 'client_credentials',
  permission: Permissions.GrantTypes.ClientCredentials,
  allowPublic: false,
  async handle(params, { client, request }, ctx, proof) {
    const requested = parseScope(params.get('scope'), ctx.config.limits.maxScopes)
    const resources = parseResources(allValues(params, 'resource'), client, ctx)
    const scopes = scopesForResources(grantedScopes(requested, client.permissions, ctx), resources, ctx)
    const ttl = client.lifetimes.accessToken ?? ctx.config.accessTokenTtl
    const audience = resources.length > 0 ? resources : ctx.scopes.audiences(scopes)
    const scope = scopes.join(' ')
    // The signing key and a synchronous signature (the usual case) are not awaited: each await is
    // a turn of the microtask queue on the hottest path of the service.
    const key = ctx.keyring.signingKey(ctx.config.accessTokenSigningAlg)
    const input: IssueAccessTokenInput = {
      issuer: ctx.config.issuer,
      sub: client.clientId,
      audience: audience.length > 0 ? audience : [ctx.config.issuer],
      clientId: client.clientId,
      scope,
      now: ctx.now(),
      ttl,
      client: true,
    }
    // RFC 9449 §6.1: bound to the proof's key.
    if (proof) input.jkt = proof.jkt
    const issued = issueAccessToken(input, key instanceof Promise ? await key : key)
    const { token, claims } = issued instanceof Promise ? await issued : issued
    if (ctx.emit.active) {
      ctx.emit(metaOf(request), {
        type: 'token.issued',
        grantType: 'client_credentials',
        clientId: client.clientId,
        sub: client.clientId,
        jti: claims.jti,
        scope,
      })
    }
    return { access_token: token, token_type: proof ? 'DPoP' : 'Bearer', expires_in: ttl }
  },
}
