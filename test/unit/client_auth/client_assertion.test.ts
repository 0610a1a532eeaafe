import { type CryptoKey, type JWK, SignJWT, base64url, decodeJwt, exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import {
  type AssertionClient,
  type AssertionFailureReason,
  type ClientAssertionInput,
  JWT_BEARER_ASSERTION_TYPE,
  assertionFailureReason,
  verifyClientAssertion,
} from '../../../src/client_auth/client_assertion.ts'
import { createClientKeySource } from '../../../src/clients/jwks.ts'
import { OAuthError } from '../../../src/errors.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { sha256 } from '../../../src/crypto/opaque.ts'

const NOW = 1_800_000_000
const ISSUER = 'https://auth.example.test'
const TOKEN_URL = `${ISSUER}/connect/token`
const INTROSPECTION_URL = `${ISSUER}/connect/introspect`
const JWKS_URI = 'https://client.example.test/jwks'

interface Pair {
  alg: string
  kid?: string
  privateKey: CryptoKey
  jwk: JWK
}

async function pair(alg: string, kid?: string): Promise<Pair> {
  const { privateKey, publicKey } = await generateKeyPair(alg)
  const jwk = { ...(await exportJWK(publicKey)), ...(kid ? { kid } : {}) }
  return { alg, privateKey, jwk, ...(kid ? { kid } : {}) }
}

const es = await pair('ES256', 'es')
const rs = await pair('RS256', 'rs')
const ed = await pair('EdDSA')
const es384 = await pair('ES384', 'es384')
/** Another key under an existing kid: its signatures must not verify. */
const impostor = await pair('ES256', 'es')
const rotated = await pair('ES256', 'es-next')

/** Signs an assertion for client c1; a claim or header member set to undefined is left out. */
async function sign(key: Pair, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) {
  const payload = { iss: 'c1', sub: 'c1', aud: ISSUER, jti: crypto.randomUUID(), iat: NOW, exp: NOW + 60, ...claims }
  const protectedHeader = { alg: key.alg, ...(key.kid ? { kid: key.kid } : {}), ...header }
  const defined = (o: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
  return new SignJWT(defined(payload))
    .setProtectedHeader(defined(protectedHeader) as { alg: string })
    .sign(key.privateKey)
}

/** A JWT with `alg: none` (no signature) or HS256 under a made-up secret. */
async function unsigned(alg: 'none' | 'HS256'): Promise<string> {
  const claims = { iss: 'c1', sub: 'c1', aud: ISSUER, jti: 'j', iat: NOW, exp: NOW + 60 }
  if (alg === 'HS256') {
    return new SignJWT(claims).setProtectedHeader({ alg }).sign(new TextEncoder().encode('x'.repeat(32)))
  }
  const part = (value: unknown) => base64url.encode(JSON.stringify(value))
  return `${part({ alg })}.${part(claims)}.`
}

function setup() {
  let time = NOW
  const store = createMemoryStore({ now: () => time })
  let served: JWK[] = [es.jwk]
  const fetches: string[] = []
  const keys = createClientKeySource({
    now: () => time,
    fetch: async (url) => {
      fetches.push(url)
      return Response.json({ keys: served })
    },
  })
  const clients = new Map<string, AssertionClient>([
    ['c1', { clientId: 'c1', tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [es.jwk, rs.jwk, ed.jwk] } }],
    ['basic', { clientId: 'basic', tokenEndpointAuthMethod: 'client_secret_basic', jwks: { keys: [es.jwk] } }],
    ['remote', { clientId: 'remote', tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: JWKS_URI }],
  ])
  const input = (
    clientAssertion: string | undefined,
    extra: Partial<ClientAssertionInput<AssertionClient>> = {},
  ): ClientAssertionInput<AssertionClient> => ({
    clientAssertionType: JWT_BEARER_ASSERTION_TYPE,
    clientAssertion,
    findClient: async (id) => clients.get(id),
    audiences: [ISSUER, TOKEN_URL, INTROSPECTION_URL],
    now: time,
    replay: (key, expiresAt, now) => store.replays.use(key, expiresAt, now),
    keysFor: keys.keysFor,
    ...extra,
  })
  const serve = (next: JWK[]) => {
    served = next
  }
  const advance = (seconds: number) => {
    time += seconds
  }
  return { input, fetches, serve, advance }
}

async function refusal(promise: Promise<unknown>): Promise<{ error: OAuthError; reason?: AssertionFailureReason }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(OAuthError)
  const error = err as OAuthError
  expect(error.code).toBe('invalid_client')
  expect(error.status).toBe(401)
  return { error, reason: assertionFailureReason(error) }
}

