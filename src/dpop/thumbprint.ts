/**
 * @module dpop/thumbprint
 * The two hashes DPoP binds with (RFC 9449): the JWK SHA-256 thumbprint of the proof key
 * (RFC 7638, the `jkt` of `cnf`) and the access token hash (`ath`).
 */
import type { JWK } from 'jose'
import { sha256 } from '../crypto/index.ts'

/** base64url SHA-256 of a string: WebCrypto's by default, or the service's (synchronous on Node). */
export type Sha256 = (value: string) => string | Promise<string>

/** RFC 7638 §3.2: the required members of each key type, in lexicographic order. */
const REQUIRED_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  OKP: ['crv', 'kty', 'x'],
  RSA: ['e', 'kty', 'n'],
}

/**
 * The RFC 7638 §3.3 thumbprint input of a public JWK: the JSON object of its required members, in
 * lexicographic order, without whitespace. Throws a TypeError for an unsupported `kty` or a
 * missing or non-string required member.
 */
export function thumbprintInput(jwk: JWK): string {
  const members = REQUIRED_MEMBERS[String(jwk.kty)]
  if (!members) throw new TypeError('"kty" must be EC, OKP or RSA')
  const parts: string[] = []
  for (const name of members) {
    const value = (jwk as Record<string, unknown>)[name]
    if (typeof value !== 'string' || value === '') throw new TypeError(`"${name}" must be a non-empty string`)
    parts.push(`${JSON.stringify(name)}:${JSON.stringify(value)}`)
  }
  return `{${parts.join(',')}}`
}

/**
 * The RFC 7638 SHA-256 thumbprint of a public JWK, base64url: the value of `cnf.jkt` and `dpop_jkt`.
 * `hash` defaults to WebCrypto; the service passes its own (`ctx.sha256`, synchronous on Node).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-6.1
 * @see https://www.rfc-editor.org/rfc/rfc7638#section-3
 * @example
 * ```ts
 * const jkt = await jwkThumbprint(proof.jwk) // 43 characters
 * ```
 */
export async function jwkThumbprint(jwk: JWK, hash: Sha256 = sha256): Promise<string> {
  return hash(thumbprintInput(jwk))
}

/**
 * The `ath` claim for an access token: base64url(SHA-256(ASCII(token))). Access tokens are ASCII
 * (RFC 6750 `b64token`), whose UTF-8 encoding is the ASCII encoding.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-4.2
 * @example
 * ```ts
 * const ath = await accessTokenHash(accessToken)
 * ```
 */
export async function accessTokenHash(token: string, hash: Sha256 = sha256): Promise<string> {
  if (typeof token !== 'string' || token === '') throw new TypeError('"token" must be a non-empty string')
  return hash(token)
}
