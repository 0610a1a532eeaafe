/**
 * @module tokens/access_token
 * JWT access tokens per RFC 9068: `typ: at+jwt`, claims iss, sub, aud, exp, iat, jti, client_id,
 * scope, and `cnf.jkt` when DPoP-bound (RFC 9449 §6.1); and their verification for introspection,
 * userinfo and revocation.
 */
import { type JWTPayload, decodeProtectedHeader, errors, jwtVerify } from 'jose'
import type { Keyring, SigningKey } from '../keys/index.ts'
import { isAscii, type PayloadJson, randomToken, signJwt } from '../crypto/index.ts'
import type { TokenExchangeActor } from '../config/index.ts'
import type { AuthorizationDetail } from '../storage/index.ts'

/** Claims of an access token we issue. */
export interface AccessTokenClaims extends JWTPayload {
  iss: string
  sub: string
  aud: string | string[]
  exp: number
  iat: number
  jti: string
  client_id: string
  scope: string
  /** The grant (family) of user tokens; absent for client_credentials. */
  gid?: string
  /**
   * The other grants an exchanged token depends on (RFC 8693: the actor token's grant, the grants
   * its subject and actor tokens depended on, the session an ID token subject was issued in):
   * revoking any of them makes the token inactive, as revoking `gid` does (#39 items 1 and 3).
   * Private to this service.
   */
  gids?: string[]
  /** The end-user's authentication time (user tokens). */
  auth_time?: number
  /** The session the token was issued in (user tokens). */
  sid?: string
  /**
   * `client_credentials` on a token that represents the client itself (whose `sub` is the client
   * id), so that no client whose id equals a user's `sub` can pass for that user (RFC 9068 §5).
   * The claim name is Auth0's for the same purpose; user tokens have none (they carry auth_time).
   */
  gty?: 'client_credentials'
  /** RFC 9449 §6.1: the thumbprint of the DPoP key the token is bound to. */
  cnf?: { jkt: string }
  /** RFC 8693 §4.1: the actor of a token obtained by token exchange; nested `act`s are prior actors. */
  act?: TokenActor
  /**
   * The claims the grant's claims request (OpenID Connect Core §5.5) asks userinfo for, beyond
   * those of `scope` (private to this service: its userinfo endpoint reads them).
   */
  uic?: string[]
  /** RFC 9396 §9.1: the authorization details the token is for. */
  authorization_details?: AuthorizationDetail[]
}

/** RFC 8693 §4.1 `act`: who acts (`sub`), and in `act` who acted before. */
export type TokenActor = TokenExchangeActor

export interface IssueAccessTokenInput {
  issuer: string
  sub: string
  audience: string[]
  clientId: string
  scope: string
  now: number
  ttl: number
  familyId?: string
  /** The other grants the token depends on: adds `gids`. */
  dependsOn?: string[]
  authTime?: number
  sid?: string
  /** The token represents the client itself (client_credentials): adds `gty`. */
  client?: boolean
  /** The JWK thumbprint of the DPoP proof's key (RFC 9449 §6.1): adds `cnf.jkt`. */
  jkt?: string
  /** The actor of an exchanged token (RFC 8693 §4.1): adds `act`. */
  act?: TokenActor
  /** Claims requested for userinfo with the claims parameter: adds `uic`. */
  userinfoClaims?: string[]
  /** The authorization details of the token (RFC 9396 §9.1): adds `authorization_details`. */
  authorizationDetails?: AuthorizationDetail[]
}

/** An access token and its claims. */
export interface IssuedAccessToken {
  token: string
  claims: AccessTokenClaims
}

/**
 * The JSON of a client's own access token (client_credentials: one audience, no DPoP key, no
 * other member) around the claims that change from token to token, `exp`, `iat` and `jti`: written
 * once by JSON.stringify for a client and scope and filled for each token, which saves serialising
 * the payload on the hottest path (#44 item 4). The values it was made for are kept: a token whose
 * claims differ in any of them is serialised in full.
 */
export interface ClientTokenJson {
  readonly iss: string
  readonly sub: string
  readonly aud: string
  readonly clientId: string
  readonly scope: string
  /** `{"iss":…,"sub":…,"aud":…,"exp":` */
  readonly head: string
  /** `,"client_id":…,"scope":…,"gty":"client_credentials"}` */
  readonly tail: string
  readonly ascii: boolean
}

/** The skeleton of a client's own access token (see `ClientTokenJson`). */
export function clientTokenJson(iss: string, clientId: string, aud: string, scope: string): ClientTokenJson {
  const head = `${JSON.stringify({ iss, sub: clientId, aud }).slice(0, -1)},"exp":`
  const tail = `,"client_id":${JSON.stringify(clientId)},"scope":${JSON.stringify(scope)},"gty":"client_credentials"}`
  return { iss, sub: clientId, aud, clientId, scope, head, tail, ascii: isAscii(head + tail) }
}

