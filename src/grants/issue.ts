/**
 * @module grants/issue
 * Issues the tokens of an end-user grant (authorization_code and refresh_token): access token,
 * ID token when `openid` is granted, and the next refresh token generation of the family. With a
 * DPoP proof the access token is bound to its key (RFC 9449 §6.1, token_type DPoP), and so is a
 * public client's refresh token (§5).
 */
import type { Config, IdTokenClaims } from '../config/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { isConfidential, Permissions, scopePermission } from '../clients/index.ts'
import type { DpopProof } from '../dpop/index.ts'
import type {
  AuthorizationDetail,
  ClientRecord,
  GrantRecord,
  RefreshTokenRecord,
  RequestedClaims,
} from '../storage/index.ts'
import { issueAccessToken, type IssueAccessTokenInput, issueIdToken, type IssueIdTokenInput } from '../tokens/index.ts'
import type { SigningKey } from '../keys/index.ts'
import { randomToken, signingAlgorithms } from '../crypto/index.ts'
import { markResourceBound, narrowAuthorizationDetails } from '../protocol/index.ts'
import type { Params } from '../http.ts'
import type { TokenResponse } from './types.ts'

/** What an end-user grant is about. */
export interface UserGrant {
  familyId: string
  sub: string
  /** Scopes of the grant (the refresh token keeps these). */
  scopes: string[]
  /** Scopes of this access token (⊆ scopes). */
  tokenScopes: string[]
  /** Resources of the grant (RFC 8707; the refresh token keeps these). */
  resources?: string[]
  /** Resources of this access token (⊆ resources): its `aud` exactly, when any. */
  tokenResources?: string[]
  /** Authorization details of the grant (RFC 9396; the refresh token keeps these). */
  authorizationDetails?: AuthorizationDetail[]
  /** Authorization details of this access token (⊆ authorizationDetails, §6.1). */
  tokenAuthorizationDetails?: AuthorizationDetail[]
  authTime: number
  sid?: string
  acr?: string
  amr?: string[]
  nonce?: string
  /** The approved claims request (Core §5.5): ID token and userinfo release these too. */
  claims?: RequestedClaims
  /** Absolute end of the refresh token family (epoch s). */
  familyExpiresAt: number
  /** The grant's revision (`GrantRecord.revision`) its refresh tokens are issued under; absent is 0. */
  grantRevision?: number
}

/**
 * The authorization details (RFC 9396) of a grant and of the token a token request asks for: its
 * `authorization_details`, each one of the grant's (§6.1, §7.2), or all of them when absent; a
 * request naming details for a grant without any is invalid_authorization_details.
 */
export async function grantDetails(
  params: Params,
  granted: AuthorizationDetail[] | undefined,
  client: ClientRecord,
  ctx: Context,
): Promise<Pick<UserGrant, 'authorizationDetails' | 'tokenAuthorizationDetails'>> {
  const token = await narrowAuthorizationDetails(params.get('authorization_details'), granted, client, ctx)
  return granted ? { authorizationDetails: granted, tokenAuthorizationDetails: token ?? [] } : {}
}

/** The audit event field of a token response's authorization details (RFC 9396): their types. */
export function detailTypesOf(response: TokenResponse): { authorizationDetailsTypes?: string[] } {
  const details = response.authorization_details
  return details ? { authorizationDetailsTypes: [...new Set(details.map((detail) => detail.type))] } : {}
}

/** Whether this grant gets a refresh token (client permission, offline_access policy). */
export function wantsRefreshToken(client: ClientRecord, scopes: readonly string[], ctx: Context): boolean {
  if (!client.permissions.includes(Permissions.GrantTypes.RefreshToken)) return false
  return !ctx.config.requireOfflineAccess || scopes.includes('offline_access')
}

/**
 * The scopes of a grant that the client may still use: its permissions are read at every
 * redemption and refresh, not only when the grant was made, so a scope taken away from the client
 * (or no longer configured) stops being issued at once. `offline_access` needs the refresh grant.
 * Nothing left of a non-empty grant is invalid_grant.
 */
