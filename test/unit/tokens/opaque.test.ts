import { describe, expect, it } from 'vitest'
import { randomToken, sha256, timingSafeEqual } from '../../../src/tokens/opaque.ts'

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
  ])('%j vs %j → %s', (a, b, expected) => {
    expect(timingSafeEqual(a, b)).toBe(expected)
  })
})