/**
 * The payload's JSON from `skeleton` when the claims are exactly those it was made for (the members
 * of a client's own token, in their order, and the same values), else undefined. The `jti` is
 * base64url (`randomToken`) and the times safe integers: JSON.stringify writes them as they are.
 */
function fromSkeleton(
  claims: AccessTokenClaims,
  input: IssueAccessTokenInput,
  skeleton: ClientTokenJson,
): PayloadJson | undefined {
  if (
    input.client !== true ||
    Object.keys(claims).length !== 9 ||
    claims.iss !== skeleton.iss ||
    claims.sub !== skeleton.sub ||
    claims.aud !== skeleton.aud ||
    claims.client_id !== skeleton.clientId ||
    claims.scope !== skeleton.scope ||
    !Number.isSafeInteger(claims.exp) ||
    !Number.isSafeInteger(claims.iat)
  ) {
    return undefined
  }
  const json = `${skeleton.head}${claims.exp},"iat":${claims.iat},"jti":"${claims.jti}"${skeleton.tail}`
  return { json, ascii: skeleton.ascii }
}

/**
 * Signs an access token (RFC 9068 §2): synchronously when the key has a signature function (the
 * runtime's `signer`), else through a promise. `skeleton`: the JSON of a client's own token, when
 * the grant has it (see `ClientTokenJson`).
 */
export function issueAccessToken(
  input: IssueAccessTokenInput,
  key: SigningKey,
  skeleton?: ClientTokenJson,
): IssuedAccessToken | Promise<IssuedAccessToken> {
  const claims: AccessTokenClaims = {
    iss: input.issuer,
    sub: input.sub,
    aud: input.audience.length === 1 ? (input.audience[0] as string) : input.audience,
    exp: input.now + input.ttl,
    iat: input.now,
    jti: randomToken(16),
    client_id: input.clientId,
    scope: input.scope,
  }
  if (input.authTime !== undefined) claims.auth_time = input.authTime
  if (input.familyId !== undefined) claims.gid = input.familyId
  if (input.dependsOn?.length) claims.gids = input.dependsOn
  if (input.sid !== undefined) claims.sid = input.sid
  if (input.client) claims.gty = 'client_credentials'
  if (input.jkt !== undefined) claims.cnf = { jkt: input.jkt }
  if (input.act !== undefined) claims.act = input.act
  if (input.userinfoClaims?.length) claims.uic = input.userinfoClaims
  if (input.authorizationDetails) claims.authorization_details = input.authorizationDetails
  const text = skeleton === undefined ? undefined : fromSkeleton(claims, input, skeleton)
  const token = signJwt(claims, 'at+jwt', key, text)
  return typeof token === 'string' ? { token, claims } : token.then((signed) => ({ token: signed, claims }))
}

/** Whether a value is an RFC 8693 §4.1 `act` claim: an object with a string `sub`, nesting the same. */
function isActor(value: unknown): value is TokenActor {
  if (typeof value !== 'object' || value === null) return false
  const { sub, act } = value as { sub?: unknown; act?: unknown }
  return typeof sub === 'string' && (act === undefined || isActor(act))
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}

/** Whether a string has the shape of a compact JWS (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)
}

/**
 * Verifies an access token we issued: signature by a published key, `typ` at+jwt, our issuer,
 * and (unless `allowExpired`) not expired. Returns undefined for anything else.
 */
export async function verifyAccessToken(
  token: string,
  keyring: Keyring,
  options: { issuer: string; now: number; allowExpired?: boolean },
): Promise<AccessTokenClaims | undefined> {
  if (!looksLikeJwt(token)) return undefined
  let kid: string | undefined
  try {
    kid = decodeProtectedHeader(token).kid
  } catch {
    return undefined
  }
  const found = await keyring.verificationKey(kid)
  if (!found) return undefined
  try {
    const { payload } = await jwtVerify(token, found.key, {
      issuer: options.issuer,
      typ: 'at+jwt',
      algorithms: [found.alg],
      currentDate: new Date(options.now * 1000),
      clockTolerance: options.allowExpired ? 10 * 365 * 86400 : 0,
      requiredClaims: ['sub', 'exp', 'iat', 'jti', 'client_id', 'aud'],
    })
    if (typeof payload.client_id !== 'string' || typeof payload.jti !== 'string') return undefined
    if (typeof payload.scope !== 'string') return undefined
    if (payload.cnf !== undefined && typeof (payload.cnf as { jkt?: unknown } | null)?.jkt !== 'string')
      return undefined
    if (payload.act !== undefined && !isActor(payload.act)) return undefined
    if (payload.gids !== undefined && !isStringList(payload.gids)) return undefined
    return payload as AccessTokenClaims
  } catch (err) {
    if (err instanceof errors.JOSEError) return undefined
    throw err
  }
}
