/**
 * @module grants/token_exchange
 * Token exchange (RFC 8693) for agents acting on behalf of users: a confidential client trades a
 * subject token (an active access token or an ID token of this issuer) for an access token about
 * the same subject that names the client, or the actor token's subject, as its actor (`act`, §4.1).
 * Threat model: docs/security.md "Token exchange" (#39 items 1, 3, 6).
 * - `requested_token_type` absent or access_token (§2.1), else invalid_request; id-jag: an ID-JAG
 *   for another authorization server instead (#45, grants/id_jag.ts)
 * - subject and actor tokens: see `readExchangeToken` (anything wrong is invalid_request, §2.2.2);
 *   the subject's account (and a user actor's) must still exist, as at refresh
 * - scope ⊆ the subject's scope ∩ the client's `scp:` permissions, else invalid_scope; none
 *   requested: all of that intersection. An ID token's scope is its grant's: what the user
 *   consented to for the client the ID token was issued to, nothing more
 * - `resource` (RFC 8707) and `audience` (§2.1): each a resource the client may target, and one
 *   that a granted scope is for, else invalid_target; the token's `aud` is exactly those, its scope
 *   only their API scopes. Neither: `aud` is the scopes' audiences, as in the other grants. An ID
 *   token whose grant was made for resources keeps the new token within them
 * - `act` = { sub: actor token's sub, else the client id }, nesting the actor token's own `act`
 *   and then the subject token's (the whole chain of delegation, §4.1), at most `MAX_ACT_DEPTH` deep
 * - the subject's grant id (`gid`) is carried over, and every other grant the result depends on
 *   (the actor's, the session of an ID token subject, those its tokens depended on) in `gids`:
 *   revoking any of them revokes this token
 * - lifetime: the client's access token lifetime, capped by the subject's (and actor's) remaining
 *   one, and by the end of an ID token's grant
 * - the host's `tokenExchange.authorize` hook may refuse or narrow (see config/token_exchange.ts)
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
import { applyExchangePolicy, parseScope, TokenTypes } from '../config/index.ts'
import { type TokenActor, issueAccessToken } from '../tokens/index.ts'
import { type ExchangeParty, checkBoundParty, publicParty, readExchangeToken } from './token_exchange_subject.ts'
import type { Grant } from './types.ts'
import { touchGrant } from './grant_update.ts'
import { ID_JAG_TOKEN_TYPE, issueIdJag } from './id_jag_exchange.ts'

/** The grant type (RFC 8693 §2.1). */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'

/** RFC 8693 §2.1: access tokens are issued here (and ID-JAGs, grants/id_jag.ts). */
function checkRequestedTokenType(value: string | undefined): void {
  if (value !== undefined && value !== TokenTypes.AccessToken) {
    throw new OAuthError('invalid_request', 'requested_token_type must be an access token or an ID-JAG')
  }
}

/**
 * The scopes of the new token: the requested ones, each within the subject token's scope and
 * the client's `scp:` permissions, else invalid_scope; none requested, the whole intersection.
 * `offline_access` is never one (no refresh token). An empty result is invalid_scope.
 */