describe('verifyClientAssertion: valid assertions', () => {
  it.each([
    ['ES256', es],
    ['RS256', rs],
    ['EdDSA', ed],
  ])('%s, signed by a registered key', async (alg, key) => {
    const { input } = setup()
    const result = await verifyClientAssertion(input(await sign(key), { clientId: 'c1' }))
    expect(result).toMatchObject({ clientId: 'c1', method: 'private_key_jwt', alg, expiresAt: NOW + 60 })
    expect(result.client.clientId).toBe('c1')
    expect(result.kid).toBe(key.kid)
  })

  it.each([
    ['the issuer', ISSUER],
    ['the token endpoint (OpenID Connect Core §9)', TOKEN_URL],
    ['the endpoint called', INTROSPECTION_URL],
    ['an array containing the issuer', ['https://other.example', ISSUER]],
  ])('aud may be %s', async (_name, aud) => {
    const { input } = setup()
    await expect(verifyClientAssertion(input(await sign(es, { aud })))).resolves.toMatchObject({ clientId: 'c1' })
  })

  it('an assertion typed client-authentication+jwt (7523bis) is accepted with aud = issuer', async () => {
    const { input } = setup()
    const assertion = await sign(es, {}, { typ: 'client-authentication+jwt' })
    await expect(verifyClientAssertion(input(assertion))).resolves.toMatchObject({ clientId: 'c1' })
  })

  it('tolerates the clock skew for exp, iat and nbf', async () => {
    const { input } = setup()
    const early = await sign(es, { iat: NOW + 4, nbf: NOW + 4, exp: NOW + 64 })
    await expect(verifyClientAssertion(input(early))).resolves.toMatchObject({ clientId: 'c1' })
    const late = await sign(es, { iat: NOW - 60, exp: NOW - 4 })
    await expect(verifyClientAssertion(input(late))).resolves.toMatchObject({ clientId: 'c1' })
  })

  it('records the jti hashed, per client, until exp plus the skew', async () => {
    const { input } = setup()
    const calls: [string, number, number][] = []
    const assertion = await sign(es, { jti: 'the-jti' })
    const replay = async (...args: [string, number, number]) => {
      calls.push(args)
      return true
    }
    await verifyClientAssertion(input(assertion, { replay, clockSkew: 7 }))
    expect(calls).toEqual([[`jwt:c1:${await sha256('the-jti')}`, NOW + 67, NOW]])
  })

  it('a key rotated in at the jwks_uri: the unknown kid makes it fetch again, and the new key verifies', async () => {
    const { input, fetches, serve, advance } = setup()
    await verifyClientAssertion(input(await sign(es, { iss: 'remote', sub: 'remote' })))
    serve([es.jwk, rotated.jwk])
    advance(30)
    const assertion = await sign(rotated, { iss: 'remote', sub: 'remote' })
    await expect(verifyClientAssertion(input(assertion))).resolves.toMatchObject({ kid: 'es-next' })
    expect(fetches).toEqual([JWKS_URI, JWKS_URI])
  })
})

