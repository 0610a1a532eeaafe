/**
 * The pieces around `verifyDpopProof`: RFC 7638 thumbprints (through the service's synchronous
 * SHA-256 too), the proof key cache, the proof algorithms per profile, key bindings of codes and
 * refresh tokens, and the `WWW-Authenticate: DPoP` challenge.
 */
import { type JsonWebKey, createHash, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto'
import { type JWK, calculateJwkThumbprint } from 'jose'
import { describe, expect, it } from 'vitest'
import type { DpopVerifier } from '../../../src/crypto/index.ts'
import { verifyDpopProof } from '../../../src/dpop/proof.ts'
import { checkKeyBinding, dpopAlgorithms } from '../../../src/dpop/request.ts'
import { readAuthorization } from '../../../src/dpop/resource.ts'
import { jwkThumbprint, thumbprintInput } from '../../../src/dpop/thumbprint.ts'
import { OAuthError, challengeHeader } from '../../../src/errors.ts'
import { NOW, URL_, eddsa, es256, input, invalid, other, proof } from './fixtures.ts'

const nodeSha256 = (value: string) => createHash('sha256').update(value).digest('base64url')
const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
let counter = 0
const claims = () => ({ jti: `hand-${++counter}`, htm: 'POST', htu: URL_, iat: NOW })

/** A compact JWS built by hand (jose refuses to make these): `signer` signs the ASCII input. */
async function handSigned(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  signer: (data: Uint8Array<ArrayBuffer>) => Promise<ArrayBuffer | Uint8Array>,
): Promise<string> {
  const input = `${segment(header)}.${segment(payload)}`
  const signature = await signer(new TextEncoder().encode(input))
  return `${input}.${Buffer.from(new Uint8Array(signature)).toString('base64url')}`
}

describe('RFC 7638 thumbprints', () => {
  it('RFC 7638 §3.1: the example RSA key → NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs', async () => {
    const jwk: JWK = {
      kty: 'RSA',
      n:
        '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMs' +
        'tn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbO' +
        'pbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
    }
    expect(await jwkThumbprint(jwk)).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs')
    expect(await jwkThumbprint(jwk, nodeSha256)).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs')
  })

  it.each([
    ['EC', es256.jwk],
    ['OKP', eddsa.jwk],
  ])('RFC 7638 §3.2: a %s key hashes its required members only, as jose computes it', async (_, jwk) => {
    const expected = await calculateJwkThumbprint(jwk, 'sha256')
    expect(await jwkThumbprint({ ...jwk, alg: 'x', kid: 'y', use: 'sig' })).toBe(expected)
    expect(await jwkThumbprint(jwk, nodeSha256)).toBe(expected)
    expect(thumbprintInput(jwk)).not.toMatch(/\s/)
  })

  it.each([
    [{ kty: 'oct', k: 'abc' }, /"kty"/],
    [{ kty: 'EC', crv: 'P-256', x: 'a' }, /"y"/],
    [{ kty: 'OKP', crv: 'Ed25519', x: 1 }, /"x"/],
  ])('RFC 7638 §3.2: an unusable key %j is a TypeError', (jwk, message) => {
    expect(() => thumbprintInput(jwk as JWK)).toThrow(message)
  })
})

describe('the proof key cache', () => {
  it('a second proof under the same header reuses the imported key (same jwk object)', async () => {
    const first = await verifyDpopProof(input(await proof()))
    const second = await verifyDpopProof(input(await proof()))
    expect(second.jwk).toBe(first.jwk)
    expect(second.jkt).toBe(first.jkt)
  })

  it('RFC 9449 §4.3 (5): the alg allow-list is checked on every use of a known header', async () => {
    await verifyDpopProof(input(await proof()))
    await invalid(verifyDpopProof(input(await proof(), { algorithms: ['EdDSA'] })), 'DPoP proof "alg" is not supported')
  })

  it('the service SHA-256 gives the same jkt and replay key as WebCrypto', async () => {
    const keys: string[] = []
    const replay = async (key: string) => {
      keys.push(key)
      return true
    }
    const jwt = await proof({ signer: eddsa })
    const a = await verifyDpopProof(input(jwt, { replay }))
    const b = await verifyDpopProof(input(jwt, { replay, sha256: nodeSha256 }))
    expect(b.jkt).toBe(a.jkt)
    expect(keys[1]).toBe(keys[0])
  })

  it('RFC 7515 §4.1.11: a crit header is refused', async () => {
    const jwt = await handSigned(
      { alg: 'ES256', typ: 'dpop+jwt', jwk: es256.jwk, crit: ['x'], x: 1 },
      claims(),
      (data) => crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, es256.privateKey, data),
    )
    await invalid(verifyDpopProof(input(jwt)), 'DPoP proof "crit" header is not supported')
  })

  it('RFC 7518 §3.3: an RSA key under 2048 bits is refused', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 })
    const jwk = publicKey.export({ format: 'jwk' })
    const jwt = await handSigned({ alg: 'RS256', typ: 'dpop+jwt', jwk }, claims(), async (data) =>
      sign('sha256', data, privateKey),
    )
    await invalid(verifyDpopProof(input(jwt)), 'DPoP proof "jwk" header is missing or invalid')
  })

  it('RFC 9449 §4.3 (2): a signed payload that is not a JSON object', async () => {
    const header = { alg: 'ES256', typ: 'dpop+jwt', jwk: es256.jwk }
    const signer = (data: Uint8Array<ArrayBuffer>) =>
      crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, es256.privateKey, data)
    const array = await handSigned(header, [1] as unknown as Record<string, unknown>, signer)
    await invalid(verifyDpopProof(input(array)), 'DPoP proof payload is not a JSON object')
  })
})

