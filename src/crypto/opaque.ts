/**
 * @module crypto/opaque
 * Random opaque values (authorization codes, refresh tokens, session cookies, ids) and the
 * SHA-256 digests they are stored under (RFC 6749 §10.10: at least 128 bits of entropy).
 */
import { base64url } from 'jose'
import { base64urlBytes } from './base64url.ts'

const encoder = new TextEncoder()

/**
 * Random bytes from the platform CSPRNG, drawn from a pool filled 4 KiB at a time: one
 * `getRandomValues` call per ~250 tokens instead of one per token (each call costs microseconds of
 * fixed overhead on Node). Every byte is handed out once, and each refill is a new buffer, so bytes
 * handed out earlier never change.
 */
const POOL_BYTES = 4096
let pool = new Uint8Array(0)
let poolOffset = 0

export function randomBytes(length: number): Uint8Array {
  if (length > POOL_BYTES / 8) return crypto.getRandomValues(new Uint8Array(length))
  if (poolOffset + length > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_BYTES))
    poolOffset = 0
  }
  const bytes = pool.subarray(poolOffset, poolOffset + length)
  poolOffset += length
  return bytes
}

/** A URL-safe random string carrying `bytes * 8` bits of entropy (default 256). */
export function randomToken(bytes = 32): string {
  return base64urlBytes(randomBytes(bytes))
}

/** base64url SHA-256 of a string: the storage key of a token, never the token itself. */
export async function sha256(value: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(value))
  return base64url.encode(new Uint8Array(digest))
}

/**
 * Compares two strings in time independent of where they differ (lengths may leak). Compares
 * UTF-16 code units, which are equal exactly when the strings are: no bytes are allocated.
 */
export function timingSafeEqual(a: string, b: string): boolean {
  const length = Math.max(a.length, b.length)
  let diff = a.length ^ b.length
  // Past a string's end charCodeAt is NaN, and NaN | 0 is 0.
  for (let i = 0; i < length; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0)
  return diff === 0
}
