import { describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { nodeSecretDigest } from '../../../adapters/node.ts'
import { createVerificationCache, hashSecret } from '../../../src/security/secrets.ts'
import { createVerifiedTokenCache } from '../../../src/tokens/verified_cache.ts'
import { basic, form, makeService } from '../../helpers/service.ts'

describe('verified access token cache', () => {
  it('forgets a token at its expiry and drops the oldest entry when full', () => {
    const cache = createVerifiedTokenCache({ max: 2 })
    const claims = (exp: number) => ({ exp }) as never
    cache.set('a', claims(100))
    cache.set('b', claims(200))
    expect(cache.get('a', 99)).toBeDefined()
    expect(cache.get('a', 100)).toBeUndefined()
    cache.set('c', claims(300))
    cache.set('d', claims(300))
    expect(cache.get('b', 0)).toBeUndefined()
    expect(cache.get('d', 0)).toBeDefined()
  })

  it('INT-07: a token introspected (and cached) before its revocation is inactive after it', async () => {
    const { service } = await makeService()
    const auth = { authorization: basic('service', 'service-secret') }
    const issued = await service.fetch(form(service.endpoints.token, { grant_type: 'client_credentials' }, auth))
    const { access_token } = (await issued.json()) as { access_token: string }
    const introspect = async () =>
      (await (await service.fetch(form(service.endpoints.introspection, { token: access_token }, auth))).json()) as {
        active: boolean
      }
    expect((await introspect()).active).toBe(true)
    expect((await service.fetch(form(service.endpoints.revocation, { token: access_token }, auth))).status).toBe(200)
    expect(await introspect()).toEqual({ active: false })
  })
})

describe('nodeSecretDigest', () => {
  it('is keyed per instance: deterministic within one, unrelated across two and to unkeyed hashes', () => {
    const digest = nodeSecretDigest()
    const other = nodeSecretDigest()
    expect(digest('s3cret')).toBe(digest('s3cret'))
    expect(digest('s3cret')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(other('s3cret')).not.toBe(digest('s3cret'))
    expect(digest('s3cret!')).not.toBe(digest('s3cret'))
    for (const algorithm of ['sha256', 'sha3-256']) {
      expect(digest('s3cret')).not.toBe(createHash(algorithm).update('s3cret').digest('base64url'))
    }
  })

  it('hashes the whole of each character (a byte-per-unit encoding would collapse these)', () => {
    const digest = nodeSecretDigest()
    expect(digest('\u0100')).not.toBe(digest('\0')) // latin1 keeps only the low byte
    expect(digest('p\u00e4ss')).not.toBe(digest('p\u01e4ss'))
    expect(digest('')).not.toBe(digest('\0'))
  })
})

describe('verified secret cache with a synchronous digest', () => {
  it('accepts the right secret from the cache and never a wrong one', async () => {
    const now = () => 1_800_000_000
    const cache = createVerificationCache({ ttl: 300, max: 10, now, digest: nodeSecretDigest() })
    const stored = await hashSecret('s3cret', 1000)
    expect(await cache.verify('s3cret', stored)).toBe(true)
    expect(await cache.verify('s3cret', stored)).toBe(true) // from the cache
    expect(await cache.verify('s3cret!', stored)).toBe(false)
    expect(await cache.verify('', stored)).toBe(false)
  })
})
