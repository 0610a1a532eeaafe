import { describe, expect, it } from 'vitest'
import { randomBytes, randomToken, sha256, timingSafeEqual } from '../../../src/crypto/opaque.ts'

describe('randomToken', () => {
  it('RT-02 AUTHZ-10: 256 bits by default, URL-safe, never repeating', () => {
    const tokens = Array.from({ length: 200 }, () => randomToken())
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(new Set(tokens).size).toBe(tokens.length)
  })

  it('carries bytes * 8 bits', () => {
    expect(randomToken(16)).toMatch(/^[A-Za-z0-9_-]{22}$/)
  })
})

describe('randomBytes (pooled)', () => {
  it('hands out every pooled byte once: consecutive draws never overlap', () => {
    // 600 draws of 16 bytes span a few 4 KiB refills; any reuse would repeat a 128-bit value.
    const seen = new Set<string>()
    for (let i = 0; i < 600; i++) seen.add(Array.from(randomBytes(16)).join(','))
    expect(seen.size).toBe(600)
  })

  it('earlier draws keep their bytes after the pool is refilled', () => {
    const first = randomBytes(32)
    const copy = Array.from(first)
    for (let i = 0; i < 300; i++) randomBytes(32)
    expect(Array.from(first)).toEqual(copy)
  })

  it('gives the requested length, large requests straight from the CSPRNG', () => {
    for (const length of [1, 16, 24, 32, 511, 512, 513, 4096, 10_000]) expect(randomBytes(length)).toHaveLength(length)
  })

  it('is not all zeros (the pool is filled before use)', () => {
    expect(randomBytes(64).some((byte) => byte !== 0)).toBe(true)
  })
})

describe('sha256', () => {
  it('is the base64url SHA-256 of the UTF-8 string', async () => {
    expect(await sha256('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0')
    expect(await sha256('')).toBe('47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU')
  })
})

describe('timingSafeEqual', () => {
  it.each([
    ['abc', 'abc', true],
    ['abc', 'abd', false],
    ['abc', 'ab', false],
    ['ab', 'abc', false],
    ['', '', true],
    ['', 'a', false],
    ['é', 'e', false],
    ['a\u0000', 'a', false],
    ['a', 'a\u0000', false],
    ['\u0000', '', false],
    ['😀', '😀', true],
    ['😀', '😁', false],
    ['\ud83d', '\ud83d\ude00', false],
    ['日本', '日本', true],
  ])('%j vs %j → %s', (a, b, expected) => {
    expect(timingSafeEqual(a, b)).toBe(expected)
  })
})
