/**
 * #44 item 4: the table encoder that replaced jose's `base64url.encode` for signatures and random
 * tokens gives exactly jose's output.
 */
import { base64url } from 'jose'
import { describe, expect, it } from 'vitest'
import { base64urlBytes } from '../../../src/crypto/base64url.ts'

describe('base64urlBytes', () => {
  it('#44 item 4: is jose base64url.encode for every length 0–100 (random bytes)', () => {
    for (let length = 0; length <= 100; length++) {
      for (let round = 0; round < 20; round++) {
        const bytes = crypto.getRandomValues(new Uint8Array(length))
        expect(base64urlBytes(bytes)).toBe(base64url.encode(bytes))
      }
    }
  })

  it('#44 item 4: is jose base64url.encode for every byte value in every position of a group', () => {
    for (let value = 0; value < 256; value++) {
      for (const bytes of [[value], [value, 255 - value], [value, 0, 255], [255, value, 0], [0, 255, value]]) {
        const array = Uint8Array.from(bytes)
        expect(base64urlBytes(array)).toBe(base64url.encode(array))
      }
    }
  })

  it('encodes a view of a larger buffer by its own bytes only', () => {
    const buffer = Uint8Array.from({ length: 32 }, (_, i) => i)
    const view = buffer.subarray(5, 21)
    expect(base64urlBytes(view)).toBe(base64url.encode(Uint8Array.from(view)))
  })
})
