import { describe, expect, it } from 'vitest'
import { OAuthError } from '../../../src/errors.ts'
import { sha256 } from '../../../src/crypto/opaque.ts'
import { checkCodeVerifier, isValidChallenge } from '../../../src/tokens/pkce.ts'

// RFC 7636 Appendix B.
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'

async function rejection(promise: Promise<unknown>): Promise<OAuthError> {
  const err = await promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(OAuthError)
  return err as OAuthError
}

describe('checkCodeVerifier', () => {
  it('CODE-08: accepts the RFC 7636 Appendix B verifier for its S256 challenge', async () => {
    expect(await sha256(VERIFIER)).toBe(CHALLENGE)
    await expect(checkCodeVerifier(VERIFIER, CHALLENGE, 'S256')).resolves.toBeUndefined()
  })

  it('CODE-08: rejects a different verifier with invalid_grant', async () => {
    const other = `${VERIFIER.slice(0, -1)}l`
    const err = await rejection(checkCodeVerifier(other, CHALLENGE, 'S256'))
    expect(err).toMatchObject({ code: 'invalid_grant', status: 400 })
  })

  it('CODE-09: S256 challenge answered with the challenge itself (a plain downgrade) → invalid_grant', async () => {
    const err = await rejection(checkCodeVerifier(CHALLENGE, CHALLENGE, 'S256'))
    expect(err.code).toBe('invalid_grant')
  })

  it('CODE-09: a code_verifier for a code bound to no challenge → invalid_grant', async () => {
    const err = await rejection(checkCodeVerifier(VERIFIER, undefined, undefined))
    expect(err.code).toBe('invalid_grant')
  })

  it('CODE-07: a challenge was bound and no verifier is sent → invalid_grant', async () => {
    const err = await rejection(checkCodeVerifier(undefined, CHALLENGE, 'S256'))
    expect(err.code).toBe('invalid_grant')
  })

  it('no challenge and no verifier is fine', async () => {
    await expect(checkCodeVerifier(undefined, undefined, undefined)).resolves.toBeUndefined()
  })

  it('plain compares the verifier verbatim', async () => {
    await expect(checkCodeVerifier(VERIFIER, VERIFIER, 'plain')).resolves.toBeUndefined()
    const err = await rejection(checkCodeVerifier(VERIFIER, CHALLENGE, 'plain'))
    expect(err.code).toBe('invalid_grant')
  })

  it.each([
    ['42 characters', 'a'.repeat(42)],
    ['129 characters', 'a'.repeat(129)],
    ['a "+"', `${'a'.repeat(42)}+`],
    ['a "/"', `${'a'.repeat(42)}/`],
    ['padding "="', `${'a'.repeat(42)}=`],
    ['a space', `${'a'.repeat(21)} ${'a'.repeat(21)}`],
    ['non-ASCII', `${'a'.repeat(42)}é`],
  ])(
    'CODE-10: a malformed verifier (%s) → invalid_grant, even when it would match a plain challenge',
    async (_, verifier) => {
      const err = await rejection(checkCodeVerifier(verifier, verifier, 'plain'))
      expect(err.code).toBe('invalid_grant')
      const s256 = await rejection(checkCodeVerifier(verifier, await sha256(verifier), 'S256'))
      expect(s256.code).toBe('invalid_grant')
    },
  )

  it.each([
    ['43 characters', 'a'.repeat(43)],
    ['128 characters', 'a'.repeat(128)],
    ['every unreserved character', `ABCXYZabcxyz0189-._~${'q'.repeat(23)}`],
  ])('CODE-10: a well-formed verifier (%s) is accepted', async (_, verifier) => {
    await expect(checkCodeVerifier(verifier, await sha256(verifier), 'S256')).resolves.toBeUndefined()
    await expect(checkCodeVerifier(verifier, verifier, 'plain')).resolves.toBeUndefined()
  })
})

describe('isValidChallenge', () => {
  it.each([
    [CHALLENGE, true],
    ['a'.repeat(43), true],
    ['a'.repeat(128), true],
    ['a'.repeat(42), false],
    ['a'.repeat(129), false],
    [`${CHALLENGE.slice(0, -1)}=`, false],
    [`${CHALLENGE.slice(0, -1)}+`, false],
    ['', false],
  ])('%j → %s', (challenge, expected) => {
    expect(isValidChallenge(challenge)).toBe(expected)
  })
})
