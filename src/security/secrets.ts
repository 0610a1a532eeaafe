/**
 * @module security/secrets
 * Client secrets and user passwords hashed at rest with PBKDF2-HMAC-SHA-256 (WebCrypto), compared
 * in constant time. Format: `pbkdf2-sha256$<iterations>$<salt b64url>$<hash b64url>`.
 *
 * Verification is deliberately slow, so a verified (record, secret) pair is remembered for a while
 * as an HMAC under a per-process random key: a later request with the same secret costs one HMAC,
 * and nothing reversible is kept in memory. A wrong secret always pays the full PBKDF2 cost.
 *
 * A platform may cap the iterations it computes (Cloudflare Workers refuses PBKDF2 above 100,000):
 * with `maxIterations`, a stored hash above the cap is `unverifiable` (a failed authentication the
 * caller logs, never a thrown error), and so is one the platform refuses to derive. A hash whose
 * count differs from the configured one is rehashed after a successful verification, with its own
 * salt, so a secret's id (derived from the salt) stays the same.
 */
import { base64url } from 'jose'
import { timingSafeEqual } from '../crypto/index.ts'

const encoder = new TextEncoder()
const PREFIX = 'pbkdf2-sha256'

/** OWASP (2023) recommends 600,000 iterations of PBKDF2-HMAC-SHA-256. */
export const DEFAULT_ITERATIONS = 600_000

/**
 * The most PBKDF2 iterations Cloudflare Workers' production runtime computes: it refuses
 * `deriveBits` above this (local workerd does not), so a Worker sets `secretHashIterations` and
 * `secretHashMaxIterations` to it.
 * @see https://developers.cloudflare.com/workers/runtime-apis/web-crypto/
 */
export const WORKERS_PBKDF2_LIMIT = 100_000

/** What verifying a secret against a stored hash found. */
export type SecretCheck =
  /** The secret is the one hashed. */
  | 'match'
  /** It is not (or the stored value is not a hash of ours). */
  | 'mismatch'
  /** The hash cannot be computed here: more iterations than allowed, or the platform refused it. */
  | 'unverifiable'

async function derive(secret: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), 'PBKDF2', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: salt as BufferSource, iterations },
    key,
    256,
  )
  return new Uint8Array(bits)
}

/** Hashes a secret for storage. */
export async function hashSecret(secret: string, iterations = DEFAULT_ITERATIONS): Promise<string> {
  return hashWithSalt(secret, crypto.getRandomValues(new Uint8Array(16)), iterations)
}

async function hashWithSalt(secret: string, salt: Uint8Array, iterations: number): Promise<string> {
  const hash = await derive(secret, salt, iterations)
  return `${PREFIX}$${iterations}$${base64url.encode(salt)}$${base64url.encode(hash)}`
}

/** The iteration count of a stored hash, or undefined when it is not one of ours. */
export function hashIterations(stored: string): number | undefined {
  const parts = stored.split('$')
  if (parts.length !== 4 || parts[0] !== PREFIX) return undefined
  const iterations = Number(parts[1])
  return Number.isSafeInteger(iterations) && iterations >= 1 ? iterations : undefined
}

/**
 * The hash of a secret just verified against `stored`, with `iterations` and the same salt (so the
 * secret's id, derived from the salt, does not change). Only for a secret that matched `stored`.
 */
export async function rehashSecret(secret: string, stored: string, iterations: number): Promise<string> {
  return hashWithSalt(secret, base64url.decode(stored.split('$')[2] ?? ''), iterations)
}

/** Whether a string is in our hash format (so config files may hold pre-hashed secrets). */
export function isSecretHash(value: string): boolean {
  return /^pbkdf2-sha256\$\d{1,9}\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/.test(value)
}

/**
 * A hash in the stored format that no secret verifies against (random salt and digest): verifying
 * a presented secret against it costs what a real verification costs, so an unknown client id
 * answers as slowly as a wrong secret of a known one (no enumeration by timing).
 */
export function unmatchableHash(iterations: number): string {
  const random = (length: number) => base64url.encode(crypto.getRandomValues(new Uint8Array(length)))
  return `${PREFIX}$${iterations}$${random(16)}$${random(32)}`
}

/** Verifies a secret against a stored hash in constant time (false when it cannot be computed here). */
export async function verifySecret(
  secret: string,
  stored: string,
  options: { maxIterations?: number } = {},
): Promise<boolean> {
  return (await checkSecret(secret, stored, options)) === 'match'
}