function exchangeScopes(requested: string[], subject: ExchangeParty, client: ClientRecord, ctx: Context): string[] {
  // #39 item 1: never the client's own permissions in place of the subject's scope.
  const available = (subject.scope ?? []).filter(
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

/** The deepest `act` chain an exchange builds (each exchange adds one link; a loop of agents stops here). */
export const MAX_ACT_DEPTH = 10

/** `chain` with `tail` appended after its last link. */
function appendActors(chain: TokenActor | undefined, tail: TokenActor | undefined): TokenActor | undefined {
  if (chain === undefined) return tail
  const rest = appendActors(chain.act, tail)
  return { sub: chain.sub, ...(rest !== undefined ? { act: rest } : {}) }
}

function actorDepth(actor: TokenActor | undefined): number {
  return actor === undefined ? 0 : 1 + actorDepth(actor.act)
}

/**
 * RFC 8693 §4.1: the current actor (the actor token's `sub`, else the client), then the actors the
 * actor token itself names (#39 item 3: an exchanged actor keeps its chain), then those of the
 * subject token: the whole delegation, most recent first.
 */
function actorClaim(subject: ExchangeParty, actor: ExchangeParty | undefined, client: ClientRecord): TokenActor {
  const prior = appendActors(actor?.act, subject.act)
  const act: TokenActor = { sub: actor?.sub ?? client.clientId, ...(prior !== undefined ? { act: prior } : {}) }
  if (actorDepth(act) > MAX_ACT_DEPTH) throw new OAuthError('invalid_request', 'the chain of delegation is too long')
  return act
}

/** Every grant the new token depends on besides the subject's `gid` (#39 items 1 and 3). */
function dependencies(subject: ExchangeParty, actor: ExchangeParty | undefined): string[] {
  const all = new Set([
    ...subject.dependsOn,
    ...(actor?.gid !== undefined ? [actor.gid] : []),
    ...(actor?.dependsOn ?? []),
  ])
  if (subject.gid !== undefined) all.delete(subject.gid)
  return [...all]
}

/** The requested resources, within an ID token grant's resources (#39 item 1): none asked, all of them. */
function subjectResources(requested: string[], subject: ExchangeParty): string[] {
  if (subject.resources === undefined) return requested
  if (requested.length === 0) return subject.resources
  if (requested.some((resource) => !subject.resources?.includes(resource))) {
    throw new OAuthError('invalid_target', 'a requested resource is outside the grant of the subject token')
  }
  return requested
}

/**
 * #39 item 6: the subject's account (and a user actor's) must still exist, as at refresh; a token
 * that stands for a client has no account.
 */
async function requireAccounts(parties: Array<ExchangeParty | undefined>, ctx: Context): Promise<void> {
  for (const party of parties) {
    if (party === undefined || party.isClient) continue
    const account = await ctx.accounts.findAccount(party.sub, { use: 'id_token', scopes: [], claims: [] })
    if (!account) throw new OAuthError('invalid_request', 'the end-user of a token no longer exists')
  }
}

/** The audience after the host narrowed it: API scopes for audiences no longer there go too. */
function scopesForAudience(scopes: string[], audience: string[], ctx: Context): string[] {
  return scopes.filter((scope) => {
    const target = ctx.scopes.get(scope)?.audience
    return target === undefined || audience.includes(target)
  })
}

/** The host's `tokenExchange.authorize` on the proposed token; the scopes left for the audience it keeps. */
async function hostPolicy(
  proposed: {
    client: ClientRecord
    subject: ExchangeParty
    actor: ExchangeParty | undefined
    act: TokenActor
    target: { scopes: string[]; audience: string[] }
  },
  ctx: Context,
): Promise<{ scope: string[]; audience: string[] }> {
  const { client, subject, actor, act, target } = proposed
  const granted = await applyExchangePolicy(ctx.config.tokenExchange, {
    requestedTokenType: 'access_token',
    clientId: client.clientId,
    subject: publicParty(subject),
    ...(actor ? { actor: publicParty(actor) } : {}),
    act,
    scope: target.scopes,
    audience: target.audience,
  })
  const scope = scopesForAudience(granted.scope, granted.audience, ctx)
  if (scope.length === 0) throw new OAuthError('invalid_scope', 'no scope of the exchange is left for its audience')
  return { scope, audience: granted.audience }
}

export const tokenExchange: Grant = {
  type: TOKEN_EXCHANGE,
  permission: Permissions.GrantTypes.TokenExchange,
  allowPublic: false,
  async handle(params, { client, request }, ctx, proof) {
    if (params.get('requested_token_type') === ID_JAG_TOKEN_TYPE) return issueIdJag(params, client, request, ctx)
    checkRequestedTokenType(params.get('requested_token_type'))
    const subject = (await readExchangeToken(params, 'subject', client, ctx)) as ExchangeParty
    const actor = await readExchangeToken(params, 'actor', client, ctx)
    checkBoundParty(subject, 'subject', proof?.jkt)
    checkBoundParty(actor, 'actor', proof?.jkt)
    const requested = parseScope(params.get('scope'), ctx.config.limits.maxScopes)
    const resources = subjectResources(
      [
        ...new Set([
          ...parseResources(allValues(params, 'resource'), client, ctx),
          ...parseAudiences(allValues(params, 'audience'), client, ctx),
        ]),
      ],
      subject,
    )
    const target = exchangeTarget(exchangeScopes(requested, subject, client, ctx), resources, ctx)
    const act = actorClaim(subject, actor, client)
    await requireAccounts([subject, actor], ctx)
    const granted = await hostPolicy({ client, subject, actor, act, target }, ctx)
    const scopes = granted.scope
    const now = ctx.now()
    // The new token never outlives the tokens it was made from.
    const ttl = Math.min(
      client.lifetimes.accessToken ?? ctx.config.accessTokenTtl,
      subject.exp - now,
      actor ? actor.exp - now : Number.POSITIVE_INFINITY,
    )
    const scope = scopes.join(' ')
    // An ID token subject's grant was read: its last use is recorded (to the minute) while signing.
    const used = subject.grantUsedAt !== undefined && touchGrant(subject.gid as string, subject.grantUsedAt, now, ctx)
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
        dependsOn: dependencies(subject, actor),
        ...(subject.authTime !== undefined ? { authTime: subject.authTime } : {}),
        // RFC 9449 §6.1: bound to the proof's key.
        ...(proof ? { jkt: proof.jkt } : {}),
      },
      await ctx.keyring.signingKey(ctx.config.accessTokenSigningAlg),
    )
    await used
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
