import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose'
import { describe, expect, it } from 'vitest'
import { createKeyring } from '../../../src/keys/keyring.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { issueAccessToken, looksLikeJwt, verifyAccessToken } from '../../../src/tokens/access_token.ts'

const NOW = 1_800_000_000
const ISSUER = 'https://auth.example.test'

const store = createMemoryStore({ now: () => NOW })
/** One keyring for the file: generating RSA keys per test is slow. */
const keyring = createKeyring({ store, now: () => NOW, algorithms: ['ES256', 'RS256'] })

async function setup() {
  const key = await keyring.signingKey('ES256')
  const input = { issuer: ISSUER, sub: 'svc', audience: ['api1'], clientId: 'svc', scope: 'api1', now: NOW, ttl: 600 }
  return { keyring, key, input }
}

describe('issueAccessToken', () => {
  it('RFC 9068 §2: typ at+jwt, kid, and iss sub aud exp iat jti client_id scope', async () => {
    const { key, input } = await setup()
    const { token, claims } = await issueAccessToken(input, key)
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
    expect(decodeJwt(token)).toEqual(claims)
    expect(claims).toEqual({
      iss: ISSUER,
      sub: 'svc',
      aud: 'api1',
      exp: NOW + 600,
      iat: NOW,
      jti: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      client_id: 'svc',
      scope: 'api1',
    })
  })

  it('several audiences are an array; user grants carry gid, auth_time and sid', async () => {
    const { key, input } = await setup()
    const { claims } = await issueAccessToken(
      { ...input, audience: ['a', 'b'], familyId: 'fam', authTime: NOW - 5, sid: 's1' },
      key,
    )
    expect(claims).toMatchObject({ aud: ['a', 'b'], gid: 'fam', auth_time: NOW - 5, sid: 's1' })
  })

  it('every token gets a fresh jti', async () => {
    const { key, input } = await setup()
    const a = await issueAccessToken(input, key)
    const b = await issueAccessToken(input, key)
    expect(a.claims.jti).not.toBe(b.claims.jti)
  })
})

describe('verifyAccessToken', () => {
  it('returns the claims of a valid token', async () => {
    const { keyring, key, input } = await setup()
    const { token, claims } = await issueAccessToken(input, key)
    expect(await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW })).toEqual(claims)
  })

  it('expires exactly at exp; allowExpired accepts it later', async () => {
    const { keyring, key, input } = await setup()
    const { token } = await issueAccessToken(input, key)
    expect(await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW + 599 })).toBeDefined()
    expect(await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW + 600 })).toBeUndefined()
    expect(
      await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW + 86_400, allowExpired: true }),
    ).toBeDefined()
  })

  it('another issuer → undefined', async () => {
    const { keyring, key, input } = await setup()
    const { token } = await issueAccessToken({ ...input, issuer: 'https://evil.example.test' }, key)
    expect(await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW })).toBeUndefined()
  })

  it.each([
    ['typ JWT (an ID token)', { typ: 'JWT' }, {}],
    ['no typ', {}, {}],
    ['no client_id', { typ: 'at+jwt' }, { client_id: undefined }],
    ['no jti', { typ: 'at+jwt' }, { jti: undefined }],
    ['no scope', { typ: 'at+jwt' }, { scope: undefined }],
    ['a numeric scope', { typ: 'at+jwt' }, { scope: 1 }],
    ['no aud', { typ: 'at+jwt' }, { aud: undefined }],
  ])('a token signed with our key but with %s → undefined', async (_, header, overrides) => {
    const { keyring, key } = await setup()
    const payload: Record<string, unknown> = {
      iss: ISSUER,
      sub: 'svc',
      aud: 'api1',
      exp: NOW + 600,
      iat: NOW,
      jti: 'j',
      client_id: 'svc',
      scope: 'api1',
      ...overrides,
    }
    for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name]
    const token = await new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: key.kid, ...header }).sign(key.key)
    expect(await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW })).toBeUndefined()
  })

  it('an alg different from the key’s alg → undefined (no algorithm confusion)', async () => {
    const { keyring, input } = await setup()
    const rsa = await keyring.signingKey('RS256')
    const es = await keyring.signingKey('ES256')
    // Signed with the RSA key but claiming the EC key's kid.
    const { token } = await issueAccessToken(input, { ...rsa, kid: es.kid })
    expect(await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW })).toBeUndefined()
  })

  it.each(['', 'garbage', 'a.b', 'a.b.c', 'a.b.c.d.e', '...', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'])(
    'malformed %j → undefined',
    async (token) => {
      const { keyring } = await setup()
      expect(await verifyAccessToken(token, keyring, { issuer: ISSUER, now: NOW })).toBeUndefined()
    },
  )
})

describe('looksLikeJwt', () => {
  it.each([
    ['a.b.c', true],
    ['aA0-_.bB1-_.cC2-_', true],
    ['a.b', false],
    ['a.b.', false],
    ['a.b.c.d', false],
    ['a+b.c.d', false],
    ['', false],
  ])('%j → %s', (value, expected) => {
    expect(looksLikeJwt(value)).toBe(expected)
  })
})
