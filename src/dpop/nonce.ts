/**
 * @module dpop/nonce
 * Stateless DPoP server nonces (RFC 9449 §8, §9): any instance that shares the secret can issue
 * and check them, with no shared store.
 */
import { base64url } from 'jose'
import { timingSafeEqual } from '../crypto/index.ts'

/** Issues and checks the server nonces of RFC 9449 §8 (token endpoint) and §9 (resources). */
export interface DpopNonces {
  /** The nonce of the current time window, to send in a `DPoP-Nonce` header. */
  current(): Promise<string>
  /** True when `nonce` was issued for the current or the previous window with this secret. */
  check(nonce: string): Promise<boolean>
}

export interface DpopNoncesOptions {
  /**
   * The HMAC key, at least 16 bytes, identical on every instance (e.g. HKDF of shared key material
   * with a DPoP-nonce-specific `info`). Called on every use, so a rotated secret takes effect at
   * once (outstanding nonces then fail and clients retry with a fresh one).
   */
  secret: () => Promise<Uint8Array> | Uint8Array
  /** Clock in epoch seconds. Default `Date.now()`. */
  now?: () => number
  /** Window length in seconds (default 60): a nonce is accepted for one to two windows. */
  window?: number
}

/** Bytes of the window index (big-endian) and of the truncated HMAC-SHA256 (128 bits). */
const INDEX_BYTES = 8
const MAC_BYTES = 16
/** base64url of INDEX_BYTES + MAC_BYTES = 24 bytes. */
const NONCE_LENGTH = 32
const NONCE_SYNTAX = /^[A-Za-z0-9_-]{32}$/

/**
 * Creates stateless nonces: nonce = base64url(index || HMAC-SHA256(secret, index)[0..16]), where
 * index = floor(now / window) as a 64-bit big-endian integer. A nonce is valid in its own window and
 * the next one, so a client always has between `window` and `2 * window` seconds to use it.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-8
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-9
 * @example
 * ```ts
 * const nonces = createDpopNonces({ secret: () => nonceSecret, now: config.now })
 * headers.set('dpop-nonce', await nonces.current())
 * ```
 */
export function createDpopNonces(options: DpopNoncesOptions): DpopNonces {
  const { secret } = options
  const now = options.now ?? (() => Date.now() / 1000)
  const window = options.window ?? 60
  if (typeof secret !== 'function') throw new TypeError('"secret" must be a function')
  if (typeof now !== 'function') throw new TypeError('"now" must be a function')
  if (!Number.isInteger(window) || window < 1) throw new TypeError('"window" must be a positive integer')

  // One imported key per secret value, and the nonces of the last windows computed with it.
  let cachedSecret: Uint8Array<ArrayBuffer> | undefined
  let cachedKey: Promise<CryptoKey> | undefined
  const issued = new Map<number, string>()

  async function keyFor(): Promise<CryptoKey> {
    const bytes = await secret()
    if (!(bytes instanceof Uint8Array) || bytes.length < 16) {
      throw new TypeError('"secret" must return a Uint8Array of at least 16 bytes')
    }
    if (!cachedKey || !sameBytes(bytes, cachedSecret)) {
      cachedSecret = bytes.slice()
      cachedKey = crypto.subtle.importKey('raw', cachedSecret, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
      issued.clear()
    }
    return cachedKey
  }

  async function nonceFor(index: number): Promise<string> {
    const key = await keyFor()
    const known = issued.get(index)
    if (known !== undefined) return known
    const message = new Uint8Array(INDEX_BYTES)
    new DataView(message.buffer).setBigUint64(0, BigInt(index))
    const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, message))
    const nonce = new Uint8Array(INDEX_BYTES + MAC_BYTES)
    nonce.set(message)
    nonce.set(mac.subarray(0, MAC_BYTES), INDEX_BYTES)
    const value = base64url.encode(nonce)
    // Keep the last few windows only: the current and the previous are the ones checked.
    if (issued.size >= 4) issued.delete(Math.min(...issued.keys()))
    issued.set(index, value)
    return value
  }

  const currentIndex = (): number => Math.floor(now() / window)

  return {
    current(): Promise<string> {
      return nonceFor(currentIndex())
    },
    async check(nonce: string): Promise<boolean> {
      if (typeof nonce !== 'string' || nonce.length !== NONCE_LENGTH || !NONCE_SYNTAX.test(nonce)) return false
      const bytes = base64url.decode(nonce)
      const index = Number(new DataView(bytes.buffer, bytes.byteOffset, INDEX_BYTES).getBigUint64(0))
      const current = currentIndex()
      if (index !== current && index !== current - 1) return false
      return timingSafeEqual(await nonceFor(index), nonce)
    },
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array | undefined): boolean {
  if (!b || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
