/**
 * The injected signer (`signer` option, `nodeSigner` in adapters/node.ts, batched per turn of the
 * event loop by default): tokens it signs verify against the service's JWKS for every algorithm, carry exactly what the jose path
 * writes, and a signer that declines (undefined) leaves signing to jose.
 */
import { createPrivateKey, sign as nodeSign } from 'node:crypto'
import { base64url, createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { describe, expect, it, vi } from 'vitest'
import { nodeSigner } from '../../../adapters/node.ts'
import type { SigningAlgorithm as SigningAlg } from '../../../src/crypto/index.ts'
import { createTokenService } from '../../../src/index.ts'
import { createKeyring } from '../../../src/keys/keyring.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { clientTokenJson, issueAccessToken } from '../../../src/tokens/access_token.ts'
import { type JwsSigner, base64urlText, headerSegment, signCompact, signJwt } from '../../../src/crypto/compact_jws.ts'
import { issueIdToken } from '../../../src/tokens/id_token.ts'

const NOW = 1_800_000_000
const ISSUER = 'https://auth.example.test'
const ALGS: SigningAlg[] = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA']

/** One store for the file (RSA generation is slow): every keyring on it converges on the same keys. */
const store = createMemoryStore({ now: () => NOW })

/** The node signer, counting the signatures it makes and the keys it was asked for. */
function counting(inner: JwsSigner = nodeSigner()) {
  const counts = { keys: 0, signatures: 0 }
  const signer: JwsSigner = (key) => {
    counts.keys++
    const sign = inner(key)
    if (!sign) return undefined
    return (input) => {
      counts.signatures++
      return sign(input)
    }
  }
  return { signer, counts }
}

function keyrings(signer: JwsSigner) {
  const options = { store, now: () => NOW, algorithms: ALGS }
  return { jose: createKeyring(options), injected: createKeyring({ ...options, signer }) }
}

const accessInput = {
  issuer: ISSUER,
  sub: 'svc',
  audience: ['api1', 'api2'],
  clientId: 'svc',
  scope: 'api1 api2',
  now: NOW,
  ttl: 600,
  familyId: 'family-1',
  authTime: NOW - 60,
  sid: 'sid-1',
}

const idInput = {
  issuer: ISSUER,
  sub: 'user-1',
  clientId: 'web',
  now: NOW,
  ttl: 300,
  authTime: NOW - 60,
  nonce: 'n-0S6_WzA2Mj',
  sid: 'sid-1',
  amr: ['pwd'],
  accessToken: 'an-access-token',
  claims: { email: 'alice@example.com', email_verified: true, address: { country: 'FR' } },
}

/** The first two segments (header and payload), as they are signed. */
const signed = (token: string) => token.split('.').slice(0, 2).join('.')

describe('injected node signer', () => {
  const { signer, counts } = counting()
  const rings = keyrings(signer)

  it.each(ALGS)('%s: access and ID tokens verify with jose against the JWKS', async (alg) => {
    const key = await rings.injected.signingKey(alg)
    expect(key.sign).toBeTypeOf('function')
    const before = counts.signatures
    const { token, claims } = await issueAccessToken(accessInput, key)
    const idToken = await issueIdToken(idInput, key)
    expect(counts.signatures).toBe(before + 2)

    const jwks = createLocalJWKSet((await rings.injected.jwks()) as never)
    const at = await jwtVerify(token, jwks, {
      issuer: ISSUER,
      audience: 'api1',
      typ: 'at+jwt',
      algorithms: [alg],
      currentDate: new Date(NOW * 1000),
    })
    expect(at.protectedHeader).toEqual({ alg, kid: key.kid, typ: 'at+jwt' })
    expect(at.payload).toEqual(claims)
    const id = await jwtVerify(idToken, jwks, {
      issuer: ISSUER,
      audience: 'web',
      typ: 'JWT',
      algorithms: [alg],
      currentDate: new Date(NOW * 1000),
    })
    expect(id.payload.nonce).toBe(idInput.nonce)
  })

  it.each(ALGS)('%s: header and payload are byte for byte what the jose path signs', async (alg) => {
    const injected = await rings.injected.signingKey(alg)
    const jose = await rings.jose.signingKey(alg)
    expect(jose.sign).toBeUndefined()
    expect(jose.kid).toBe(injected.kid)

    // ID tokens have no random member: the same inputs give the same signed bytes.
    const viaSigner = await issueIdToken(idInput, injected)
    const viaJose = await issueIdToken(idInput, jose)
    expect(signed(viaSigner)).toBe(signed(viaJose))
    // RSASSA-PKCS1-v1_5 and Ed25519 are deterministic: the whole token is the same. ECDSA and PSS
    // signatures are randomised: a different token proves the two paths really differ.
    if (alg === 'RS256' || alg === 'EdDSA') expect(viaSigner).toBe(viaJose)
    else expect(viaSigner).not.toBe(viaJose)

    // Access tokens differ only by their random jti.
    const a = await issueAccessToken(accessInput, injected)
    const b = await issueAccessToken(accessInput, jose)
    expect(decodeProtectedHeader(a.token)).toEqual(decodeProtectedHeader(b.token))
    expect(decodeProtectedHeader(a.token)).toEqual({ alg, kid: injected.kid, typ: 'at+jwt' })
    expect({ ...decodeJwt(a.token), jti: 'x' }).toEqual({ ...decodeJwt(b.token), jti: 'x' })
    expect(Object.keys(decodeJwt(a.token))).toEqual(Object.keys(decodeJwt(b.token)))

    // And the same claims through signJwt directly.
    const payload = { ...a.claims }
    expect(signed(await signJwt(payload, 'at+jwt', injected))).toBe(signed(await signJwt(payload, 'at+jwt', jose)))
  })

  it('payloads with non-ASCII text, and larger than the reused encoding buffer, sign and verify alike', async () => {
    const injected = await rings.injected.signingKey('ES256')
    const jose = await rings.jose.signingKey('ES256')
    const jwks = createLocalJWKSet((await rings.injected.jwks()) as never)
    for (const name of ['Zoë Ångström ✓ 名前', 'x'.repeat(20_000), `${'é'.repeat(9000)}✓`]) {
      const payload = { iss: ISSUER, sub: 'user-1', name }
      const token = await signJwt(payload, 'JWT', injected)
      expect(signed(token)).toBe(signed(await signJwt(payload, 'JWT', jose)))
      const { payload: verified } = await jwtVerify(token, jwks, { issuer: ISSUER, algorithms: ['ES256'] })
      expect(verified.name).toBe(name)
    }
    // A short token right after a long one: nothing of the previous bytes leaks into it.
    const short = await signJwt({ iss: ISSUER, sub: 's' }, 'JWT', injected)
    expect((await jwtVerify(short, jwks, { issuer: ISSUER, algorithms: ['ES256'] })).payload).toEqual({
      iss: ISSUER,
      sub: 's',
    })
  })

  it('asks the factory once per key, whatever the number of tokens', async () => {
    const { signer: once, counts: c } = counting()
    const ring = createKeyring({ store, now: () => NOW, algorithms: ALGS, signer: once })
    for (let i = 0; i < 5; i++) await issueAccessToken(accessInput, await ring.signingKey('ES256'))
    await ring.signingKey('RS256')
    // One probe signature per key (checked against its public key), then one per token.
    expect(c).toEqual({ keys: 2, signatures: 2 + 5 })
  })
})

describe('fallback to jose', () => {
  it('a signer returning undefined leaves the key to jose, and tokens still verify', async () => {
    const asked: string[] = []
    const ring = createKeyring({
      store,
      now: () => NOW,
      algorithms: ALGS,
      signer: ({ alg }) => {
        asked.push(alg)
        return undefined
      },
    })
    const key = await ring.signingKey('ES256')
    expect(key.sign).toBeUndefined()
    const { token } = await issueAccessToken(accessInput, key)
    await ring.signingKey('ES256')
    expect(asked).toEqual(['ES256'])
    const jwks = createLocalJWKSet((await ring.jwks()) as never)
    await expect(jwtVerify(token, jwks, { typ: 'at+jwt', currentDate: new Date(NOW * 1000) })).resolves.toBeTruthy()
  })

  it('per algorithm: the node signer declines an algorithm it does not know', () => {
    const sign = nodeSigner()({ alg: 'HS256', kid: 'k', privateJwk: { kty: 'oct', k: 'AAAA' } })
    expect(sign).toBeUndefined()
  })

  it('a signer whose signatures do not verify (DER-encoded ECDSA) fails loudly, not in clients', async () => {
    const der: JwsSigner = ({ privateJwk }) => {
      const key = createPrivateKey({ key: privateJwk as never, format: 'jwk' })
      return (input) => nodeSign('sha256', input, { key, dsaEncoding: 'der' })
    }
    const ring = createKeyring({ store, now: () => NOW, algorithms: ALGS, signer: der })
    await expect(ring.signingKey('ES256')).rejects.toThrow(/does not verify/)
  })

  it('signCompact joins base64url(header), base64url(payload) and base64url(signature)', () => {
    const token = signCompact(headerSegment({ alg: 'X', kid: 'k' }), { a: 1 }, (input) => {
      expect(new TextDecoder().decode(input)).toBe('eyJhbGciOiJYIiwia2lkIjoiayJ9.eyJhIjoxfQ')
      return new Uint8Array([0xfb, 0xff])
    })
    expect(token).toBe('eyJhbGciOiJYIiwia2lkIjoiayJ9.eyJhIjoxfQ.-_8')
  })
})

describe('nodeSigner batching', () => {
  const ES256_KEY = async () => {
    const ring = createKeyring({ store, now: () => NOW, algorithms: ALGS })
    const key = await ring.signingKey('ES256')
    const record = (await store.keys.list()).find((r) => r.kid === key.kid)
    if (!record) throw new Error('no ES256 record')
    const jwks = createLocalJWKSet(await ring.jwks())
    return { signerKey: { alg: 'ES256', kid: record.kid, privateJwk: record.privateJwk }, jwks }
  }
  const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

  it('signatures asked for in one turn are made together right after it, each over its own input', async () => {
    const { signerKey, jwks } = await ES256_KEY()
    const sign = nodeSigner()(signerKey)
    if (!sign) throw new Error('ES256 declined')
    const segment = headerSegment({ alg: 'ES256', kid: signerKey.kid, typ: 'at+jwt' })
    const settled: boolean[] = []
    const tokens = Array.from({ length: 20 }, (_, i) => {
      const token = signCompact(segment, { iss: ISSUER, i }, sign)
      expect(token).toBeInstanceOf(Promise) // nothing is signed during the caller's turn
      return Promise.resolve(token).then((value) => {
        settled[i] = true
        return value
      })
    })
    expect(settled).toEqual([])
    await nextTurn() // the batch ran before this later immediate
    expect(settled.filter(Boolean)).toHaveLength(20)
    for (const [i, token] of (await Promise.all(tokens)).entries()) {
      const { payload } = await jwtVerify(token, jwks, { issuer: ISSUER, typ: 'at+jwt' })
      expect(payload.i).toBe(i)
    }
  })

  it('copies its input: bytes reused by the caller after the call do not change the signature', async () => {
    const { signerKey, jwks } = await ES256_KEY()
    const sign = nodeSigner()(signerKey)
    if (!sign) throw new Error('ES256 declined')
    const input = new TextEncoder().encode(
      `${headerSegment({ alg: 'ES256', kid: signerKey.kid })}.${base64urlText('{"a":1}')}`,
    )
    const original = new TextDecoder().decode(input)
    const pending = sign(input)
    input.fill(0x41)
    const token = `${original}.${base64url.encode(await pending)}`
    await expect(jwtVerify(token, jwks)).resolves.toMatchObject({ payload: { a: 1 } })
  })

  it("batch: false signs synchronously in the caller's turn", async () => {
    const { signerKey, jwks } = await ES256_KEY()
    const sign = nodeSigner({ batch: false })(signerKey)
    if (!sign) throw new Error('ES256 declined')
    const token = signCompact(headerSegment({ alg: 'ES256', kid: signerKey.kid }), { b: 2 }, sign)
    expect(typeof token).toBe('string')
    await expect(jwtVerify(token as string, jwks)).resolves.toMatchObject({ payload: { b: 2 } })
  })
})

describe('signer option', () => {
  it('must be a function', () => {
    expect(() => createTokenService({ issuer: ISSUER, signer: 'node' as never })).toThrow(/signer: must be a function/)
    expect(() => createTokenService({ issuer: ISSUER, sha256: 'node' as never })).toThrow(/sha256: must be a function/)
    expect(() => createTokenService({ issuer: ISSUER, secretDigest: 1 as never })).toThrow(
      /secretDigest: must be a function/,
    )
  })
})

describe('base64urlText', () => {
  // Every length mod 3 (padding 0, 1, 2), characters whose base64 has + and /, and non-ASCII.
  it.each([
    '',
    'a',
    'ab',
    'abc',
    '{"iss":"https://auth.example.test","sub":"svc","scope":"api1"}',
    '\u00ff\u00fe?>~',
    '???>>>~~~',
    'zürich',
    'ünïcödé 日本 😀',
    '\u0000\u007f',
  ])('%j is what jose encodes from its UTF-8 bytes', (text) => {
    expect(base64urlText(text)).toBe(base64url.encode(new TextEncoder().encode(text)))
  })

  it('claims with non-ASCII values give the same token as jose', async () => {
    const input = signCompact(
      headerSegment({ alg: 'none' }),
      { sub: 'zoë', n: 'x'.repeat(5000) },
      () => new Uint8Array(1),
    )
    const [, payload] = String(input).split('.')
    expect(decodeJwt(`${input}`)).toEqual({ sub: 'zoë', n: 'x'.repeat(5000) })
    expect(payload).toBe(base64url.encode(JSON.stringify({ sub: 'zoë', n: 'x'.repeat(5000) })))
  })
})

describe('the JSON skeleton of a client token (#44 item 4)', () => {
  const syncKey = {
    alg: 'ES256' as const,
    kid: 'k1',
    key: {} as CryptoKey,
    sign: () => new Uint8Array(64).fill(7),
  }
  /** The payload segment of a token, decoded to its UTF-8 text. */
  const payloadText = (token: string) =>
    new TextDecoder().decode(base64url.decode((token.split('.')[1] as string) ?? ''))

  it.each([
    [ISSUER, 'svc', 'api1', 'api1 api2'],
    ['https://auth.example.test/tenant "a"', 'svc\\"x', 'https://api.example/ü', 'read:all'],
    ['https://issuer.example', 'zoë 日本 😀', 'aud\u0000\u001f', ''],
    ['https://issuer.example', '\ud800lone', 'a\u2028b', 'x'],
    ['https://i.example/"\\\u0001é', 'c', 'a', 'scope "quoted" \\ \u0007 zoë \udfff'],
  ])(
    'fills to exactly JSON.stringify of the claims: iss %j, client %j, aud %j, scope %j',
    (iss, clientId, aud, scope) => {
      const skeleton = clientTokenJson(iss, clientId, aud, scope)
      const input = { issuer: iss, sub: clientId, audience: [aud], clientId, scope, now: NOW, ttl: 600, client: true }
      issueAccessToken(input, syncKey, skeleton) // the key's header segment, encoded once
      const stringify = vi.spyOn(JSON, 'stringify')
      let issued: { token: string; claims: object }
      try {
        issued = issueAccessToken(input, syncKey, skeleton) as { token: string; claims: object }
        // The skeleton was used: the payload was not serialised again.
        expect(stringify).not.toHaveBeenCalled()
      } finally {
        stringify.mockRestore()
      }
      const { token, claims } = issued
      expect(payloadText(token)).toBe(JSON.stringify(claims))
      expect(decodeJwt(token)).toEqual(claims)
      expect(Object.keys(claims)).toEqual(['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id', 'scope', 'gty'])
    },
  )

  /** A client's own token as client_credentials asks for it. */
  const clientInput = {
    issuer: ISSUER,
    sub: 'svc',
    audience: ['api1'],
    clientId: 'svc',
    scope: 'api1',
    now: NOW,
    ttl: 600,
    client: true,
  }

  it('is used for the claims it was made for: the payload is not serialised again', () => {
    const skeleton = clientTokenJson(ISSUER, 'svc', 'api1', 'api1')
    const input = clientInput
    issueAccessToken(input, syncKey, skeleton) // the key's header segment, encoded once
    const stringify = vi.spyOn(JSON, 'stringify')
    try {
      const { token, claims } = issueAccessToken(input, syncKey, skeleton) as { token: string; claims: object }
      expect(stringify).not.toHaveBeenCalled()
      expect(payloadText(token)).toBe(JSON.stringify(claims))
    } finally {
      stringify.mockRestore()
    }
  })

  it.each([
    ['another scope', { scope: 'api2' }],
    ['another audience', { audience: ['api2'] }],
    ['two audiences', { audience: ['api1', 'api2'] }],
    ['another subject', { sub: 'other' }],
    ['another issuer', { issuer: 'https://other.example' }],
    ['a DPoP key', { jkt: 'thumbprint' }],
    ['a user token', { client: false, familyId: 'f1', authTime: NOW }],
    ['a lifetime that is not an integer', { ttl: 1.5 }],
    ['an endless lifetime (JSON writes null)', { ttl: Number.POSITIVE_INFINITY }],
    ['a lifetime that is not a number (JSON writes null)', { ttl: Number.NaN }],
    ['a time that is not a safe integer', { now: 2 ** 60 }],
  ])('claims it was not made for (%s) are serialised in full, and right', (_, change) => {
    const skeleton = clientTokenJson(ISSUER, 'svc', 'api1', 'api1')
    const input = { ...clientInput, ...change }
    const { token, claims } = issueAccessToken(input, syncKey, skeleton) as { token: string; claims: object }
    expect(payloadText(token)).toBe(JSON.stringify(claims))
  })
})
