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
import { type ClientTokenJson, type IssueAccessTokenInput, clientTokenJson, issueAccessToken } from '../tokens/index.ts'
import { metaOf } from '../security/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import { allValues } from '../http.ts'
import { parseResources, scopesForResources } from '../protocol/index.ts'
import { type Grant, PLAIN_ACCESS_TOKEN } from './types.ts'

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

/** What a scope parameter grants a client when no resource is named. */
interface Granted {
  /** The token's `scope`. */
  scope: string
  audience: readonly string[]
  /** The JSON skeleton of the token, when it has one audience (see `ClientTokenJson`). */
  json: ClientTokenJson | undefined
}

/**
 * What each scope parameter granted, per service and per client permissions list: a client asks
 * with the same scope parameter on every request, and parsing and checking it again cost ~0.4 µs
 * (#44 item 4). Keyed by the permissions array itself: the store hands out a new record, with a
 * new array, on every read (and the client cache drops a record the registry changes), so a
 * changed client never finds the grants of its old permissions. Refusals are never remembered,
 * and a client's scope parameters beyond a few are worked out each time (the cache stays small).
 * The token's JSON skeleton is also made for the client id: `issueAccessToken` uses it only for
 * the claims it was made for, so a record sharing the array would only miss the shortcut.
 */
const grantedCache = new WeakMap<Context, WeakMap<readonly string[], Map<string, Granted>>>()
const GRANTED_PER_CLIENT = 8

function grantedFor(scopeParameter: string | undefined, client: ClientRecord, ctx: Context): Granted {
  const permissions = client.permissions
  let perClient = grantedCache.get(ctx)
  if (!perClient) {
    perClient = new WeakMap()
    grantedCache.set(ctx, perClient)
  }
  let byScope = perClient.get(permissions)
  // No scope parameter and an empty one grant the same (RFC 6749 §3.1: empty is omitted).
  const key = scopeParameter ?? ''
  const known = byScope?.get(key)
  if (known) return known
  const scopes = grantedScopes(parseScope(scopeParameter, ctx.config.limits.maxScopes), permissions, ctx)
  const scope = scopes.join(' ')
  const audience = ctx.scopes.audiences(scopes)
  const single = audience.length === 0 ? ctx.config.issuer : audience.length === 1 ? audience[0] : undefined
  const granted: Granted = Object.freeze({
    scope,
    audience: Object.freeze(audience),
    json: single === undefined ? undefined : clientTokenJson(ctx.config.issuer, client.clientId, single, scope),
  })
  if (!byScope) {
    byScope = new Map()
    perClient.set(permissions, byScope)
  }
  if (byScope.size < GRANTED_PER_CLIENT) byScope.set(key, granted)
  return granted
}

export const clientCredentials: Grant = {
  type: 'client_credentials',
  permission: Permissions.GrantTypes.ClientCredentials,
  allowPublic: false,
  async handle(params, { client, request }, ctx, proof) {
    const resourceValues = allValues(params, 'resource')
    let scope: string
    let audience: readonly string[]
    let json: ClientTokenJson | undefined
    if (resourceValues.length === 0) {
      const granted = grantedFor(params.get('scope'), client, ctx)
      scope = granted.scope
      audience = granted.audience
      json = granted.json
    } else {
      const requested = parseScope(params.get('scope'), ctx.config.limits.maxScopes)
      const resources = parseResources(resourceValues, client, ctx)
      scope = scopesForResources(grantedScopes(requested, client.permissions, ctx), resources, ctx).join(' ')
      audience = resources
    }
    const ttl = client.lifetimes.accessToken ?? ctx.config.accessTokenTtl
    // The signing key and a synchronous signature (the usual case) are not awaited: each await is
    // a turn of the microtask queue on the hottest path of the service.
    const key = ctx.keyring.signingKey(ctx.config.accessTokenSigningAlg)
    const input: IssueAccessTokenInput = {
      issuer: ctx.config.issuer,
      sub: client.clientId,
      audience: audience.length > 0 ? [...audience] : [ctx.config.issuer],
      clientId: client.clientId,
      scope,
      now: ctx.now(),
      ttl,
      client: true,
    }
    // RFC 9449 §6.1: bound to the proof's key.
    if (proof) input.jkt = proof.jkt
    const issued = issueAccessToken(input, key instanceof Promise ? await key : key, json)
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
    return { access_token: token, token_type: proof ? 'DPoP' : 'Bearer', expires_in: ttl, [PLAIN_ACCESS_TOKEN]: true }
  },
}