export function permittedScopes(client: ClientRecord, scopes: readonly string[], ctx: Context): string[] {
  const kept = scopes.filter((scope) =>
    scope === 'offline_access'
      ? client.permissions.includes(Permissions.GrantTypes.RefreshToken)
      : ctx.scopes.get(scope) !== undefined && client.permissions.includes(scopePermission(scope)),
  )
  if (kept.length === 0 && scopes.length > 0) {
    throw new OAuthError('invalid_grant', 'the client may no longer use the scopes of this grant')
  }
  return kept
}

/**
 * The account's claims, or invalid_grant when the account no longer exists. The host's
 * `findAccount` learns which claims the ID token may carry (`scopes`, `claims`).
 */
export async function requireAccount(
  sub: string,
  ctx: Context,
  request?: { scopes: readonly string[]; claims?: RequestedClaims | undefined },
): Promise<Record<string, unknown>> {
  const account = await ctx.accounts.findAccount(sub, {
    use: 'id_token',
    scopes: [...(request?.scopes ?? [])],
    claims: [...(request?.claims?.id_token ?? [])],
  })
  if (!account) throw new OAuthError('invalid_grant', 'the end-user no longer exists')
  return account
}

/**
 * What ID tokens carry (option `idTokenClaims`, else the deprecated `idTokenIncludesClaims`).
 * Default `scopes`: Auth.js, NextAuth and other clients that read the profile from the ID token
 * (as Keycloak, Auth0, Google and Okta fill it) would otherwise show an empty user.
 */
export function idTokenClaimsOf(config: Config): IdTokenClaims {
  // TODO(v2): drop idTokenIncludesClaims.
  return config.idTokenClaims ?? (config.idTokenIncludesClaims === false ? 'minimal' : 'scopes')
}

/**
 * Picks the claims of `scopes` out of an account: userinfo's answer and, by default, the ID
 * token's end-user claims. Callers pass the scopes of this token (consented, still permitted).
 */
export function scopedClaims(
  account: Record<string, unknown>,
  scopes: readonly string[],
  ctx: Context,
  requested: readonly string[] = [],
): Record<string, unknown> {
  // Claims of the scopes, and those of an approved claims request (Core §5.5) that some scope knows.
  const allowed = ctx.scopes.claims(scopes)
  const supported = requested.length > 0 ? new Set(ctx.scopes.allClaims()) : undefined
  for (const name of requested) if (supported?.has(name)) allowed.add(name)
  const claims: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(account)) {
    if (name !== 'sub' && allowed.has(name) && value !== undefined && value !== null) claims[name] = value
  }
  return claims
}

/**
 * The key of the client's ID tokens: its registered `idTokenSignedResponseAlg`, else the service's.
 * A registration names only algs the service signs with; one the service stopped signing with
 * (its options changed since) is the client's configuration error, not a server failure.
 */
function idTokenKey(client: ClientRecord, ctx: Context): SigningKey | Promise<SigningKey> {
  const alg = client.idTokenSignedResponseAlg ?? ctx.config.idTokenSigningAlg
  if (alg !== ctx.config.idTokenSigningAlg && !signingAlgorithms(ctx.config).includes(alg)) {
    throw new OAuthError(
      'invalid_client',
      `the client is registered for ${alg} ID tokens, which this service does not sign`,
    )
  }
  return ctx.keyring.signingKey(alg)
}

/** What `issueUserTokens` issued. */
export interface IssuedUserTokens {
  response: TokenResponse
  /** The next refresh token's record, when one was issued (the caller stores it). */
  refreshRecord?: RefreshTokenRecord
  /** The access token's `jti`. */
  jti: string
  /**
   * When the last of the tokens issued ends (epoch s): the family's absolute end when a refresh
   * token was issued, else the later expiry of the access token and the ID token (whichever is
   * later still, should a token outlive the family).
   */
  expiresAt: number
}

