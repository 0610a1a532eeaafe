/**
 * @module dpop/nonce_secret
 * The HMAC key of the DPoP server nonces, the same on every instance without new shared state:
 * HKDF-SHA256 of the private part of the oldest signing key in the store (every instance loads the
 * same keys). Rotating that key out changes the secret; outstanding nonces then fail once and
 * clients retry with the fresh one (RFC 9449 §8).
 */
import type { Keyring } from '../keys/index.ts'

const INFO = new TextEncoder().encode('gatehouse dpop-nonce v1')
/** Seconds a derived secret is reused before the key set is looked at again. */
const REUSE = 60

/** A `secret` for `createDpopNonces`, derived from the keyring and cached for a minute. */
export function dpopNonceSecret(keyring: Keyring, now: () => number): () => Promise<Uint8Array> {
  let cached: { at: number; material: string; secret: Promise<Uint8Array> } | undefined
  return async () => {
    const at = now()
    if (cached && at - cached.at < REUSE) return cached.secret
    const records = await keyring.list()
    const oldest = [...records].sort((a, b) => a.createdAt - b.createdAt || a.kid.localeCompare(b.kid))[0]
    const jwk = oldest?.privateJwk ?? {}
    const material = String(jwk.d ?? '') + String(jwk.p ?? '')
    if (material === '') throw new Error('no signing key to derive the DPoP nonce secret from')
    if (cached && cached.material === material) {
      cached.at = at
      return cached.secret
    }
    const secret = derive(material)
    cached = { at, material, secret }
    return secret
  }
}

async function derive(material: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(material), 'HKDF', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(32), info: INFO },
    key,
    256,
  )
  return new Uint8Array(bits)
}
