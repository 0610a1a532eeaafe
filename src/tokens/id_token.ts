/**
 * @module tokens/id_token
 * ID tokens per OpenID Connect Core §2 and §3.1.3.6 (at_hash).
 */
import { base64url } from 'jose'
import type { SigningKey } from '../keys/index.ts'
import { signJwt } from '../crypto/index.ts'

export interface IssueIdTokenInput {
  issuer: string
  sub: string
  clientId: string
  now: number
  ttl: number
  authTime: number
  nonce?: string
  sid?: string
  acr?: string
  amr?: string[]
  /** The access token issued with it, for at_hash. */
  accessToken?: string
  /** End-user claims of the granted identity scopes (`idTokenClaims: 'scopes'`). */
  claims?: Record<string, unknown>
  /**
   * The grant (family) the ID token is issued from: its `gid`, as in the access tokens. Token
   * exchange finds the grant through it, so an ID token as subject token buys no more than that
   * grant holds and dies with it (#39 item 1).
   */
  grantId?: string
}

/** Claims the service sets itself: an account or scope definition never supplies them. */
const PROTOCOL_CLAIMS = new Set([
  'iss',
  'sub',
  'aud',
  'azp',
  'exp',
  'iat',
  'nbf',
  'jti',
  'auth_time',
  'nonce',
  'sid',
  'acr',
  'amr',
  'at_hash',
  'c_hash',
  'cnf',
  'gid',
  'events',
])

const HASHES: Record<string, string> = {
  RS256: 'SHA-256',
  PS256: 'SHA-256',
  ES256: 'SHA-256',
  ES384: 'SHA-384',
  EdDSA: 'SHA-512',
}

/** base64url SHA-256 of a string, as the service's `sha256` option computes it (Context.sha256). */
export type Sha256 = (value: string) => string | Promise<string>

/**
 * Core §3.1.3.6: base64url of the left half of the hash of the ASCII access token. SHA-256 goes
 * through `sha256` when given (the runtime's synchronous digest: on Node a Web Crypto digest costs
 * a thread-pool round trip per token, #20).
 */
export async function atHash(accessToken: string, alg: string, sha256?: Sha256): Promise<string> {
  const hash = HASHES[alg] ?? 'SHA-256'
  if (hash === 'SHA-256' && sha256) return base64url.encode(base64url.decode(await sha256(accessToken)).subarray(0, 16))
  const digest = new Uint8Array(await crypto.subtle.digest(hash, new TextEncoder().encode(accessToken)))
  return base64url.encode(digest.slice(0, digest.length / 2))
}

/** Signs an ID token. `auth_time` is always included (Core §2 allows it; clients rely on it). */
export async function issueIdToken(input: IssueIdTokenInput, key: SigningKey, sha256?: Sha256): Promise<string> {
  const payload: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(input.claims ?? {})) {
    if (!PROTOCOL_CLAIMS.has(name)) payload[name] = value
  }
  Object.assign(payload, {
    iss: input.issuer,
    sub: input.sub,
    aud: input.clientId,
    azp: input.clientId,
    exp: input.now + input.ttl,
    iat: input.now,
    auth_time: input.authTime,
  })
  if (input.nonce !== undefined) payload.nonce = input.nonce
  if (input.sid !== undefined) payload.sid = input.sid
  if (input.grantId !== undefined) payload.gid = input.grantId
  if (input.acr !== undefined) payload.acr = input.acr
  if (input.amr !== undefined) payload.amr = input.amr
  if (input.accessToken !== undefined) payload.at_hash = await atHash(input.accessToken, key.alg, sha256)
  return signJwt(payload, 'JWT', key)
}