/**
 * Issues the token response of a user grant and, when `refresh` is set, the record of the next
 * refresh token (the caller stores it). `proof`: the request's checked DPoP proof, if any.
 */
export async function issueUserTokens(
  grant: UserGrant,
  client: ClientRecord,
  ctx: Context,
  options: { account: Record<string, unknown>; refresh: boolean; proof?: DpopProof | undefined },
): Promise<IssuedUserTokens> {
  const now = ctx.now()
  const accessTtl = client.lifetimes.accessToken ?? ctx.config.accessTokenTtl
  const { token: accessToken, claims } = await issueAccessToken(
    accessTokenInput(grant, client, ctx, now, accessTtl, options.proof),
    await ctx.keyring.signingKey(ctx.config.accessTokenSigningAlg),
  )
  // A grant made for resources: UserInfo refuses its tokens (#27 item 4). Written while the ID
  // token is signed; awaited before the response exists, so no token leaves without its mark.
  const marked = grant.resources?.length ? markResourceBound(grant.familyId, claims.exp, ctx) : undefined
  marked?.catch(() => {}) // awaited below; a store failure must not be an unhandled rejection meanwhile
  const response: TokenResponse = {
    access_token: accessToken,
    // RFC 9449 §5: a token_type of DPoP MUST be included for a DPoP-bound access token.
    token_type: options.proof ? 'DPoP' : 'Bearer',
    expires_in: accessTtl,
    scope: grant.tokenScopes.join(' '),
    // RFC 9396 §7: the details the access token is for.
    ...(grant.tokenAuthorizationDetails ? { authorization_details: grant.tokenAuthorizationDetails } : {}),
    // Grant Management §5.5: the grant's id, for a later merge, replace, query or revoke.
    grant_id: grant.familyId,
  }
  let expiresAt = Number(claims.exp)
  if (grant.tokenScopes.includes('openid')) {
    const input = idTokenInput(grant, client, ctx, now, accessToken, options.account)
    response.id_token = await issueIdToken(input, await idTokenKey(client, ctx), ctx.sha256)
    expiresAt = Math.max(expiresAt, input.now + input.ttl)
  }
  await marked
  const jti = String(claims.jti)
  if (!options.refresh) return { response, jti, expiresAt }
  const value = randomToken()
  const refreshRecord = nextRefreshRecord(grant, client, now, await ctx.sha256(value), options.proof, ctx)
  response.refresh_token = value
  return { response, refreshRecord, jti, expiresAt: Math.max(expiresAt, grant.familyExpiresAt) }
}

/**
 * The record of a grant whose first tokens were just issued (`Store.grants`, under the family id):
 * its scopes, resources and claims request as granted, not those of this token; `expiresAt` is
 * `IssuedUserTokens.expiresAt`.
 */
export function grantRecordOf(
  grant: UserGrant,
  client: ClientRecord,
  made: { kind: GrantRecord['kind']; createdAt: number; expiresAt: number; sessionId?: string | undefined },
): GrantRecord {
  return {
    id: grant.familyId,
    clientId: client.clientId,
    sub: grant.sub,
    scope: grant.scopes.join(' '),
    ...(grant.resources?.length ? { resources: grant.resources } : {}),
    ...(grant.claims ? { claims: grant.claims } : {}),
    ...(grant.authorizationDetails ? { authorizationDetails: grant.authorizationDetails } : {}),
    ...(grant.sid !== undefined ? { sid: grant.sid } : {}),
    ...(made.sessionId !== undefined ? { sessionId: made.sessionId } : {}),
    kind: made.kind,
    authTime: grant.authTime,
    createdAt: made.createdAt,
    expiresAt: made.expiresAt,
  }
}

