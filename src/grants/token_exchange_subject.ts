/**
 * @module grants/token_exchange_subject
 * The subject and actor tokens of a token exchange (RFC 8693 §2.1) and what binds them (#39 items
 * 1–3, docs/security.md "Token exchange"):
 * - an access token this issuer issued and that is active (the check introspection and userinfo
 *   make: signature, expiry, the token's and its grants' revocation). A user's access token of any
 *   client may be a subject (an API exchanging the token it was called with); a token that stands
 *   for a client (client_credentials) only when it is the exchanging client's own.
 * - an ID token of this issuer within its lifetime, issued to the exchanging client (another
 *   client's only where the host lists the pair in `tokenExchange.idTokenSubjects`), whose grant is
 *   alive and whose session, if it had one, too. It buys no more than that grant: its scopes and
 *   resources, and the new token dies with the grant and with the session.
 * - an actor token is the exchanging client's own (RFC 8693 §4.1: `act` names who acts, and only
 *   the authenticated client, or a token it holds, can say that): an access token issued to it, or
 *   an ID token issued to it.
 * Anything else is invalid_request (§2.2.2).
 */
import type { ClientRecord } from '../storage/index.ts'
import type { Context } from '../context.ts'
import { findActiveAccessToken, type IdTokenHintClaims, sessionFamilyId, verifyIdTokenHint } from '../protocol/index.ts'
import { OAuthError } from '../errors.ts'
import type { Params } from '../http.ts'
import type { TokenActor } from '../tokens/index.ts'
import { type TokenExchangeParty, TokenTypes } from '../config/index.ts'

/** A subject or actor token once verified: what the exchange carries over into the new token. */
export interface ExchangeParty extends TokenExchangeParty {
  /** The token's expiry (epoch s), or its grant's when that ends first: the new token lives no longer. */
  exp: number
  /** The grant (family) of the token: revoking it revokes the exchanged token too. */
  gid?: string
  /** The other grants (and session families) the token depends on: the exchanged token does too. */
  dependsOn: string[]
  /** The resources (RFC 8707) of an ID token's grant: the new token's audience stays within them. */
  resources?: string[]
  /** The end-user's authentication time. */
  authTime?: number
  /** The token stands for a client itself (a client_credentials token, `gty`). */
  isClient: boolean
  /** A DPoP-bound access token's key thumbprint (`cnf.jkt`): only a proof of that key exchanges it. */
  jkt?: string
  /** An ID token's grant: when its last use was recorded (`lastUsedAt`, else its creation). */
  grantUsedAt?: number
}

type Role = 'subject' | 'actor'

function refuse(role: Role, reason: string): never {
  throw new OAuthError('invalid_request', `the ${role}_token ${reason}`)
}

/** An access token's party: active (not expired, not revoked, no grant of it revoked), else undefined. */
async function accessTokenParty(
  token: string,
  role: Role,
  client: ClientRecord,
  ctx: Context,
): Promise<ExchangeParty | undefined> {
  const claims = await findActiveAccessToken(token, ctx)
  if (!claims) return undefined
  const isClient = claims.gty === 'client_credentials'
  // #39 item 3: a client acts only as itself, and no client passes for another.
  if (claims.client_id !== client.clientId && (role === 'actor' || isClient)) {
    refuse(role, 'was issued to another client')
  }
  return {
    sub: claims.sub,
    tokenType: 'access_token',
    clientId: claims.client_id,
    scope: claims.scope.split(' ').filter((s) => s !== ''),
    exp: claims.exp,
    isClient,
    dependsOn: claims.gids ?? [],
    ...(claims.act !== undefined ? { act: claims.act as TokenActor } : {}),
    ...(claims.gid !== undefined ? { gid: claims.gid } : {}),
    ...(claims.cnf !== undefined ? { jkt: claims.cnf.jkt } : {}),
    ...(claims.auth_time !== undefined ? { authTime: claims.auth_time } : {}),
  }
}

/** The client an ID token was issued to: `azp`, else its one audience. */
function idTokenClient(claims: IdTokenHintClaims): string | undefined {
  if (typeof claims.azp === 'string') return claims.azp
  if (typeof claims.aud === 'string') return claims.aud
  return claims.aud.length === 1 ? claims.aud[0] : undefined
}

/** Whether `client` may exchange ID tokens issued to `issuedTo`: its own, or a pair the host listed. */
function acceptsIdTokensOf(client: ClientRecord, issuedTo: string, role: Role, ctx: Context): boolean {
  if (issuedTo === client.clientId) return true
  return role === 'subject' && (ctx.config.tokenExchange?.idTokenSubjects?.[client.clientId] ?? []).includes(issuedTo)
}

