/**
 * #31: the token endpoint of the same-runtime ceilings (`ceiling-bun`, `ceiling-deno`, and the
 * code and refresh grants of Node's `ceiling-crypto-batch`): the least any token service must do
 * to answer Gatehouse's bench requests with Gatehouse's tokens, runtime neutral (node:crypto's
 * digests, which Node, Bun and Deno all implement, and the runtime's signer, injected). No router,
 * no Request/Response objects, no validation library, no events, no options; the store is three
 * Maps. Per request it does what Gatehouse does (src/grants/):
 *
 * - client lookup by id and the secret check of Gatehouse's verified-secret cache: the SHA3-256 of
 *   a per-process key and the presented secret, compared with the remembered one
 *   (`nodeSecretDigest` of adapters/node_crypto.ts), or the runtime's keyed hash where it has no
 *   SHA3 (`CeilingOptions.secretDigest`: workerd, whose node:crypto is BoringSSL's);
 * - client_credentials: scope check, one ES256 access token (`gty`);
 * - authorization_code: the code looked up by its SHA-256 and consumed (kept, marked, for replay
 *   detection), client, redirect URI, expiry and PKCE S256 checked, the family's revocation looked
 *   up, a refresh token stored by its SHA-256, an ES256 access token and an RS256 ID token (with
 *   `at_hash`, so after the access token);
 * - refresh_token: the token looked up by its SHA-256; reuse of a rotated one revokes the family;
 *   the family's revocation and absolute end checked; the old token marked rotated and the next
 *   one stored; the same two tokens.
 *
 * Token contents are Gatehouse's byte for byte in shape (claims, their order, headers, `kid`s,
 * 22-character jtis and ids, 43-character refresh tokens and codes).
 *
 * Nothing random happens at import (workerd refuses random values outside a request): the
 * per-instance key and the `kid`s are made by `createCeiling`.
 */
import { Buffer } from 'node:buffer'
import { createHash, randomBytes } from 'node:crypto'
import { API_SCOPE, CODE_SCOPE, PKCE, SERVICE_CLIENT, USER_SUB, WEB_CLIENT } from '../fixtures.ts'

/** A JWS signature of `input` (ES256 in IEEE P1363 form, RS256): sync or a promise. */
export type CeilingSign = (alg: 'ES256' | 'RS256', input: Uint8Array) => Uint8Array | Promise<Uint8Array>

export interface CeilingReply {
  status: number
  body: string
}

const b64 = (value: string | Uint8Array): string => Buffer.from(value).toString('base64url')
const randomId = (bytes: number): string => randomBytes(bytes).toString('base64url')
const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest()
/** A synchronous keyed hash of a client secret under a per-instance random key (base64url). */
export type CeilingSecretDigest = (key: string, secret: string) => string
const sha3SecretDigest: CeilingSecretDigest = (key, secret) =>
  createHash('sha3-256')
    .update(key + secret)
    .digest('base64url')

export interface CeilingOptions {
  /** The verified-secret cache's keyed hash (default SHA3-256 of key ‖ secret, as on Node, Bun and Deno). */
  secretDigest?: CeilingSecretDigest
}

interface Client {
  digest: string
  grants: Set<string>
  redirectUri?: string
}
interface CodeRecord {
  clientId: string
  redirectUri: string
  challenge: string
  sub: string
  authTime: number
  sid: string
  familyId: string
  scope: string
  expiresAt: number
  consumedAt?: number
}
interface RefreshRecord {
  clientId: string
  sub: string
  authTime: number
  sid: string
  familyId: string
  scope: string
  expiresAt: number
  familyExpiresAt: number
  rotatedAt?: number
}

const CODE_TTL = 300
const ACCESS_TTL = 3600
const REFRESH_TTL = 14 * 86400
const FAMILY_TTL = 30 * 86400

