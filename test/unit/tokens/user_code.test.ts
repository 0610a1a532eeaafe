import { describe, expect, it } from 'vitest'
import {
  formatUserCode,
  generateUserCode,
  normalizeUserCode,
  USER_CODE_ALPHABET,
} from '../../../src/tokens/user_code.ts'

describe('#29 user codes (RFC 8628 §6.1)', () => {
  it('#29 a generated code has 8 characters of the alphabet, and codes differ', () => {
    const codes = new Set<string>()
    for (let i = 0; i < 1000; i++) {
      const code = generateUserCode()
      expect(code).toMatch(new RegExp(`^[${USER_CODE_ALPHABET}]{8}$`))
      codes.add(code)
    }
    expect(codes.size).toBeGreaterThan(990)
  })

  it('#29 every character of the alphabet is drawn', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 200; i++) for (const char of generateUserCode()) seen.add(char)
    expect([...seen].sort().join('')).toBe(USER_CODE_ALPHABET)
  })

  it('#29 shown as XXXX-XXXX, compared without the dash, spaces and case', () => {
    expect(formatUserCode('BCDFGHJK')).toBe('BCDF-GHJK')
    expect(normalizeUserCode('bcdf-ghjk')).toBe('BCDFGHJK')
    expect(normalizeUserCode(' BCDF GHJK ')).toBe('BCDFGHJK')
    expect(normalizeUserCode('BCDFGHJK')).toBe('BCDFGHJK')
  })

  it('#29 input that cannot be a user code is refused without a lookup', () => {
    expect(normalizeUserCode('BCDF-GHJ')).toBeUndefined()
    expect(normalizeUserCode('BCDF-GHJKL')).toBeUndefined()
    expect(normalizeUserCode('ABCD-EFGH')).toBeUndefined() // vowels are not in the alphabet
    expect(normalizeUserCode('BCDF-GHJ1')).toBeUndefined()
    expect(normalizeUserCode('')).toBeUndefined()
  })
})