describe('a runtime signature check (DpopVerifier)', () => {
  /** ES256 through node:crypto, synchronously; records the keys it was asked for. */
  function nodeEs256(): DpopVerifier & { keys: string[]; checks: number } {
    const made = Object.assign(
      ({ alg, jwk }: { alg: string; jwk: JWK }) => {
        made.keys.push(String(jwk.x))
        if (alg !== 'ES256') return undefined
        const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' })
        return (data: Uint8Array, signature: Uint8Array) => {
          made.checks++
          return verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature)
        }
      },
      { keys: [] as string[], checks: 0 },
    )
    return made
  }

  it('is made once per key and used for every proof of that key', async () => {
    const verifier = nodeEs256()
    for (let i = 0; i < 3; i++) await verifyDpopProof(input(await proof(), { verifier }))
    expect(verifier.keys).toEqual([String(es256.jwk.x)])
    expect(verifier.checks).toBe(3)
  })

  it('RFC 9449 §4.3 (6): its false is an invalid signature', async () => {
    const jwt = await proof({ signer: other, header: { jwk: es256.jwk } })
    await invalid(verifyDpopProof(input(jwt, { verifier: nodeEs256() })), 'DPoP proof signature is invalid')
  })

  it('an algorithm it declines is verified by WebCrypto', async () => {
    const verifier = nodeEs256()
    await expect(verifyDpopProof(input(await proof({ signer: eddsa }), { verifier }))).resolves.toMatchObject({
      iat: NOW,
    })
    expect(verifier.checks).toBe(0)
  })
})

describe('htu', () => {
  it('RFC 9449 §4.3 (9): the configured URL matches verbatim; an empty htu never matches', async () => {
    await expect(verifyDpopProof(input(await proof()))).resolves.toMatchObject({ iat: NOW })
    for (const url of [URL_, `${URL_}?x=1`]) {
      await invalid(verifyDpopProof(input(await proof({ claims: { htu: '' } }), { url })), /"htu" does not match/)
    }
  })
})

describe('DPoP at the service', () => {
  it('FAPI 2.0 §5.4.1: under fapi2-security only PS256, ES256 and EdDSA (Ed25519)', () => {
    expect(dpopAlgorithms({ profile: 'fapi2-security' })).toEqual(['PS256', 'ES256', 'EdDSA', 'Ed25519'])
    expect(dpopAlgorithms({})).toEqual(['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256', 'ES384'])
  })

  it('RFC 9449 §5 §10: a bound grant needs a proof with its key, else invalid_grant', () => {
    const proofOf = (jkt: string) => ({ jkt, jwk: {}, jti: 'j', iat: NOW })
    expect(() => checkKeyBinding(undefined, undefined, 'code')).not.toThrow()
    expect(() => checkKeyBinding(undefined, proofOf('a'), 'code')).not.toThrow()
    expect(() => checkKeyBinding('a', proofOf('a'), 'code')).not.toThrow()
    expect(() => checkKeyBinding('a', undefined, 'code')).toThrow(
      expect.objectContaining({ code: 'invalid_grant', message: 'the code is bound to a DPoP key: send a DPoP proof' }),
    )
    expect(() => checkKeyBinding('a', proofOf('b'), 'refresh token')).toThrow(
      expect.objectContaining({ code: 'invalid_grant', status: 400 }),
    )
  })

  it('RFC 6750 §2.1 RFC 9449 §7.1: Authorization schemes Bearer and DPoP, case-insensitive', () => {
    expect(readAuthorization(null)).toBeNull()
    expect(readAuthorization('  ')).toBeNull()
    expect(readAuthorization('Bearer abc')).toEqual({ token: 'abc', scheme: 'Bearer' })
    expect(readAuthorization('dpop a.b-c_~+/=')).toEqual({ token: 'a.b-c_~+/=', scheme: 'DPoP' })
    expect(readAuthorization('DPOP  xyz ')).toEqual({ token: 'xyz', scheme: 'DPoP' })
    expect(readAuthorization('Basic abc')).toBeUndefined()
    expect(readAuthorization('DPoP a b')).toBeUndefined()
  })

  it('RFC 9449 §7.1: WWW-Authenticate DPoP with error, error_description and algs', () => {
    const err = new OAuthError('invalid_token', 'invalid DPoP key binding', {
      challenge: 'DPoP',
      challengeParams: { algs: 'ES256 PS256' },
    })
    expect(challengeHeader(err, 'https://as')).toBe(
      'DPoP realm="https://as", error="invalid_token", error_description="invalid DPoP key binding", algs="ES256 PS256"',
    )
    const bare = new OAuthError('invalid_token', 'x', {
      challenge: 'DPoP',
      challengeError: false,
      challengeParams: { algs: 'ES256' },
    })
    expect(challengeHeader(bare, 'https://as')).toBe('DPoP realm="https://as", algs="ES256"')
  })
})
