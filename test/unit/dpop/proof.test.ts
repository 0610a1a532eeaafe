import { SignJWT, base64url, exportJWK } from 'jose'
import { describe, expect, it } from 'vitest'
import { verifyDpopProof } from '../../../src/dpop/proof.ts'
import { accessTokenHash, jwkThumbprint } from '../../../src/dpop/thumbprint.ts'
import { sha256 } from '../../../src/crypto/opaque.ts'
import { NOW, TOKEN, URL_, eddsa, es256, input, invalid, other, proof, replays } from './fixtures.ts'

describe('verifyDpopProof: valid proofs', () => {
  it.each(['ES256', 'EdDSA'])('RFC 9449 §4.3: a valid %s proof → jkt, jwk, jti, iat', async (alg) => {
    const key = alg === 'ES256' ? es256 : eddsa
    const jwt = await proof({ signer: key, claims: { jti: 'unique-1' } })
    const result = await verifyDpopProof(input(jwt))
    expect(result).toEqual({ jkt: await jwkThumbprint(key.jwk), jwk: key.jwk, jti: 'unique-1', iat: NOW })
    expect(result.jkt).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  it('RFC 9449 §4.3 (1): the header may be given as a one-value list', async () => {
    await expect(verifyDpopProof(input([await proof()]))).resolves.toMatchObject({ iat: NOW })
  })

  it('RFC 9449 §11.1: the jti is spent under a bounded, hashed key until the proof is too old', async () => {
    const replay = replays()
    const result = await verifyDpopProof(input(await proof({ claims: { jti: 'x'.repeat(256) } }), { replay }))
    expect(replay.calls).toEqual([[`dpop:${await sha256(`${result.jkt}:${'x'.repeat(256)}`)}`, NOW + 301, NOW]])
  })

  it.each([
    ['a query', `${URL_}?a=1`],
    ['a fragment', `${URL_}#frag`],
    ['upper-case scheme and host and the default port', 'HTTPS://Auth.Example.TEST:443/token'],
    ['a percent-encoded unreserved character', 'https://auth.example.test/t%6Fken'],
  ])('RFC 9449 §4.3 (9): htu with %s matches', async (_, htu) => {
    await expect(verifyDpopProof(input(await proof({ claims: { htu } })))).resolves.toMatchObject({ iat: NOW })
  })

  it('RFC 9449 §4.3 (9): the request URL query is ignored too', async () => {
    const result = verifyDpopProof(input(await proof(), { url: new URL(`${URL_}?x=1#y`) }))
    await expect(result).resolves.toMatchObject({ iat: NOW })
  })

  it.each([NOW - 300, NOW + 5])('RFC 9449 §4.3 (11): iat %i is inside the window', async (iat) => {
    await expect(verifyDpopProof(input(await proof({ claims: { iat } })))).resolves.toMatchObject({ iat })
  })

  it('RFC 9449 §4.3 (12): ath equal to the access token hash → ok', async () => {
    const jwt = await proof({ claims: { htm: 'GET', ath: await accessTokenHash(TOKEN) } })
    const result = verifyDpopProof(input(jwt, { method: 'GET', accessToken: TOKEN }))
    await expect(result).resolves.toMatchObject({ iat: NOW })
  })
})

describe('verifyDpopProof: invalid_dpop_proof', () => {
  it('RFC 9449 §4.3 (1): two DPoP headers, as a list or joined by Headers#get', async () => {
    const [a, b] = [await proof(), await proof()]
    await invalid(verifyDpopProof(input([a, b])), 'more than one DPoP header was sent')
    const headers = new Headers([
      ['dpop', a],
      ['dpop', b],
    ])
    await invalid(verifyDpopProof(input(headers.get('dpop'))), 'more than one DPoP header was sent')
  })

  it.each([undefined, null, '', []])('RFC 9449 §4.3 (1): no proof (%j)', async (header) => {
    await invalid(verifyDpopProof(input(header)), 'DPoP proof is missing')
  })

  it.each(['not-a-jwt', 'a.b', 'a.b.c.d.e', `${'a'.repeat(9000)}.b.c`])(
    'RFC 9449 §4.3 (2): %s is not a compact JWS',
    async (header) => {
      await invalid(verifyDpopProof(input(header)), /not a compact JWS|header is malformed/)
    },
  )

  it.each(['JWT', 'at+jwt', 'application/dpop+jwt', undefined])('RFC 9449 §4.3 (4): typ %s', async (typ) => {
    await invalid(verifyDpopProof(input(await proof({ header: { typ } }))), 'DPoP proof "typ" must be "dpop+jwt"')
  })

  it('RFC 9449 §4.3 (5): alg none', async () => {
    const segment = (value: unknown) => base64url.encode(JSON.stringify(value))
    const header = segment({ alg: 'none', typ: 'dpop+jwt', jwk: es256.jwk })
    const payload = segment({ jti: 'n', htm: 'POST', htu: URL_, iat: NOW })
    await invalid(verifyDpopProof(input(`${header}.${payload}.c2ln`)), 'DPoP proof "alg" is not supported')
    await invalid(verifyDpopProof(input(`${header}.${payload}.`)), 'DPoP proof is not a compact JWS')
  })

  it('RFC 9449 §4.3 (5): HS256 with a symmetric jwk', async () => {
    const secret = crypto.getRandomValues(new Uint8Array(32))
    const header: Record<string, unknown> = { typ: 'dpop+jwt', jwk: { kty: 'oct', k: base64url.encode(secret) } }
    const jwt = await new SignJWT({ jti: 'h', htm: 'POST', htu: URL_, iat: NOW })
      .setProtectedHeader({ alg: 'HS256', ...header })
      .sign(secret)
    await invalid(verifyDpopProof(input(jwt)), 'DPoP proof "alg" is not supported')
  })

  it('RFC 9449 §4.3 (5): an alg outside the allow-list', async () => {
    await invalid(verifyDpopProof(input(await proof(), { algorithms: ['EdDSA'] })), 'DPoP proof "alg" is not supported')
  })

  it('RFC 9449 §4.3 (5): an allow-list with none or HMAC is a programming error', async () => {
    await expect(verifyDpopProof(input(await proof(), { algorithms: ['ES256', 'none'] }))).rejects.toThrow(TypeError)
    await expect(verifyDpopProof(input(await proof(), { algorithms: ['HS256'] }))).rejects.toThrow(TypeError)
  })

  it.each([
    ['missing', undefined],
    ['not an object', 'abc'],
    ['without kty', { crv: 'P-256' }],
  ])('RFC 9449 §4.3 (7): jwk %s', async (_, jwk) => {
    await invalid(
      verifyDpopProof(input(await proof({ header: { jwk } }))),
      'DPoP proof "jwk" header is missing or invalid',
    )
  })

  it('RFC 9449 §4.3 (7): a private key in jwk', async () => {
    const privateJwk = await exportJWK(es256.privateKey)
    await invalid(
      verifyDpopProof(input(await proof({ header: { jwk: privateJwk } }))),
      'DPoP proof "jwk" must be a public key',
    )
  })

  it('RFC 9449 §4.3 (6): signed with another key than jwk', async () => {
    const jwt = await proof({ signer: other, header: { jwk: es256.jwk } })
    await invalid(verifyDpopProof(input(jwt)), 'DPoP proof signature is invalid')
  })

  it('RFC 9449 §4.3 (6): a tampered payload', async () => {
    const [header, , signature] = (await proof()).split('.')
    const payload = base64url.encode(JSON.stringify({ jti: 't', htm: 'GET', htu: URL_, iat: NOW }))
    await invalid(verifyDpopProof(input(`${header}.${payload}.${signature}`)), 'DPoP proof signature is invalid')
  })

  it.each([
    ['jti missing', { jti: undefined }, 'DPoP proof "jti" is missing or invalid'],
    ['jti empty', { jti: '' }, 'DPoP proof "jti" is missing or invalid'],
    ['jti too long', { jti: 'x'.repeat(257) }, 'DPoP proof "jti" is missing or invalid'],
    ['htm missing', { htm: undefined }, 'DPoP proof "htm" is missing'],
    ['htu missing', { htu: undefined }, 'DPoP proof "htu" is missing'],
    ['iat missing', { iat: undefined }, 'DPoP proof "iat" is missing'],
    ['htm mismatch', { htm: 'GET' }, 'DPoP proof "htm" does not match the request method'],
    ['htm in lower case', { htm: 'post' }, 'DPoP proof "htm" does not match the request method'],
    ['htu of another path', { htu: 'https://auth.example.test/userinfo' }, /"htu" does not match/],
    ['htu of another host', { htu: 'https://evil.example.test/token' }, /"htu" does not match/],
    ['htu with another scheme', { htu: 'http://auth.example.test/token' }, /"htu" does not match/],
    ['htu with a trailing slash', { htu: `${URL_}/` }, /"htu" does not match/],
    ['htu not a URL', { htu: 'token' }, /"htu" does not match/],
    ['iat too old', { iat: NOW - 301 }, 'DPoP proof "iat" is too old'],
    ['iat too far in the future', { iat: NOW + 6 }, 'DPoP proof "iat" is in the future'],
    ['nonce not a string', { nonce: 42 }, 'DPoP proof "nonce" is invalid'],
  ])('RFC 9449 §4.3 (3, 8, 9, 11): %s', async (_, claims, description) => {
    await invalid(verifyDpopProof(input(await proof({ claims }))), description)
  })

  it('RFC 9449 §4.3 (11): the window is configurable', async () => {
    const jwt = await proof({ claims: { iat: NOW - 61 } })
    await invalid(verifyDpopProof(input(jwt, { maxAge: 60 })), 'DPoP proof "iat" is too old')
    const early = await proof({ claims: { iat: NOW + 30 } })
    await expect(verifyDpopProof(input(early, { clockTolerance: 30 }))).resolves.toMatchObject({ iat: NOW + 30 })
  })

  it('RFC 9449 §4.3 (12): ath missing or wrong when an access token is given', async () => {
    const missing = await proof()
    await invalid(verifyDpopProof(input(missing, { accessToken: TOKEN })), 'DPoP proof "ath" is missing')
    const wrong = await proof({ claims: { ath: await accessTokenHash(`${TOKEN}x`) } })
    await invalid(
      verifyDpopProof(input(wrong, { accessToken: TOKEN })),
      'DPoP proof "ath" does not match the access token',
    )
  })

  it('RFC 9449 §11.1: a replayed jti (the replay callback answers false)', async () => {
    const jwt = await proof()
    const replay = replays()
    await expect(verifyDpopProof(input(jwt, { replay }))).resolves.toMatchObject({ iat: NOW })
    await invalid(verifyDpopProof(input(jwt, { replay })), 'DPoP proof "jti" has already been used')
    await invalid(verifyDpopProof(input(jwt, { replay: async () => false })), 'DPoP proof "jti" has already been used')
  })

  it('the same jti under another key is not a replay', async () => {
    const replay = replays()
    await verifyDpopProof(input(await proof({ claims: { jti: 'same' } }), { replay }))
    await verifyDpopProof(input(await proof({ signer: eddsa, claims: { jti: 'same' } }), { replay }))
    expect(new Set(replay.calls.map(([key]) => key)).size).toBe(2)
  })
})
