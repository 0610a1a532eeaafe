/**
 * @module tokens/user_code
 * The user code of a device authorization (RFC 8628 §6.1): 8 characters a person reads on one
 * screen and types on another. The alphabet is the RFC's example, 20 consonants without vowels (no
 * words can form) and without look-alikes of digits; 20^8 ≈ 2^34.6 codes. Shown as `XXXX-XXXX`,
 * compared without the dash, spaces or case.
 */

/** The characters of user codes (RFC 8628 §6.1: no vowels, no digits). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
/** Characters in a user code (without the dash). */
export const USER_CODE_LENGTH = 8

/** A new random user code, normalised (no dash). Uniform: bytes ≥ 240 are drawn again. */
export function generateUserCode(): string {
  let code = ''
  while (code.length < USER_CODE_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(USER_CODE_LENGTH * 2))) {
      // 240 = 12 × 20: the bytes below it map evenly onto the alphabet.
      if (byte < 240 && code.length < USER_CODE_LENGTH) code += USER_CODE_ALPHABET[byte % 20]
    }
  }
  return code
}

/** The code as shown to people: `BCDF-GHJK`. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/**
 * What a person typed, normalised for lookup: upper case, dashes and white space dropped. Undefined
 * when it cannot be a user code (wrong length or a character outside the alphabet), so such input
 * is refused without a store lookup.
 */
export function normalizeUserCode(input: string): string | undefined {
  const code = input.toUpperCase().replace(/[\s\-–—]/g, '')
  if (code.length !== USER_CODE_LENGTH) return undefined
  for (const char of code) if (!USER_CODE_ALPHABET.includes(char)) return undefined
  return code
}