/** The claims input of the grant's access token; with a DPoP proof, bound to its key (RFC 9449 §6.1). */
function accessTokenInput(
  grant: UserGrant,
  client: ClientRecord,
  ctx: Context,
  now: number,
  ttl: number,
  proof: DpopProof | undefined,
): IssueAccessTokenInput {
  // RFC 8707 §2: a token asked for resources is for exactly those; else for its scopes' audiences.
  const audience = grant.tokenResources?.length ? grant.tokenResources : ctx.scopes.audiences(grant.tokenScopes)
  return {
    issuer: ctx.config.issuer,
    sub: grant.sub,
    audience: audience.length > 0 ? audience : [ctx.config.issuer],
    clientId: client.clientId,
    scope: grant.tokenScopes.join(' '),
    now,
    ttl,
    familyId: grant.familyId,
    authTime: grant.authTime,
    ...(grant.sid !== undefined ? { sid: grant.sid } : {}),
    ...(grant.claims?.userinfo ? { userinfoClaims: grant.claims.userinfo } : {}),
    ...(grant.tokenAuthorizationDetails ? { authorizationDetails: grant.tokenAuthorizationDetails } : {}),
    // RFC 9449 §6.1: bound to the proof's key.
    ...(proof ? { jkt: proof.jkt } : {}),
  }
}

/** The claims input of the grant's ID token, with the end-user claims it may carry. */
function idTokenInput(
  grant: UserGrant,
  client: ClientRecord,
  ctx: Context,
  now: number,
  accessToken: string,
  account: Record<string, unknown>,
): IssueIdTokenInput {
  return {
    issuer: ctx.config.issuer,
    sub: grant.sub,
    clientId: client.clientId,
    now,
    ttl: client.lifetimes.idToken ?? ctx.config.idTokenTtl,
    authTime: grant.authTime,
    accessToken,
    grantId: grant.familyId,
    ...(grant.nonce !== undefined ? { nonce: grant.nonce } : {}),
    ...(grant.sid !== undefined ? { sid: grant.sid } : {}),
    ...(grant.acr !== undefined ? { acr: grant.acr } : {}),
    ...(grant.amr !== undefined ? { amr: grant.amr } : {}),
    // Core §5.5: claims requested for the ID token are in it whatever `idTokenClaims` says.
    claims: scopedClaims(
      account,
      idTokenClaimsOf(ctx.config) === 'scopes' ? grant.tokenScopes : [],
      ctx,
      grant.claims?.id_token,
    ),
  }
}

/** The record of the family's next refresh token, stored under `id` (the hash of its value). */
function nextRefreshRecord(
  grant: UserGrant,
  client: ClientRecord,
  now: number,
  id: string,
  proof: DpopProof | undefined,
  ctx: Context,
): RefreshTokenRecord {
  const refreshTtl = client.lifetimes.refreshToken ?? ctx.config.refreshTokenTtl
  return {
    id,
    familyId: grant.familyId,
    clientId: client.clientId,
    sub: grant.sub,
    scope: grant.scopes.join(' '),
    authTime: grant.authTime,
    issuedAt: now,
    expiresAt: Math.min(now + refreshTtl, grant.familyExpiresAt),
    familyExpiresAt: grant.familyExpiresAt,
    ...(grant.sid !== undefined ? { sid: grant.sid } : {}),
    ...(grant.acr !== undefined ? { acr: grant.acr } : {}),
    ...(grant.amr !== undefined ? { amr: grant.amr } : {}),
    ...(grant.resources?.length ? { resources: grant.resources } : {}),
    ...(grant.claims ? { claims: grant.claims } : {}),
    ...(grant.authorizationDetails ? { authorizationDetails: grant.authorizationDetails } : {}),
    ...(grant.grantRevision ? { grantRevision: grant.grantRevision } : {}),
    // RFC 9449 §5: a public client's refresh token is bound to the proof's key; a confidential
    // client's is not (client authentication already constrains it).
    ...(proof && !isConfidential(client) ? { dpopJkt: proof.jkt } : {}),
  }
}
