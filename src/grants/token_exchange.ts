/**
 * @module grants/token_exchange
 * Token exchange (RFC 8693) for agents acting on behalf of users: a confidential client trades a
 * subject token (an active access token or an ID token of this issuer) for an access token about
 * the same subject that names the client, or the actor token's subject, as its actor (`act`, §4.1).
 * - `requested_token_type` absent or access_token (§2.1), else invalid_request
 * - subject and actor tokens: see `readExchangeToken` (anything wrong is invalid_request, §2.2.2)
 * - scope ⊆ the subject token's scope ∩ the client's `scp:` permissions, else invalid_scope;
 *   none requested: all of that intersection (an ID token has no scope: the client's permissions)
 * - `resource` (RFC 8707) and `audience` (§2.1): each a resource the client may target, and one
 *   that a granted scope is for, else invalid_target; the token's `aud` is exactly those, its scope
 *   only their API scopes. Neither: `aud` is the scopes' audiences, as in the other grants
 * - `act` = { sub: actor token's sub, else the client id }, nesting the subject token's `act`
 * - the subject's grant id (`gid`) is carried over: revoking that grant revokes this token
 * - lifetime: the client's access token lifetime, capped by the subject's (and actor's) remaining one
 * - the host's `tokenExchange.authorize` hook may refuse or narrow (see token_exchange_options.ts)
 * - response: access_token, issued_token_type, token_type (DPoP with a proof), expires_in, scope;
 *   never a refresh token (§2.2.1)
 */
import type { ClientRecord } from '../storage/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { allValues } from '../http.ts'
import { Permissions, scopePermission } from '../clients/index.ts'
import { metaOf } from '../security/index.ts'
import { parseAudiences, parseResources } from '../protocol/index.ts'
import { applyExchangePolicy, parseScope, type TokenExchangeParty, TokenTypes } from '../config/index.ts'
import { type TokenActor, issueAccessToken } from '../tokens/index.ts'
import { type ExchangeParty, checkBoundParty, readExchangeToken } from './token_exchange_subject.ts'
import type { Grant } from './types.ts'

/** The grant type (RFC 8693 §2.1). */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'

/** RFC 8693 §2.1: only access tokens are issued here. */
function checkRequestedTokenType(value: string | undefined): void {
  if (value !== undefined && value !== TokenTypes.AccessToken) {
    throw new OAuthError('invalid_request', 'requested_token_type must be an access token')
  }
}

/**
 * The scopes of the new token: the requested ones, each within the subject token's scope and
 * the client's `scp:` permissions, else invalid_scope; none requested, the whole intersection.
 * `offline_access` is never one (no refresh token). An empty result is invalid_scope.
 */
function exchangeScopes(requested: string[], subject: ExchangeParty, client: ClientRecord, ctx: Context): string[] {
  const candidates =
    subject.scope ??
    client.permissions
      .filter((p) => p.startsWith(Permissions.Prefixes.Scope))
      .map((p) => p.slice(Permissions.Prefixes.Scope.length))
  const available = candidates.filter(
    (scope) =>
      scope !== 'offline_access' &&
      ctx.scopes.get(scope) !== undefined &&
      client.permissions.includes(scopePermission(scope)),
  )
  for (const scope of requested) {
    if (!available.includes(scope)) {
      throw new OAuthError('invalid_scope', "scope is outside the subject token's scope or the client's scopes")
    }
  }
  const scopes = requested.length > 0 ? requested : available
  if (scopes.length === 0)
    throw new OAuthError('invalid_scope', 'no scope of the subject token is permitted to the client')
  return scopes
}

/**
 * The target of the new token (RFC 8707 `resource`, RFC 8693 `audience`): the resources and the
 * API scopes for them. Each resource needs a granted scope for it (a token for an API that the
 * subject never granted anything of is invalid_target). No resource: all scopes.
 */
function exchangeTarget(scopes: string[], resources: string[], ctx: Context): { scopes: string[]; audience: string[] } {
  if (resources.length === 0) {
    const audience = ctx.scopes.audiences(scopes)
    return { scopes, audience: audience.length > 0 ? audience : [ctx.config.issuer] }
  }
  const kept = scopes.filter((scope) => {
    const audience = ctx.scopes.get(scope)?.audience
    return audience !== undefined && resources.includes(audience)
  })
  for (const resource of resources) {
    if (!kept.some((scope) => ctx.scopes.get(scope)?.audience === resource)) {
      throw new OAuthError('invalid_target', 'the exchange grants no scope for a requested resource')
    }
  }
  return { scopes: kept, audience: resources }
}

