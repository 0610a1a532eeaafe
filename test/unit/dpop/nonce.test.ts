import { base64url } from 'jose'
import { describe, expect, it } from 'vitest'
import { createDpopNonces } from '../../../src/dpop/nonce.ts'

const T0 = 1_700_000_040 // a multiple of 60
const secret = new Uint8Array(32).fill(1)

function at(now: number, key: Uint8Array = secret, window?: number) {
  return createDpopNonces({ secret: () => key, now: () => now, ...(window ? { window } : {}) })
}

describe('createDpopNonces', () => {
  it('RFC 9449 §8.1: a nonce is 32 base64url characters (1*NQCHAR), fixed within a window', async () => {
    const nonce = await at(T0).current()
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(await at(T0 + 59).current()).toBe(nonce)
    expect(await at(T0 + 60).current()).not.toBe(nonce)
  })

  it('RFC 9449 §8: accepts the current and the previous window only', async () => {
    const nonce = await at(T0).current()
    expect(await at(T0).check(nonce)).toBe(true)
    expect(await at(T0 + 119).check(nonce)).toBe(true)
    expect(await at(T0 + 120).check(nonce)).toBe(false)
    expect(await at(T0 - 1).check(nonce)).toBe(false) // issued in a window that has not started
  })

  it('RFC 9449 §8: works across instances that share only the secret', async () => {
    const a = createDpopNonces({ secret: async () => new Uint8Array(32).fill(1), now: () => T0 })
    const b = createDpopNonces({ secret: () => new Uint8Array(32).fill(1), now: () => T0 + 30 })
    expect(await b.check(await a.current())).toBe(true)
    expect(await a.current()).toBe(await b.current())
  })

  it('RFC 9449 §8: a nonce of another secret, a tampered MAC or index, and garbage are rejected', async () => {
    const nonces = at(T0)
    const nonce = await nonces.current()
    expect(await nonces.check(await at(T0, new Uint8Array(32).fill(2)).current())).toBe(false)
    const bytes = base64url.decode(nonce)
    const mac = bytes.slice()
    mac[23] = (mac[23] ?? 0) ^ 1
    expect(await nonces.check(base64url.encode(mac))).toBe(false)
    const index = bytes.slice()
    index[7] = (index[7] ?? 0) - 1 // the previous window's index with this window's MAC
    expect(await nonces.check(base64url.encode(index))).toBe(false)
    for (const garbage of ['', 'x', `${nonce}A`, nonce.slice(1), `${nonce.slice(0, 31)}+`, 'A'.repeat(32)]) {
      expect(await nonces.check(garbage)).toBe(false)
    }
  })

  it('a rotated secret takes effect at once: outstanding nonces fail', async () => {
    let key = new Uint8Array(32).fill(3)
    const nonces = createDpopNonces({ secret: () => key, now: () => T0 })
    const before = await nonces.current()
    key = new Uint8Array(32).fill(4)
    expect(await nonces.check(before)).toBe(false)
    expect(await nonces.current()).not.toBe(before)
  })

  it('honours the window length', async () => {
    const nonce = await at(T0, secret, 10).current()
    expect(await at(T0 + 19, secret, 10).check(nonce)).toBe(true)
    expect(await at(T0 + 20, secret, 10).check(nonce)).toBe(false)
  })

  it('rejects bad options with TypeError', async () => {
    expect(() => createDpopNonces({ secret: () => secret, window: 0 })).toThrow(TypeError)
    expect(() => createDpopNonces({ secret: () => secret, window: 1.5 })).toThrow(TypeError)
    await expect(at(T0, new Uint8Array(8)).current()).rejects.toThrow(TypeError)
  })
})