/**
 * An ID token's party (#39 item 1): ours, of the ID token type, unexpired, issued to a client whose
 * ID tokens this client may use; its grant (`gid`) alive and the token's own, and its session, if
 * the grant was made in one, alive. The party's scope and resources are the grant's.
 */
async function idTokenParty(
  token: string,
  role: Role,
  client: ClientRecord,
  ctx: Context,
): Promise<ExchangeParty | undefined> {
  const claims = await verifyIdTokenHint(token, ctx)
  const now = ctx.now()
  // verifyIdTokenHint accepts expired hints; a subject token must be within its lifetime.
  if (!claims || typeof claims.exp !== 'number' || claims.exp <= now) return undefined
  const issuedTo = idTokenClient(claims)
  if (issuedTo === undefined || !acceptsIdTokensOf(client, issuedTo, role, ctx)) {
    refuse(role, 'is an ID token issued to another client')
  }
  if (typeof claims.gid !== 'string') refuse(role, 'names no grant (an ID token issued before grants were recorded)')
  const [grant, revoked] = await Promise.all([
    ctx.store.grants.get(claims.gid, now),
    ctx.store.revocations.isFamilyRevoked(claims.gid),
  ])
  if (!grant || revoked || grant.sub !== claims.sub || grant.clientId !== issuedTo) {
    refuse(role, 'belongs to a grant that ended or was revoked')
  }
  const dependsOn: string[] = []
  if (grant.sessionId !== undefined) {
    const session = await ctx.store.sessions.get(grant.sessionId)
    if (!session || session.expiresAt <= now || session.sid !== grant.sid) {
      refuse(role, 'belongs to a session that ended')
    }
    // A grant without offline_access ends with the session already; one with it does not, but
    // what is exchanged from its ID token must (the user signed out of what the token speaks for).
    if (!session.grants?.includes(grant.id)) dependsOn.push(await sessionFamilyId(session.id, ctx))
  }
  return {
    sub: claims.sub,
    tokenType: 'id_token',
    clientId: issuedTo,
    scope: grant.scope.split(' ').filter((s) => s !== ''),
    exp: Math.min(claims.exp, grant.expiresAt),
    isClient: false,
    gid: grant.id,
    grantUsedAt: grant.lastUsedAt ?? grant.createdAt,
    dependsOn,
    ...(grant.resources?.length ? { resources: grant.resources } : {}),
    ...(typeof claims.auth_time === 'number' ? { authTime: claims.auth_time } : {}),
  }
}

/**
 * Reads and verifies `{role}_token` with its `{role}_token_type` (RFC 8693 §2.1) for the
 * exchanging `client`. Checks, each invalid_request (§2.2.2):
 * - `subject_token` is present; an `actor_token_type` needs an `actor_token` and the reverse
 * - the type is access_token or id_token
 * - the token verifies as that type, is active, and binds as the module comment says
 * Returns undefined when there is no actor token.
 */
export async function readExchangeToken(
  params: Params,
  role: Role,
  client: ClientRecord,
  ctx: Context,
): Promise<ExchangeParty | undefined> {
  const token = params.get(`${role}_token`)
  const type = params.get(`${role}_token_type`)
  if (token === undefined) {
    if (role === 'subject') throw new OAuthError('invalid_request', 'subject_token is required')
    if (type !== undefined) throw new OAuthError('invalid_request', 'actor_token_type requires an actor_token')
    return undefined
  }
  if (type === undefined) throw new OAuthError('invalid_request', `${role}_token_type is required`)
  let party: ExchangeParty | undefined
  if (type === TokenTypes.AccessToken) party = await accessTokenParty(token, role, client, ctx)
  else if (type === TokenTypes.IdToken) party = await idTokenParty(token, role, client, ctx)
  else throw new OAuthError('invalid_request', `${role}_token_type is not supported`)
  if (!party) refuse(role, 'is invalid, expired or revoked')
  return party
}

/**
 * A DPoP-bound subject or actor token (RFC 9449 §6.1) is exchanged only with a proof of its own
 * key: otherwise a stolen bound token, useless at a resource server without the key, would become
 * a bearer token through any client allowed to exchange. The new token is bound to that key too.
 */
export function checkBoundParty(party: ExchangeParty | undefined, role: Role, proofJkt: string | undefined): void {
  if (party?.jkt !== undefined && party.jkt !== proofJkt) {
    throw new OAuthError('invalid_request', `the ${role}_token is DPoP-bound: send a DPoP proof of its key`)
  }
}

/** What the host's hook sees of a party (no expiry, grant ids or internal flags). */
export function publicParty(party: ExchangeParty): TokenExchangeParty {
  return {
    sub: party.sub,
    tokenType: party.tokenType,
    ...(party.clientId !== undefined ? { clientId: party.clientId } : {}),
    ...(party.scope !== undefined ? { scope: party.scope } : {}),
    ...(party.act !== undefined ? { act: party.act } : {}),
  }
}