/** The ceiling for one runtime: `token(authorization, form)` answers POST /token. */
export function createCeiling(issuer: string, sign: CeilingSign, options: CeilingOptions = {}) {
  const secretKey = randomId(32)
  const keyedDigest = options.secretDigest ?? sha3SecretDigest
  const secretDigest = (secret: string): string => keyedDigest(secretKey, secret)
  const clients = new Map<string, Client>([
    [SERVICE_CLIENT.id, { digest: secretDigest(SERVICE_CLIENT.secret), grants: new Set(['client_credentials']) }],
    [
      WEB_CLIENT.id,
      {
        digest: secretDigest(WEB_CLIENT.secret),
        grants: new Set(['authorization_code', 'refresh_token']),
        redirectUri: WEB_CLIENT.redirectUri,
      },
    ],
  ])
  const codes = new Map<string, CodeRecord>()
  const refreshTokens = new Map<string, RefreshRecord>()
  /** Revoked families → until when (Gatehouse's `revocations.isFamilyRevoked`). */
  const revokedFamilies = new Map<string, number>()
  const kids = { ES256: randomId(16), RS256: randomId(16) }
  const headers = {
    ES256: b64(JSON.stringify({ alg: 'ES256', kid: kids.ES256, typ: 'at+jwt' })),
    RS256: b64(JSON.stringify({ alg: 'RS256', kid: kids.RS256, typ: 'JWT' })),
  }
  const encoder = new TextEncoder()

  async function jws(alg: 'ES256' | 'RS256', claims: object): Promise<string> {
    const input = `${headers[alg]}.${b64(JSON.stringify(claims))}`
    return `${input}.${b64(await sign(alg, encoder.encode(input)))}`
  }

  const error = (status: number, code: string): CeilingReply => ({ status, body: JSON.stringify({ error: code }) })

  function authenticate(header: string | null | undefined): [string, Client] | undefined {
    if (!header?.startsWith('Basic ')) return undefined
    const decoded = Buffer.from(header.slice(6), 'base64').toString()
    const colon = decoded.indexOf(':')
    const clientId = decodeURIComponent(decoded.slice(0, colon))
    const client = clients.get(clientId)
    return client && client.digest === secretDigest(decodeURIComponent(decoded.slice(colon + 1)))
      ? [clientId, client]
      : undefined
  }

  /** The user tokens of a code or a refresh token: access token, ID token, next refresh token. */
  async function issueUserTokens(grant: Omit<RefreshRecord, 'expiresAt'>, now: number): Promise<CeilingReply> {
    const accessToken = await jws('ES256', {
      iss: issuer,
      sub: grant.sub,
      aud: API_SCOPE,
      exp: now + ACCESS_TTL,
      iat: now,
      jti: randomId(16),
      client_id: grant.clientId,
      scope: grant.scope,
      auth_time: grant.authTime,
      gid: grant.familyId,
      sid: grant.sid,
    })
    const idToken = await jws('RS256', {
      iss: issuer,
      sub: grant.sub,
      aud: grant.clientId,
      azp: grant.clientId,
      exp: now + ACCESS_TTL,
      iat: now,
      auth_time: grant.authTime,
      sid: grant.sid,
      amr: ['pwd'],
      at_hash: b64(sha256(accessToken).subarray(0, 16)),
    })
    const refreshToken = randomId(32)
    refreshTokens.set(sha256(refreshToken).toString('base64url'), {
      ...grant,
      expiresAt: Math.min(now + REFRESH_TTL, grant.familyExpiresAt),
    })
    return {
      status: 200,
      body: JSON.stringify({
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: ACCESS_TTL,
        scope: grant.scope,
        id_token: idToken,
        refresh_token: refreshToken,
      }),
    }
  }

  const isRevoked = (familyId: string, now: number): boolean => (revokedFamilies.get(familyId) ?? 0) > now

  async function token(authorization: string | null | undefined, form: string): Promise<CeilingReply> {
    const params = new URLSearchParams(form)
    const authenticated = authenticate(authorization)
    if (!authenticated) return error(401, 'invalid_client')
    const [clientId, client] = authenticated
    const grantType = params.get('grant_type') ?? ''
    if (!client.grants.has(grantType)) return error(400, 'unauthorized_client')
    const now = Math.floor(Date.now() / 1000)

    if (grantType === 'client_credentials') {
      if ((params.get('scope') ?? API_SCOPE) !== API_SCOPE) return error(400, 'invalid_scope')
      const accessToken = await jws('ES256', {
        iss: issuer,
        sub: clientId,
        aud: API_SCOPE,
        exp: now + ACCESS_TTL,
        iat: now,
        jti: randomId(16),
        client_id: clientId,
        scope: API_SCOPE,
        gty: 'client_credentials',
      })
      return {
        status: 200,
        body: JSON.stringify({ access_token: accessToken, token_type: 'Bearer', expires_in: 3600 }),
      }
    }

    if (grantType === 'authorization_code') {
      const record = codes.get(sha256(params.get('code') ?? '').toString('base64url'))
      if (!record || record.expiresAt <= now || record.clientId !== clientId) return error(400, 'invalid_grant')
      if (record.consumedAt !== undefined) {
        revokedFamilies.set(record.familyId, now + FAMILY_TTL) // a replay revokes the family
        return error(400, 'invalid_grant')
      }
      if (isRevoked(record.familyId, now)) return error(400, 'invalid_grant')
      record.consumedAt = now
      if (params.get('redirect_uri') !== record.redirectUri) return error(400, 'invalid_grant')
      const verifier = params.get('code_verifier') ?? ''
      if (sha256(verifier).toString('base64url') !== record.challenge) return error(400, 'invalid_grant')
      const { sub, authTime, sid, familyId, scope } = record
      return issueUserTokens({ clientId, sub, authTime, sid, familyId, scope, familyExpiresAt: now + FAMILY_TTL }, now)
    }

    // refresh_token
    const record = refreshTokens.get(sha256(params.get('refresh_token') ?? '').toString('base64url'))
    if (!record || record.clientId !== clientId) return error(400, 'invalid_grant')
    if (record.rotatedAt !== undefined) {
      revokedFamilies.set(record.familyId, record.familyExpiresAt) // reuse revokes the family
      return error(400, 'invalid_grant')
    }
    if (isRevoked(record.familyId, now) || record.expiresAt <= now || record.familyExpiresAt <= now)
      return error(400, 'invalid_grant')
    record.rotatedAt = now
    const { sub, authTime, sid, familyId, scope, familyExpiresAt } = record
    return issueUserTokens({ clientId, sub, authTime, sid, familyId, scope, familyExpiresAt }, now)
  }

  /**
   * `count` codes as Gatehouse's authorization endpoint leaves them for the signed-in bench user
   * (one session, a family each, PKCE S256, `openid offline_access api1`): the values, one a line.
   */
  function createCodes(count: number): string {
    const now = Math.floor(Date.now() / 1000)
    const sid = randomId(16)
    const values: string[] = []
    for (let i = 0; i < count; i++) {
      const value = randomId(32)
      codes.set(sha256(value).toString('base64url'), {
        clientId: WEB_CLIENT.id,
        redirectUri: WEB_CLIENT.redirectUri,
        challenge: PKCE.challenge,
        sub: USER_SUB,
        authTime: now,
        sid,
        familyId: randomId(16),
        scope: CODE_SCOPE,
        expiresAt: now + CODE_TTL,
      })
      values.push(value)
    }
    return values.join('\n')
  }

  return { token, createCodes }
}

/** The response headers of every answer (Gatehouse's token endpoint sends these three). */
export const CEILING_HEADERS = {
  'content-type': 'application/json',
  'cache-control': 'no-store',
  pragma: 'no-cache',
} as const
