/**
 * @module grants/token_exchange_subject
 * The subject and actor tokens of a token exchange (RFC 8693 §2.1): an access token this issuer
 * issued and that is active (the check introspection and userinfo make: signature, expiry, the
 * token's and its grant's revocation), or an ID token of this issuer within its lifetime (the
 * `id_token_hint` verification, without its tolerance for expiry).
 */
import type { Context } from '../context.ts'
import { findActiveAccessToken, verifyIdTokenHint } from '../protocol/index.ts'
import { OAuthError } from '../errors.ts'
import type { Params } from '../http.ts'
import type { TokenActor } from '../tokens/index.ts'
import { type TokenExchangeParty, TokenTypes } from '../config/index.ts'

/** A subject or actor token once verified: what the exchange carries over into the new token. */
export interface ExchangeParty extends TokenExchangeParty {
  /** The token's expiry (epoch s): the new token lives no longer. */
  exp: number
  /** The grant (family) of an access token: revoking it revokes the exchanged token too. */
  gid?: string
  /** The end-user's authentication time. */
  authTime?: number
  /** The token stands for a client itself (a client_credentials token, `gty`). */
  isClient: boolean
  /** A DPoP-bound access token's key thumbprint (`cnf.jkt`): only a proof of that key exchanges it. */
  jkt?: string
}

/** An access token's party: active (not expired, not revoked, grant not revoked), else undefined. */
async function accessTokenParty(token: string, ctx: Context): Promise<ExchangeParty | undefined> {
  const claims = await findActiveAccessToken(token, ctx)
  if (!claims) return undefined
  const scope = claims.scope.split(' ').filter((s) => s !== '')
  return {
    sub: claims.sub,
    tokenType: 'access_token',
    clientId: claims.client_id,
    scope,
    exp: claims.exp,
    isClient: claims.gty === 'client_credentials',
    ...(claims.act !== undefined ? { act: claims.act as TokenActor } : {}),
    ...(claims.gid !== undefined ? { gid: claims.gid } : {}),
    ...(claims.cnf !== undefined ? { jkt: claims.cnf.jkt } : {}),
    ...(claims.auth_time !== undefined ? { authTime: claims.auth_time } : {}),
  }
}

/** An ID token's party: ours and not expired (an ID token is not revocable), else undefined. */
async function idTokenParty(token: string, ctx: Context): Promise<ExchangeParty | undefined> {
  const claims = await verifyIdTokenHint(token, ctx)
  // verifyIdTokenHint accepts expired hints; a subject token must be within its lifetime.
  if (!claims || typeof claims.exp !== 'number' || claims.exp <= ctx.now()) return undefined
  const audience = Array.isArray(claims.aud) ? claims.aud[0] : claims.aud
  return {
    sub: claims.sub,
    tokenType: 'id_token',
    exp: claims.exp,
    isClient: false,
    ...(typeof audience === 'string' ? { clientId: audience } : {}),
    ...(typeof claims.auth_time === 'number' ? { authTime: claims.auth_time } : {}),
  }
}

/**
 * Reads and verifies `{role}_token` with its `{role}_token_type` (RFC 8693 §2.1). Checks, each
 * invalid_request (§2.2.2):
 * - `subject_token` is present; an `actor_token_type` needs an `actor_token` and the reverse
 * - the type is access_token or id_token
 * - the token verifies as that type and is active
 * Returns undefined when there is no actor token.
 */
export async function readExchangeToken(
  params: Params,
  role: 'subject' | 'actor',
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
  if (type === TokenTypes.AccessToken) party = await accessTokenParty(token, ctx)
  else if (type === TokenTypes.IdToken) party = await idTokenParty(token, ctx)
  else throw new OAuthError('invalid_request', `${role}_token_type is not supported`)
  if (!party) throw new OAuthError('invalid_request', `the ${role}_token is invalid, expired or revoked`)
  return party
}

/**
 * A DPoP-bound subject or actor token (RFC 9449 §6.1) is exchanged only with a proof of its own
 * key: otherwise a stolen bound token, useless at a resource server without the key, would become
 * a bearer token through any client allowed to exchange. The new token is bound to that key too.
 */
export function checkBoundParty(
  party: ExchangeParty | undefined,
  role: 'subject' | 'actor',
  proofJkt: string | undefined,
): void {
  if (party?.jkt !== undefined && party.jkt !== proofJkt) {
    throw new OAuthError('invalid_request', `the ${role}_token is DPoP-bound: send a DPoP proof of its key`)
  }
}