/** RFC 8693 §4.1: the current actor, with the chain of prior actors the subject token carries. */
function actorClaim(subject: ExchangeParty, actor: ExchangeParty | undefined, client: ClientRecord): TokenActor {
  return { sub: actor?.sub ?? client.clientId, ...(subject.act !== undefined ? { act: subject.act } : {}) }
}

/** The audience after the host narrowed it: API scopes for audiences no longer there go too. */
function scopesForAudience(scopes: string[], audience: string[], ctx: Context): string[] {
  return scopes.filter((scope) => {
    const target = ctx.scopes.get(scope)?.audience
    return target === undefined || audience.includes(target)
  })
}

export const tokenExchange: Grant = {
  type: TOKEN_EXCHANGE,
  permission: Permissions.GrantTypes.TokenExchange,
  allowPublic: false,
  async handle(params, { client, request }, ctx, proof) {
    checkRequestedTokenType(params.get('requested_token_type'))
    const subject = (await readExchangeToken(params, 'subject', ctx)) as ExchangeParty
    const actor = await readExchangeToken(params, 'actor', ctx)
    checkBoundParty(subject, 'subject', proof?.jkt)
    checkBoundParty(actor, 'actor', proof?.jkt)
    const requested = parseScope(params.get('scope'), ctx.config.limits.maxScopes)
    const resources = [
      ...new Set([
        ...parseResources(allValues(params, 'resource'), client, ctx),
        ...parseAudiences(allValues(params, 'audience'), client, ctx),
      ]),
    ]
    const target = exchangeTarget(exchangeScopes(requested, subject, client, ctx), resources, ctx)
    const act = actorClaim(subject, actor, client)
    const granted = await applyExchangePolicy(ctx.config.tokenExchange, {
      clientId: client.clientId,
      subject: publicParty(subject),
      ...(actor ? { actor: publicParty(actor) } : {}),
      act,
      scope: target.scopes,
      audience: target.audience,
    })
    const scopes = scopesForAudience(granted.scope, granted.audience, ctx)
    if (scopes.length === 0) throw new OAuthError('invalid_scope', 'no scope of the exchange is left for its audience')
    const now = ctx.now()
    // The new token never outlives the tokens it was made from.
    const ttl = Math.min(
      client.lifetimes.accessToken ?? ctx.config.accessTokenTtl,
      subject.exp - now,
      actor ? actor.exp - now : Number.POSITIVE_INFINITY,
    )
    const scope = scopes.join(' ')
    const { token, claims } = await issueAccessToken(
      {
        issuer: ctx.config.issuer,
        sub: subject.sub,
        audience: granted.audience,
        clientId: client.clientId,
        scope,
        now,
        ttl,
        act,
        client: subject.isClient,
        ...(subject.gid !== undefined ? { familyId: subject.gid } : {}),
        ...(subject.authTime !== undefined ? { authTime: subject.authTime } : {}),
        // RFC 9449 §6.1: bound to the proof's key.
        ...(proof ? { jkt: proof.jkt } : {}),
      },
      await ctx.keyring.signingKey(ctx.config.accessTokenSigningAlg),
    )
    if (ctx.emit.active) {
      ctx.emit(metaOf(request), {
        type: 'token.exchanged',
        clientId: client.clientId,
        sub: subject.sub,
        actor: act.sub,
        subjectTokenType: subject.tokenType,
        jti: claims.jti,
        scope,
        ...(subject.gid !== undefined ? { grantId: subject.gid } : {}),
      })
    }
    return {
      access_token: token,
      issued_token_type: TokenTypes.AccessToken,
      token_type: proof ? 'DPoP' : 'Bearer',
      expires_in: ttl,
      scope,
    }
  },
}

/** What the host's hook sees of a party (no expiry, grant id or internal flags). */
function publicParty(party: ExchangeParty): TokenExchangeParty {
  return {
    sub: party.sub,
    tokenType: party.tokenType,
    ...(party.clientId !== undefined ? { clientId: party.clientId } : {}),
    ...(party.scope !== undefined ? { scope: party.scope } : {}),
    ...(party.act !== undefined ? { act: party.act } : {}),
  }
}