/**
 * Verifies a secret against a stored hash in constant time, telling a mismatch from a hash that
 * cannot be computed here: one with more iterations than `maxIterations` is not attempted, and a
 * platform's refusal to derive (its own cap) is caught, so neither is ever an error.
 */
export async function checkSecret(
  secret: string,
  stored: string,
  options: { maxIterations?: number } = {},
): Promise<SecretCheck> {
  const parts = stored.split('$')
  const iterations = hashIterations(stored)
  if (iterations === undefined) return 'mismatch'
  if (options.maxIterations !== undefined && iterations > options.maxIterations) return 'unverifiable'
  let salt: Uint8Array
  try {
    salt = base64url.decode(parts[2] ?? '')
  } catch {
    return 'mismatch'
  }
  let derived: Uint8Array
  try {
    derived = await derive(secret, salt, iterations)
  } catch {
    // e.g. Cloudflare's "Pbkdf2 failed: iteration counts above 100000 are not supported"
    return 'unverifiable'
  }
  return timingSafeEqual(base64url.encode(derived), parts[3] ?? '') ? 'match' : 'mismatch'
}

/**
 * A keyed one-way function of a secret, e.g. HMAC-SHA-256 or SHA3-256(key ‖ secret) under a random
 * per-process key. Its outputs are compared in constant time; it must never be a plain unkeyed hash
 * or the identity.
 */
export type SecretDigest = (secret: string) => string

/**
 * Remembers successful verifications for `ttl` seconds, keyed by the stored hash, as
 * HMAC-SHA-256(processKey, secret), or as the runtime's `digest` when given. Bounded in size; the oldest entries are dropped first.
 */
export function createVerificationCache(options: {
  ttl: number
  max: number
  now: () => number
  /** A synchronous keyed hash (HMAC under a per-process key) a runtime adapter may supply. */
  digest?: SecretDigest
  /** The most PBKDF2 iterations to compute (see `checkSecret`). */
  maxIterations?: number
}) {
  const entries = new Map<string, { mac: string; expiresAt: number }>()
  const keyPromise = crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])

  async function webMac(secret: string): Promise<string> {
    const sig = await crypto.subtle.sign('HMAC', await keyPromise, encoder.encode(secret))
    return base64url.encode(new Uint8Array(sig))
  }
  // WebCrypto's HMAC is asynchronous (a thread-pool hop on Node); a synchronous one from the
  // runtime, when given, keeps the cache hit on the request's own turn.
  const digest = options.digest
  const mac = digest ? async (secret: string) => digest(secret) : webMac

  /** Checks `secret` against `stored` (see `checkSecret`), using and filling the cache. */
  async function check(secret: string, stored: string): Promise<SecretCheck> {
    const entry = entries.get(stored)
    if (entry && entry.expiresAt > options.now()) {
      if (timingSafeEqual(await mac(secret), entry.mac)) return 'match'
    }
    const limit = options.maxIterations
    const result = await checkSecret(secret, stored, limit !== undefined ? { maxIterations: limit } : {})
    if (result !== 'match') return result
    if (options.ttl > 0) {
      entries.delete(stored)
      entries.set(stored, { mac: await mac(secret), expiresAt: options.now() + options.ttl })
      if (entries.size > options.max) {
        const oldest = entries.keys().next().value
        if (oldest !== undefined) entries.delete(oldest)
      }
    }
    return 'match'
  }

  return {
    /**
     * Whether `secret` was verified against `stored` recently (a cache hit; never hashes).
     * Answers synchronously when nothing is cached or the runtime gave a synchronous digest.
     */
    isCached(secret: string, stored: string): boolean | Promise<boolean> {
      const entry = entries.get(stored)
      if (entry === undefined || entry.expiresAt <= options.now()) return false
      if (digest) return timingSafeEqual(digest(secret), entry.mac)
      return webMac(secret).then((computed) => timingSafeEqual(computed, entry.mac))
    },

    /** Verifies `secret` against `stored`, using and filling the cache. */
    async verify(secret: string, stored: string): Promise<boolean> {
      return (await check(secret, stored)) === 'match'
    },

    /** Checks `secret` against `stored` (see `checkSecret`), using and filling the cache. */
    check,
  }
}
