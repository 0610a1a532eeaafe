import { describe, expect, it } from 'vitest'
import { PackedRecordMap } from '../../../src/storage/packed_map.ts'

interface Rec {
  expiresAt: number
  value: string
  n?: number
  list?: string[]
}

const NOW = 1_800_000_000

function map(now: () => number = () => NOW, sweepEvery = 1000) {
  return new PackedRecordMap<Rec>({ now, sweepEvery })
}

/** Deterministic PRNG (mulberry32), so a failing sequence can be replayed. */
function prng(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('PackedRecordMap', () => {
  it('stores, replaces and deletes records; reads are fresh copies', () => {
    const m = map()
    const input: Rec = { expiresAt: NOW + 60, value: 'a', list: ['x'] }
    m.set('k', input)
    input.list?.push('changed after set')
    const first = m.get('k') as Rec
    expect(first).toEqual({ expiresAt: NOW + 60, value: 'a', list: ['x'] })
    first.list?.push('changed after get')
    expect(m.get('k')).toEqual({ expiresAt: NOW + 60, value: 'a', list: ['x'] })
    m.set('k', { expiresAt: NOW + 60, value: 'b' })
    expect(m.get('k')).toEqual({ expiresAt: NOW + 60, value: 'b' })
    expect(m.size).toBe(1)
    expect(m.has('k')).toBe(true)
    expect(m.delete('k')).toBe(true)
    expect(m.delete('k')).toBe(false)
    expect(m.get('k')).toBeUndefined()
    expect(m.has('k')).toBe(false)
    expect(m.size).toBe(0)
  })

  it('keys and values in any Unicode, the empty key, long keys, and an own __proto__ key', () => {
    const m = map()
    const keys = ['', 'ключ', '鍵🔑', 'a'.repeat(5000), 'é'.repeat(3000), 'k\u0000z']
    for (const [i, key] of keys.entries()) m.set(key, { expiresAt: NOW + 60, value: `${key}·値·${i}` })
    for (const [i, key] of keys.entries()) expect(m.get(key)).toEqual({ expiresAt: NOW + 60, value: `${key}·値·${i}` })
    // Prefixes of stored keys are other keys.
    expect(m.get('ключ'.slice(0, 3))).toBeUndefined()
    expect(m.get('a'.repeat(4999))).toBeUndefined()
    const withProto = JSON.parse('{"expiresAt":1800000060,"value":"v","__proto__":{"polluted":true}}') as Rec
    m.set('proto', withProto)
    const read = m.get('proto') as Rec & Record<string, unknown>
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype)
    expect(Object.keys(read)).toContain('__proto__')
    expect((read as { polluted?: boolean }).polluted).toBeUndefined()
  })

  it('an expired record is gone on read, and sweep removes every expired one', () => {
    let now = NOW
    const m = map(() => now, 1_000_000)
    for (let i = 0; i < 500; i++) m.set(`k${i}`, { expiresAt: NOW + (i % 2 === 0 ? 10 : 100), value: String(i) })
    expect(m.size).toBe(500)
    now = NOW + 10 // expiresAt <= now is expired
    expect(m.get('k0')).toBeUndefined()
    expect(m.has('k2')).toBe(false)
    expect(m.get('k1')).toEqual({ expiresAt: NOW + 100, value: '1' })
    expect(m.size).toBe(498)
    m.sweep()
    expect(m.size).toBe(250)
    for (let i = 1; i < 500; i += 2) expect(m.get(`k${i}`)?.value).toBe(String(i))
  })

  it('sweeps by itself after as many writes as it holds entries', () => {
    let now = NOW
    const m = map(() => now, 10)
    for (let i = 0; i < 9; i++) m.set(`old${i}`, { expiresAt: NOW + 1, value: 'x' })
    now = NOW + 5
    expect(m.size).toBe(9)
    m.set('new', { expiresAt: NOW + 100, value: 'y' }) // the 10th write sweeps
    expect(m.size).toBe(1)
  })

  it('matches a Map over 200,000 random sets, overwrites, deletes and expiries (model check)', () => {
    const random = prng(20261123)
    let now = NOW
    const m = map(() => now, 5000)
    const model = new Map<string, Rec>()
    const keyOf = (i: number) => `key-${i}-${'x'.repeat(i % 40)}`
    for (let step = 0; step < 200_000; step++) {
      const key = keyOf(Math.floor(random() * 20_000))
      const op = random()
      if (op < 0.55) {
        const record: Rec = {
          expiresAt: now + 1 + Math.floor(random() * 50),
          value: 'v'.repeat(Math.floor(random() * 300)),
          n: step,
        }
        m.set(key, record)
        model.set(key, record)
      } else if (op < 0.8) {
        const expected = model.get(key)
        const live = expected !== undefined && expected.expiresAt > now ? expected : undefined
        expect(m.get(key)).toEqual(live)
      } else if (op < 0.95) {
        const expected = model.get(key)
        const existed = m.delete(key)
        // delete reports stored entries, expired ones included until they are swept or read.
        if (expected === undefined) expect(existed).toBe(false)
        model.delete(key)
      } else {
        now += 1
      }
    }
    m.sweep()
    const live = [...model].filter(([, record]) => record.expiresAt > now)
    expect(m.size).toBe(live.length)
    for (const [key, record] of live) expect(m.get(key)).toEqual(record)
  })

  it('reclaims the bytes of replaced and deleted records (segments are compacted and released)', () => {
    const m = map(() => NOW, 1_000_000)
    const payload = 'p'.repeat(1000)
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 1000; i++) m.set(`k${i}`, { expiresAt: NOW + 60, value: `${round}:${payload}` })
    }
    // 40 MB were written; about 1 MB is live. Without compaction every byte would still be held.
    expect(m.segmentBytes).toBeLessThanOrEqual(4 << 20)
    for (let i = 0; i < 1000; i++) expect(m.get(`k${i}`)?.value).toBe(`39:${payload}`)
    for (let i = 0; i < 1000; i++) m.delete(`k${i}`)
    for (let i = 0; i < 3000; i++) m.set(`other${i}`, { expiresAt: NOW + 60, value: payload })
    expect(m.size).toBe(3000)
    expect(m.segmentBytes).toBeLessThanOrEqual(8 << 20)
    for (let i = 0; i < 3000; i += 97) expect(m.get(`other${i}`)?.value).toBe(payload)
  })

  it('holds a record larger than a segment', () => {
    const m = map()
    const big = 'ü'.repeat(1_500_000) // 3 MB of UTF-8
    m.set('big', { expiresAt: NOW + 60, value: big })
    m.set('small', { expiresAt: NOW + 60, value: 's' })
    expect(m.get('big')?.value).toBe(big)
    expect(m.get('small')?.value).toBe('s')
    m.set('big', { expiresAt: NOW + 60, value: 'now small' })
    expect(m.get('big')?.value).toBe('now small')
    expect(m.get('small')?.value).toBe('s')
  })

  it('gives each record larger than a segment a segment of its own, released when the record goes', () => {
    const m = map()
    const big = (c: string) => c.repeat(1_200_000)
    m.set('s0', { expiresAt: NOW + 60, value: 'small 0' })
    m.set('b1', { expiresAt: NOW + 60, value: big('a') })
    m.set('s1', { expiresAt: NOW + 60, value: 'small 1' })
    m.set('b2', { expiresAt: NOW + 60, value: big('b') })
    m.set('s2', { expiresAt: NOW + 60, value: 'small 2' })
    // The small records share one 1 MiB segment: the big ones did not seal it.
    const withBig = m.segmentBytes
    expect(withBig).toBeLessThan((1 << 20) + 2 * 1_300_000)
    for (const i of [0, 1, 2]) expect(m.get(`s${i}`)?.value).toBe(`small ${i}`)
    expect(m.get('b1')?.value).toBe(big('a'))
    expect(m.get('b2')?.value).toBe(big('b'))
    m.delete('b1')
    m.set('b2', { expiresAt: NOW + 60, value: 'b2, small now' })
    expect(m.segmentBytes).toBe(1 << 20)
    expect(m.get('b1')).toBeUndefined()
    expect(m.get('b2')?.value).toBe('b2, small now')
    for (const i of [0, 1, 2]) expect(m.get(`s${i}`)?.value).toBe(`small ${i}`)
    expect(m.size).toBe(4)
  })
})
