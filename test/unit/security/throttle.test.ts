import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { type ThrottleRule, attemptRules, createRulesCache, storeLimiter } from '../../../src/security/throttle.ts'

const NOW = 1_800_000_000
const LIMITS = { perIdentityAndAddress: 3, perIdentity: 10, perAddress: 20 }

describe('createRulesCache', () => {
  it('gives the same rules as attemptRules, once built, for the same identity and address', async () => {
    const rules = createRulesCache('client', LIMITS, 60)
    const first = await rules('svc', '10.0.0.1')
    expect(first).toEqual(await attemptRules('client', 'svc', '10.0.0.1', LIMITS, 60))
    // Second call: the cached object itself, not a promise.
    expect(rules('svc', '10.0.0.1')).toBe(first)
    expect(await rules('svc', '10.0.0.2')).not.toBe(first)
    expect(await rules('other', '10.0.0.1')).not.toBe(first)
    expect((await rules('svc', undefined)).all).toHaveLength(1)
    expect(await rules('svc', undefined)).toEqual(await attemptRules('client', 'svc', undefined, LIMITS, 60))
  })

  it('shares frozen rules, hashes odd identities, and is bounded', async () => {
    const rules = createRulesCache('user', LIMITS, 60, 2)
    const built = await rules('x'.repeat(500), '10.0.0.1')
    expect(Object.isFrozen(built) && Object.isFrozen(built.all) && Object.isFrozen(built.all[0])).toBe(true)
    expect(built.all[0]?.key).toMatch(/^user:#[0-9a-f]{64}$/)
    await rules('b', '10.0.0.1')
    expect(rules('b', '10.0.0.1')).toBe(await rules('b', '10.0.0.1'))
    await rules('c', '10.0.0.1') // third pair: the cache was full and starts again
    expect(rules('x'.repeat(500), '10.0.0.1')).toBeInstanceOf(Promise)
  })
})

describe('storeLimiter.retryAfter', () => {
  const rule = (key: string, limit: number): ThrottleRule => ({ key, limit, window: 60 })

  it('answers from remembered reads and from the store alike (cached fast path = fresh path)', async () => {
    const store = createMemoryStore({ now: () => NOW })
    const limiter = storeLimiter(store, { readTtl: 1 })
    const rules = [rule('a', 2), rule('b', 5)]
    expect(await limiter.retryAfter(rules, NOW)).toBe(0)
    await limiter.fail(rules, NOW)
    await limiter.fail(rules, NOW)
    // Both counters were remembered by fail(): within readTtl the cached path sees 'a' exhausted,
    // synchronously; a fresh read is asked of the store.
    expect(limiter.retryAfter(rules, NOW)).toBe(60)
    expect(limiter.retryAfter(rules, NOW, { fresh: true })).toBeInstanceOf(Promise)
    expect(await limiter.retryAfter(rules, NOW + 10)).toBe(50)
    expect(await limiter.retryAfter(rules, NOW + 10, { fresh: true })).toBe(50)
    // One key never read: the store is asked, and the answer is the same.
    expect(await limiter.retryAfter([rule('c', 1), ...rules], NOW + 10)).toBe(50)
    expect(await limiter.retryAfter([rule('b', 5)], NOW + 10)).toBe(0)
  })

  it('a remembered read older than readTtl is read again (another instance counted failures)', async () => {
    const store = createMemoryStore({ now: () => NOW })
    const mine = storeLimiter(store, { readTtl: 1 })
    const theirs = storeLimiter(store, { readTtl: 1 })
    const rules = [rule('shared', 1)]
    expect(await mine.retryAfter(rules, NOW)).toBe(0)
    await theirs.fail(rules, NOW)
    // Within the second, this instance still answers from its own read.
    expect(await mine.retryAfter(rules, NOW)).toBe(0)
    expect(await mine.retryAfter(rules, NOW + 1)).toBe(59)
  })
})
