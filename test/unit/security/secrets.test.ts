import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  DEFAULT_ITERATIONS,
  createVerificationCache,
  hashSecret,
  isSecretHash,
  verifySecret,
} from '../../../src/security/secrets.ts'

const FORMAT = /^pbkdf2-sha256\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/

describe('hashSecret', () => {
  it('produces pbkdf2-sha256$<iterations>$<salt>$<hash> with a 16-byte salt and a 32-byte hash', async () => {
    const hash = await hashSecret('s3cret', 1000)
    const match = FORMAT.exec(hash)
    expect(match).not.toBeNull()
    expect(match?.[1]).toBe('1000')
    expect(match?.[2]).toHaveLength(22) // 16 bytes, base64url without padding
    expect(match?.[3]).toHaveLength(43) // 32 bytes
    expect(hash).not.toContain('s3cret')
  })

  it('uses 600,000 iterations by default', async () => {
    expect(DEFAULT_ITERATIONS).toBe(600_000)
    expect(await hashSecret('x')).toMatch(/^pbkdf2-sha256\$600000\$/)
  })

  it('salts: the same secret hashes differently each time', async () => {
    const [a, b] = await Promise.all([hashSecret('same', 1000), hashSecret('same', 1000)])
    expect(a).not.toBe(b)
    expect(await verifySecret('same', a)).toBe(true)
    expect(await verifySecret('same', b)).toBe(true)
  })
})

describe('verifySecret', () => {
  it.each([
    ['the right secret', 'correct horse', true],
    ['a wrong secret', 'correct horsf', false],
    ['a prefix of the secret', 'correct hors', false],
    ['the secret plus a character', 'correct horse!', false],
    ['an empty string', '', false],
    ['different case', 'Correct horse', false],
  ])('%s → %s', async (_, candidate, expected) => {
    const stored = await hashSecret('correct horse', 1000)
    expect(await verifySecret(candidate, stored)).toBe(expected)
  })

  it('handles non-ASCII secrets', async () => {
    const stored = await hashSecret('pässwörd ✓ 🔑', 1000)
    expect(await verifySecret('pässwörd ✓ 🔑', stored)).toBe(true)
    expect(await verifySecret('passwort ✓ 🔑', stored)).toBe(false)
  })

  it('honours the iteration count stored in the hash', async () => {
    const stored = await hashSecret('abc', 1234)
    expect(await verifySecret('abc', stored)).toBe(true)
    // Same salt and hash, different iteration count: must not verify.
    expect(await verifySecret('abc', stored.replace('$1234$', '$1235$'))).toBe(false)
  })

  it.each([
    ['plain text', 'abc'],
    ['another algorithm', 'bcrypt$10$abc$def'],
    ['too few parts', 'pbkdf2-sha256$1000$abc'],
    ['too many parts', 'pbkdf2-sha256$1000$abc$def$ghi'],
    ['zero iterations', 'pbkdf2-sha256$0$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA'],
    ['non-numeric iterations', 'pbkdf2-sha256$many$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA'],
    ['empty', ''],
  ])('a malformed stored value (%s) never verifies', async (_, stored) => {
    expect(await verifySecret('abc', stored)).toBe(false)
  })
})

describe('isSecretHash (pre-hashed detection)', () => {
  it('recognises our own hashes', async () => {
    expect(isSecretHash(await hashSecret('x', 1000))).toBe(true)
  })

  it.each([
    'service-secret',
    'pbkdf2-sha256',
    'pbkdf2-sha256$1000$salt',
    'pbkdf2-sha256$x$salt$hash',
    'pbkdf2-sha256$1000$sa lt$hash',
    'pbkdf2-sha256$1000$salt$hash$',
    ' pbkdf2-sha256$1000$salt$hash',
    'pbkdf2-sha512$1000$salt$hash',
    '$2b$10$abcdefghijklmnopqrstuv',
  ])('does not take %j for a hash', (value) => {
    expect(isSecretHash(value)).toBe(false)
  })
})

describe('createVerificationCache', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  function setup(ttl = 300) {
    let now = 1_800_000_000
    const cache = createVerificationCache({ ttl, max: 100, now: () => now })
    const derive = vi.spyOn(crypto.subtle, 'deriveBits')
    const advance = (seconds: number) => {
      now += seconds
    }
    return { cache, derive, advance }
  }

  it('a cache hit skips PBKDF2 for the right secret but still rejects a wrong one', async () => {
    const stored = await hashSecret('right', 1000)
    const { cache, derive } = setup()
    expect(await cache.verify('right', stored)).toBe(true)
    expect(derive).toHaveBeenCalledTimes(1)
    expect(await cache.verify('right', stored)).toBe(true)
    expect(derive).toHaveBeenCalledTimes(1) // served from the cache
    expect(await cache.verify('wrong', stored)).toBe(false)
    expect(derive).toHaveBeenCalledTimes(2) // a wrong secret pays the full cost
    expect(await cache.verify('', stored)).toBe(false)
    expect(await cache.verify('right ', stored)).toBe(false)
    // The failures did not evict or poison the entry.
    expect(await cache.verify('right', stored)).toBe(true)
    expect(derive).toHaveBeenCalledTimes(4)
  })

  it('an entry is keyed by the stored hash: the same secret against another hash is verified anew', async () => {
    const a = await hashSecret('right', 1000)
    const b = await hashSecret('other', 1000)
    const { cache } = setup()
    expect(await cache.verify('right', a)).toBe(true)
    expect(await cache.verify('right', b)).toBe(false)
  })

  it('entries expire after ttl seconds', async () => {
    const stored = await hashSecret('right', 1000)
    const { cache, derive, advance } = setup(60)
    await cache.verify('right', stored)
    advance(59)
    await cache.verify('right', stored)
    expect(derive).toHaveBeenCalledTimes(1)
    advance(1)
    expect(await cache.verify('right', stored)).toBe(true)
    expect(derive).toHaveBeenCalledTimes(2)
  })

  it('ttl 0 disables caching', async () => {
    const stored = await hashSecret('right', 1000)
    const { cache, derive } = setup(0)
    expect(await cache.verify('right', stored)).toBe(true)
    expect(await cache.verify('right', stored)).toBe(true)
    expect(derive).toHaveBeenCalledTimes(2)
  })

  it('isCached answers synchronously with a synchronous digest, and through a promise with WebCrypto', async () => {
    const stored = await hashSecret('right', 1000)
    let now = 1_800_000_000
    const digest = (secret: string) => `mac:${secret.length}:${secret}`
    const sync = createVerificationCache({ ttl: 60, max: 10, now: () => now, digest })
    const web = createVerificationCache({ ttl: 60, max: 10, now: () => now })
    // Nothing cached yet: a plain false from both, without hashing.
    expect(sync.isCached('right', stored)).toBe(false)
    expect(web.isCached('right', stored)).toBe(false)
    await sync.verify('right', stored)
    await web.verify('right', stored)
    expect(sync.isCached('right', stored)).toBe(true)
    expect(sync.isCached('wrong', stored)).toBe(false)
    const pending = web.isCached('right', stored)
    expect(pending).toBeInstanceOf(Promise)
    expect(await pending).toBe(true)
    expect(await web.isCached('wrong', stored)).toBe(false)
    now += 60
    expect(sync.isCached('right', stored)).toBe(false)
    expect(web.isCached('right', stored)).toBe(false)
  })
})
