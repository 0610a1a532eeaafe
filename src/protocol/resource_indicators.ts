/**
 * @module protocol/resource_indicators
 * Resource indicators (RFC 8707): the `resource` parameters of authorization and token requests.
 * A resource is the audience of an API scope; an access token asked for resources has exactly
 * those as its `aud`, and only the scopes of those resources (plus the end-user's identity scopes).
 * Such a token is for those resources only: UserInfo refuses it unless the issuer is one of them
 * (`isForUserinfo`, #27 item 4).
 */
import type { Context } from '../context.ts'
import type { AccessTokenClaims } from '../tokens/index.ts'
import { OAuthError } from '../errors.ts'
import { scopePermission } from '../clients/index.ts'
import type { ClientRecord } from '../storage/index.ts'

/** The parameters read multi-valued where resource indicators are taken (RFC 8707 §2: one per target). */
export const RESOURCE_PARAMETERS: ReadonlySet<string> = new Set(['resource'])

/** RFC 3986 §4.3 absolute-URI: a scheme, then the rest. */
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s#]+$/

/** Whether `resource` is the audience of an API scope the client is permitted (`scp:`). */
function isPermittedResource(resource: string, client: ClientRecord, ctx: Context): boolean {
  for (const name of ctx.scopes.names()) {
    if (ctx.scopes.get(name)?.audience === resource && client.permissions.includes(scopePermission(name))) return true
  }
  return false
}

/**
 * Parses the `resource` values of a request (RFC 8707 §2). Checks each, else invalid_target:
 * - an absolute URI (RFC 3986 §4.3) without a fragment
 * - the audience of a scope the client may request (its `scp:` permission)
 * - at most `limits.maxScopes` distinct values (one resource is one scope's audience at least)
 * Repeated values collapse. Descriptions name the parameter, never a value (#17).
 */
export function parseResources(values: readonly string[], client: ClientRecord, ctx: Context): string[] {
  const list: string[] = []
  for (const value of values) {
    if (list.includes(value)) continue
    if (!ABSOLUTE_URI.test(value)) {
      throw new OAuthError('invalid_target', 'resource must be an absolute URI without a fragment')
    }
    if (!isPermittedResource(value, client, ctx)) {
      throw new OAuthError('invalid_target', 'resource is not a resource the client may request')
    }
    list.push(value)
    if (list.length > ctx.config.limits.maxScopes) {
      throw new OAuthError('invalid_target', `at most ${ctx.config.limits.maxScopes} resources may be requested`)
    }
  }
  return list
}

/**
 * The `audience` values of a token exchange (RFC 8693 §2.1): logical names, so unlike `resource`
 * not necessarily URIs, each the audience of a scope the client may request, else invalid_target.
 * Repeated values collapse; at most `limits.maxScopes`.
 */
export function parseAudiences(values: readonly string[], client: ClientRecord, ctx: Context): string[] {
  const list = [...new Set(values)]
  if (list.length > ctx.config.limits.maxScopes) {
    throw new OAuthError('invalid_target', `at most ${ctx.config.limits.maxScopes} audiences may be requested`)
  }
  if (!list.every((audience) => isPermittedResource(audience, client, ctx))) {
    throw new OAuthError('invalid_target', 'audience is not an audience the client may request')
  }
  return list
}

/**
 * The resources of a token request for a grant (authorization code or refresh token, RFC 8707
 * §2.2): the requested ones (`parseResources`), each of which must be a resource of the grant, else
 * invalid_target; none requested: the grant's resources the client is still permitted (its
 * permissions are read at every use, as for scopes; none left of a non-empty list is
 * invalid_grant). A grant made without resources takes none at the token endpoint.
 */
export function grantResources(
  values: readonly string[],
  granted: readonly string[] | undefined,
  client: ClientRecord,
  ctx: Context,
): string[] {
  const requested = parseResources(values, client, ctx)
  for (const resource of requested) {
    if (!granted?.includes(resource)) throw new OAuthError('invalid_target', 'resource is not a resource of this grant')
  }
  if (requested.length > 0 || !granted?.length) return requested
  const kept = granted.filter((resource) => isPermittedResource(resource, client, ctx))
  if (kept.length === 0)
    throw new OAuthError('invalid_grant', 'the client may no longer use the resources of this grant')
  return kept
}

/**
 * The scopes among `scopes` that belong in a token for `resources`: every identity scope and
 * `offline_access` (they are for userinfo and the grant, not for an API), and the API scopes
 * whose audience is one of the resources. No resources: all of them.
 */
export function scopesForResources(scopes: readonly string[], resources: readonly string[], ctx: Context): string[] {
  if (resources.length === 0) return [...scopes]
  return scopes.filter((scope) => {
    const audience = ctx.scopes.get(scope)?.audience
    return audience === undefined || resources.includes(audience)
  })
}

/**
 * The API scopes the client is permitted whose audience is one of `resources`: the scope of an
 * authorization request that names resources but no scope (RFC 6749 §3.3 "pre-defined default").
 */
export function defaultScopesForResources(client: ClientRecord, resources: readonly string[], ctx: Context): string[] {
  return ctx.scopes.names().filter((name) => {
    const audience = ctx.scopes.get(name)?.audience
    return audience !== undefined && resources.includes(audience) && client.permissions.includes(scopePermission(name))
  })
}

/**
 * The store key that marks a grant (family) as bound to resources. Kept in the access-token
 * denylist (`Store.revocations`), which has the lifetime semantics wanted: it is the denial of
 * UserInfo to that family's tokens, and `jti`s (base64url) never contain `:`.
 */
function resourceBoundKey(familyId: string): string {
  return `userinfo-denied:${familyId}`
}

/**
 * Records that the grant `familyId` was made for explicit resources (RFC 8707), until `until`
 * (the expiry of the access token being issued; every issuance of the family writes it again).
 * Every token of such a grant has those resources as its `aud`, and that cannot be read from the
 * token: without resources, `aud` is the scopes' audiences, the same value for the same scopes.
 * Not a claim in the token: RFC 9068 consumers should not see a private claim for our endpoint.
 */
export function markResourceBound(familyId: string, until: number, ctx: Context): Promise<void> {
  return ctx.store.revocations.revokeAccessToken(resourceBoundKey(familyId), until)
}

/**
 * Whether an active access token may be used at UserInfo (#27 item 4): a token whose `aud` holds
 * the issuer may; a token of a grant made for explicit resources none of which is the issuer may
 * not (it was issued for those resource servers, which must not read the end-user's claims with
 * it); any other token may, as before (tokens without `resource`, whatever their scopes' audiences).
 */
export async function isForUserinfo(claims: AccessTokenClaims, ctx: Context): Promise<boolean> {
  const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  if (audience.includes(ctx.config.issuer)) return true
  // No family: a client_credentials token, which carries no identity scope (refused for openid).
  if (claims.gid === undefined) return true
  return !(await ctx.store.revocations.isAccessTokenRevoked(resourceBoundKey(claims.gid)))
}