describe('verifyClientAssertion: refusals', () => {
  type Row = [string, () => Promise<string | undefined>, Partial<ClientAssertionInput<AssertionClient>>, string]
  const rows: Row[] = [
    [
      'another assertion type',
      () => sign(es),
      { clientAssertionType: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer' },
      'client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    ],
    [
      'no assertion type',
      () => sign(es),
      { clientAssertionType: undefined },
      'client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    ],
    ['no assertion', async () => undefined, {}, 'client_assertion is missing'],
    ['an assertion over 8 KiB', async () => `${'a'.repeat(8190)}.b.c`, {}, 'client_assertion is too long'],
    ['not a JWT', async () => 'not-a-jwt', {}, 'client_assertion is not a valid JWT'],
    ['alg none', () => unsigned('none'), {}, 'client_assertion alg is not allowed'],
    ['alg HS256 (client_secret_jwt)', () => unsigned('HS256'), {}, 'client_assertion alg is not allowed'],
    ['typ of another JWT', () => sign(es, {}, { typ: 'at+jwt' }), {}, 'client_assertion typ is not allowed'],
    ['iss ≠ sub', () => sign(es, { iss: 'basic' }), {}, 'client_assertion iss and sub must both be the client_id'],
    ['no sub', () => sign(es, { sub: undefined }), {}, 'client_assertion iss and sub must both be the client_id'],
    [
      'sub ≠ the form client_id',
      () => sign(es),
      { clientId: 'basic' },
      'client_id does not match the client assertion',
    ],
    [
      'aud of another server',
      () => sign(es, { aud: 'https://other.example' }),
      {},
      'client_assertion aud must be the issuer identifier',
    ],
    [
      'aud array without an accepted value',
      () => sign(es, { aud: ['https://a.example', 'https://b.example'] }),
      {},
      'client_assertion aud must be the issuer identifier',
    ],
    ['no aud', () => sign(es, { aud: undefined }), {}, 'client_assertion aud must be the issuer identifier'],
    [
      'typed 7523bis with aud = token endpoint',
      () => sign(es, { aud: TOKEN_URL }, { typ: 'client-authentication+jwt' }),
      {},
      'client_assertion aud must be the issuer identifier',
    ],
    [
      'typed 7523bis with aud = [issuer]',
      () => sign(es, { aud: [ISSUER] }, { typ: 'client-authentication+jwt' }),
      {},
      'client_assertion aud must be the issuer identifier',
    ],
    ['no exp', () => sign(es, { exp: undefined }), {}, 'client_assertion must have an exp'],
    ['exp not a number', () => sign(es, { exp: String(NOW + 60) }), {}, 'client_assertion exp is not a number'],
    ['an expired exp', () => sign(es, { iat: NOW - 60, exp: NOW - 5 }), {}, 'client_assertion has expired'],
    ['exp more than 300 s after iat', () => sign(es, { exp: NOW + 301 }), {}, 'client_assertion lifetime is too long'],
    [
      'exp more than 300 s away, no iat',
      () => sign(es, { iat: undefined, exp: NOW + 306 }),
      {},
      'client_assertion lifetime is too long',
    ],
    [
      'exp beyond a smaller maxLifetime',
      () => sign(es, { exp: NOW + 61 }),
      { maxLifetime: 60 },
      'client_assertion lifetime is too long',
    ],
    ['iat in the future', () => sign(es, { iat: NOW + 6, exp: NOW + 66 }), {}, 'client_assertion is not yet valid'],
    ['nbf in the future', () => sign(es, { nbf: NOW + 6 }), {}, 'client_assertion is not yet valid'],
    ['no jti', () => sign(es, { jti: undefined }), {}, 'client_assertion must have a jti'],
    ['an empty jti', () => sign(es, { jti: '' }), {}, 'client_assertion must have a jti'],
  ]
  it.each(rows)('%s', async (_name, build, extra, description) => {
    const { input } = setup()
    const { error, reason } = await refusal(verifyClientAssertion(input(await build(), extra)))
    expect(error.message).toBe(description)
    expect(error.challenge).toBe('Basic')
    expect(reason).toBe('invalid_assertion')
  })

  it.each([
    ['an unknown client', () => sign(es, { iss: 'nobody', sub: 'nobody' }), 'unknown_client'],
    [
      'a client not registered for private_key_jwt',
      () => sign(es, { iss: 'basic', sub: 'basic' }),
      'method_not_allowed',
    ],
    ['a signature by another key under a registered kid', () => sign(impostor), 'invalid_signature'],
    ['a kid the client does not have', () => sign(rotated), 'no_matching_key'],
    ['an alg none of the client keys fits', () => sign(es384), 'no_matching_key'],
  ])('%s: the one description that tells nothing about the client', async (_name, build, expected) => {
    const { input } = setup()
    const { error, reason } = await refusal(verifyClientAssertion(input(await build())))
    expect(error.message).toBe('client authentication failed')
    expect(reason).toBe(expected)
  })

  it('a replayed assertion (same jti) is refused after its first use', async () => {
    const { input } = setup()
    const assertion = await sign(es)
    await verifyClientAssertion(input(assertion))
    const { error, reason } = await refusal(verifyClientAssertion(input(assertion)))
    expect(error.message).toBe('client_assertion has already been used')
    expect(reason).toBe('replayed')
    // Another jti of the same client still works.
    await expect(verifyClientAssertion(input(await sign(es)))).resolves.toMatchObject({ clientId: 'c1' })
  })

  it('a forged assertion does not use up the jti of a genuine one', async () => {
    const { input } = setup()
    await refusal(verifyClientAssertion(input(await sign(impostor, { jti: 'shared' }))))
    await expect(verifyClientAssertion(input(await sign(es, { jti: 'shared' })))).resolves.toBeDefined()
  })

  it('an unknown kid at a jwks_uri: fetched again once, then refused; no refetch within 30 s', async () => {
    const { input, fetches, advance } = setup()
    const remote = { iss: 'remote', sub: 'remote' }
    await verifyClientAssertion(input(await sign(es, remote)))
    // Just fetched: an unknown kid does not make it fetch again at once.
    const { reason } = await refusal(verifyClientAssertion(input(await sign(rotated, remote))))
    expect(reason).toBe('no_matching_key')
    expect(fetches).toEqual([JWKS_URI])
    advance(30)
    await refusal(verifyClientAssertion(input(await sign(rotated, remote))))
    expect(fetches).toEqual([JWKS_URI, JWKS_URI])
    advance(29)
    await refusal(verifyClientAssertion(input(await sign(rotated, remote))))
    expect(fetches).toHaveLength(2)
    // The known key still verifies meanwhile, from the cache.
    await verifyClientAssertion(input(await sign(es, remote)))
    expect(fetches).toHaveLength(2)
  })

  it('an unreachable jwks_uri is the generic failure, with the fetch error as cause', async () => {
    const { input } = setup()
    const keysFor = async () => {
      throw new OAuthError('invalid_client', 'fetching the client jwks_uri failed with HTTP 500')
    }
    const { error, reason } = await refusal(verifyClientAssertion(input(await sign(es), { keysFor })))
    expect(error.message).toBe('client authentication failed')
    expect(reason).toBe('keys_unavailable')
    expect((error.cause as Error).message).toBe('fetching the client jwks_uri failed with HTTP 500')
  })

  it('audiences must name the issuer first (a programmer error)', async () => {
    const { input } = setup()
    await expect(verifyClientAssertion(input(await sign(es), { audiences: [] }))).rejects.toThrow(TypeError)
  })
})

describe('verifyClientAssertion: the caller narrows audiences and algorithms', () => {
  it('Ed25519 (RFC 9864, what oauth4webapi signs an Ed25519 key with) verifies with an EdDSA key', async () => {
    const { input } = setup()
    const assertion = await sign({ ...ed, alg: 'Ed25519' })
    await expect(verifyClientAssertion(input(assertion))).resolves.toMatchObject({ alg: 'Ed25519' })
  })

  it('strictAudience (FAPI 2.0 §5.3.2.1): only the issuer, as a string', async () => {
    const { input } = setup()
    const strict = { strictAudience: true, audiences: [ISSUER] }
    await expect(verifyClientAssertion(input(await sign(es), strict))).resolves.toMatchObject({ clientId: 'c1' })
    for (const aud of [[ISSUER], TOKEN_URL]) {
      const { reason } = await refusal(verifyClientAssertion(input(await sign(es, { aud }), strict)))
      expect(reason).toBe('invalid_assertion')
    }
  })

  it('algorithms: an alg outside them is refused before any client lookup', async () => {
    let looked = false
    const { input } = setup()
    const findClient = () => {
      looked = true
      return undefined
    }
    const { error } = await refusal(
      verifyClientAssertion(input(await sign(rs), { algorithms: ['ES256', 'PS256'], findClient })),
    )
    expect(error.message).toBe('client_assertion alg is not allowed')
    expect(looked).toBe(false)
  })
})

describe('verifyClientAssertion: oauth4webapi PrivateKeyJwt', () => {
  it('verifies the assertion oauth4webapi sends to the token endpoint', async () => {
    const key = await pair('ES256', 'o4w')
    let body: URLSearchParams | undefined
    const as: oauth.AuthorizationServer = { issuer: ISSUER, token_endpoint: TOKEN_URL }
    await oauth.clientCredentialsGrantRequest(
      as,
      { client_id: 'o4w-client' },
      oauth.PrivateKeyJwt({ key: key.privateKey, kid: 'o4w' }),
      new URLSearchParams({ scope: 'api' }),
      {
        [oauth.customFetch]: async (url: string, init?: RequestInit) => {
          body = new URLSearchParams(await new Request(url, init).text())
          return Response.json({})
        },
      },
    )
    if (!body) throw new Error('no request sent')
    expect(decodeJwt(body.get('client_assertion') ?? '').aud).toBe(ISSUER)
    const now = Math.floor(Date.now() / 1000)
    const store = createMemoryStore({ now: () => now })
    const client = { clientId: 'o4w-client', tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [key.jwk] } }
    const result = await verifyClientAssertion({
      clientAssertionType: body.get('client_assertion_type') ?? undefined,
      clientAssertion: body.get('client_assertion') ?? undefined,
      clientId: body.get('client_id') ?? undefined,
      findClient: (id) => (id === client.clientId ? client : undefined),
      audiences: [ISSUER, TOKEN_URL],
      now,
      replay: (k, expiresAt, at) => store.replays.use(k, expiresAt, at),
      keysFor: createClientKeySource({ now: () => now }).keysFor,
    })
    expect(result).toMatchObject({ clientId: 'o4w-client', alg: 'ES256', kid: 'o4w' })
  })
})
