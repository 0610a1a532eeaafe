/**
 * @module tokens/opaque
 * Random opaque values (authorization codes, refresh tokens, session cookies, ids) and the
 * SHA-256 digests they are stored under (RFC 6749 §10.10: at least 128 bits of entropy).
 */
import { base64url } from 'jose'

const encoder = new TextEncoder()

/** A URL-safe random string carrying `bytes * 8` bits of entropy (default 256). */
export function randomToken(bytes = 32): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(bytes)))
}

/** base64url SHA-256 of a string: the storage key of a token, never the token itself. */
export async function sha256(value: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(value))
  return base64url.encode(new Uint8Array(digest))
}

/** Compares two strings in time independent of where they differ (lengths may leak). */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a)
  const y = encoder.encode(b)
  const length = Math.max(x.length, y.length)
  let diff = x.length ^ y.length
  for (let i = 0; i < length; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0)
  return diff === 0
}
