import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { sha256 } from '../../../src/crypto/opaque.ts'
import { atHash } from '../../../src/tokens/id_token.ts'

// OpenID Connect Core §3.1.3.6: at_hash is base64url of the left half of the access token's hash,
// the hash being the one of the ID token's alg (SHA-256 for RS256/ES256/PS256, SHA-512 for EdDSA).
describe('at_hash (Core §3.1.3.6)', () => {
  const token = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJl'
  const leftHalf = (algorithm: string): string => {
    const digest = createHash(algorithm).update(token).digest()
    return digest.subarray(0, digest.length / 2).toString('base64url')
  }

  it('is the left half of SHA-256 for RS256, ES256 and PS256, with or without the service digest', async () => {
    const nodeSha256 = (value: string): string => createHash('sha256').update(value).digest('base64url')
    for (const alg of ['RS256', 'ES256', 'PS256']) {
      expect(await atHash(token, alg)).toBe(leftHalf('sha256'))
      expect(await atHash(token, alg, nodeSha256)).toBe(leftHalf('sha256'))
      expect(await atHash(token, alg, sha256)).toBe(leftHalf('sha256'))
    }
  })

  it('is the left half of SHA-512 for EdDSA and ignores the SHA-256 digest there', async () => {
    const wrong = (): string => {
      throw new Error('SHA-256 digest used for EdDSA')
    }
    expect(await atHash(token, 'EdDSA', wrong)).toBe(leftHalf('sha512'))
  })
})
