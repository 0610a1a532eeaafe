/**
 * The resource-server helper against a real Gatehouse over HTTP: discovery, the JWKS, RFC 9068
 * checks, scopes and the RFC 6750 error responses.
 */
import { SignJWT, decodeJwt, decodeProtectedHeader, generateKeyPair } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ResourceServerOptions,
  type VerifyResult,
  IssuerUnavailableError,
  createResourceServer,
} from '../../src/resource_server/index.ts'
import { type Gatehouse, WRITER, startGatehouse } from './gatehouse.ts'

const JWKS = '/.well-known/jwks.json'
const DISCOVERY = '/.well-known/openid-configuration'

/**
 * RFC 9110 §11.6.1 challenges: `Bearer` alone or with comma-separated quoted params, then (RFC 9449
 * §7.2: both schemes accepted) `DPoP algs="…"`.
 */
const CHALLENGE =
  /^Bearer(?: [a-z_]+="[\x20\x21\x23-\x5b\x5d-\x7e]*"(?:, [a-z_]+="[\x20\x21\x23-\x5b\x5d-\x7e]*")*)?, DPoP algs="[A-Za-z0-9 ]+"$/

/** Asserts a refusal: status, error code, challenge (only on 401/403), JSON body, no-store, no token echoed. */
async function expectRefused(result: VerifyResult, status: number, error: string | undefined, token?: string) {
  expect(result.ok).toBe(false)
  if (result.ok) return
  const { response } = result
  expect(response.status).toBe(status)
  expect(result.error).toBe(error)
  expect(response.headers.get('cache-control')).toBe('no-store')
  expect(response.headers.get('content-type')).toBe('application/json')
  const challenge = response.headers.get('www-authenticate')
  if (status === 400) {
    expect(challenge).toBeNull()
  } else {
    expect(challenge).toMatch(CHALLENGE)
    if (error === undefined) expect(challenge).not.toContain('error=')
    else expect(challenge).toContain(`error="${error}", error_description="${result.description}"`)
  }
  const body = (await response.json()) as { error: string; error_description: string }
  expect(body.error).toBe(error ?? 'invalid_token')
  expect(body.error_description).toBe(result.description)
  if (token) {
    expect(result.description).not.toContain(token)
    expect(challenge ?? '').not.toContain(token.split('.')[2])
  }
  return { challenge, body }
}

function bearer(token: string, path = '/things'): Request {
  return new Request(`https://api.example.test${path}`, { headers: { authorization: `Bearer ${token}` } })
}

describe('resource server against a running Gatehouse', () => {
  let gh: Gatehouse
  let rs: ReturnType<typeof createResourceServer>
  const make = (options: Partial<ResourceServerOptions> = {}) =>
    createResourceServer({ issuer: gh.issuer, audience: 'api1', allowInsecureRequests: true, ...options })

  beforeAll(async () => {
    gh = await startGatehouse()
    rs = make({ requiredScopes: ['api1'] })
  })
  afterAll(async () => {
    await gh?.close()
  })

  it('CC-01 UI-09: a Gatehouse token passes with typed claims, whatever the case of the scheme', async () => {
    const token = await gh.token()
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const result = await rs.verify(
        new Request('https://api.example.test/', { headers: { authorization: `${scheme} ${token}` } }),
      )
      expect(result.ok).toBe(true)
      if (!result.ok) return
      expect(result.token).toBe(token)
      expect(result.scopes).toEqual(['api1'])
      const { claims } = result
      expect(claims.iss).toBe(gh.issuer)
      expect(claims.sub).toBe('service')
      expect(claims.client_id).toBe('service')
      expect(claims.aud).toBe('api1')
      expect(claims.scope).toBe('api1')
      expect(typeof claims.jti).toBe('string')
      expect(claims.exp - claims.iat).toBe(3600)
    }
    // a token given as a string
    expect((await rs.verify(token)).ok).toBe(true)
    // discovery once, JWKS once, for all of the above
    expect(gh.count(DISCOVERY)).toBe(1)
    expect(gh.count(JWKS)).toBe(1)
  })

  it('protect() runs the handler only with a good token', async () => {
    const handler = rs.protect((_request, auth) => Response.json({ sub: auth.claims.sub, scopes: auth.scopes }))
    const ok = await handler(bearer(await gh.token()))
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual({ sub: 'service', scopes: ['api1'] })
    const refused = await handler(new Request('https://api.example.test/'))
    expect(refused.status).toBe(401)
  })

  it('UI-06 X-04 RFC 9449 §7.2: no token, or another scheme → 401 `Bearer realm="api1", DPoP algs` without an error attribute', async () => {
    for (const request of [
      new Request('https://api.example.test/'),
      new Request('https://api.example.test/', { headers: { authorization: 'Basic c2VydmljZTpzZWNyZXQ=' } }),
    ]) {
      const { challenge } = (await expectRefused(await rs.verify(request), 401, undefined)) ?? {}
      expect(challenge).toBe('Bearer realm="api1", DPoP algs="ES256 EdDSA Ed25519 RS256 PS256 ES384"')
    }
    await expectRefused(await rs.verify(''), 401, undefined)
  })

  it('UI-07: a token in the URL, in two places, or a malformed header → 400 invalid_request', async () => {
    const token = await gh.token()
    await expectRefused(
      await rs.verify(new Request(`https://api.example.test/?access_token=${token}`)),
      400,
      'invalid_request',
      token,
    )
    await expectRefused(await rs.verify(bearer(token, `/?access_token=${token}`)), 400, 'invalid_request', token)
    for (const header of [
      'Bearer',
      'Bearer ',
      `Bearer ${token} extra`,
      `Bearer ${token}, Bearer ${token}`,
      `Bearer tok"en`,
    ]) {
      const request = new Request('https://api.example.test/', { headers: { authorization: header } })
      await expectRefused(await rs.verify(request), 400, 'invalid_request', token)
    }
  })

  it('UI-06: a token for another audience or from another issuer → 401 invalid_token', async () => {
    const token = await gh.token()
    const otherApi = make({ audience: 'api2' })
    const refused = await expectRefused(await otherApi.verify(bearer(token)), 401, 'invalid_token', token)
    expect(refused?.challenge).toContain('realm="api2"')
    // same keys, another expected issuer (the JWKS given directly)
    const otherIssuer = make({ issuer: `${gh.issuer}/tenant-b`, jwksUri: `${gh.issuer}${JWKS}` })
    const result = await otherIssuer.verify(bearer(token))
    await expectRefused(result, 401, 'invalid_token', token)
    expect(result.ok || result.description).toBe('the access token was issued by another issuer')
  }, 10_000)

  it('UI-06: an expired token → 401 invalid_token, after the clock tolerance', async () => {
    const token = await gh.token()
    const { exp } = decodeJwt(token) as { exp: number }
    expect((await make({ now: () => exp + 4, clockTolerance: 5 }).verify(bearer(token))).ok).toBe(true)
    const late = await make({ now: () => exp + 6, clockTolerance: 5 }).verify(bearer(token))
    await expectRefused(late, 401, 'invalid_token', token)
    expect(late.ok || late.description).toBe('the access token has expired')
    const strict = await make({ now: () => exp, clockTolerance: 0 }).verify(bearer(token))
    expect(strict.ok).toBe(false)
  })

  it('UI-06: a tampered signature or payload → 401 invalid_token', async () => {
    const token = await gh.token()
    const [header, payload, signature] = token.split('.') as [string, string, string]
    const middle = Math.floor(signature.length / 2)
    const flipped = signature[middle] === 'A' ? 'B' : 'A'
    const badSignature = `${header}.${payload}.${signature.slice(0, middle)}${flipped}${signature.slice(middle + 1)}`
    const result = await rs.verify(bearer(badSignature))
    await expectRefused(result, 401, 'invalid_token', badSignature)
    expect(result.ok || result.description).toBe('the access token signature is invalid')
    const claims = { ...decodeJwt(token), scope: 'api1 api1.write' }
    const badPayload = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`
    await expectRefused(await rs.verify(bearer(badPayload)), 401, 'invalid_token', badPayload)
    await expectRefused(await rs.verify(bearer('not-a-jwt')), 401, 'invalid_token')
  })

  it('UI-06: a token signed by an unknown key → 401; the JWKS is not refetched within the cooldown', async () => {
    const fresh = make()
    expect((await fresh.verify(bearer(await gh.token()))).ok).toBe(true)
    const jwksBefore = gh.count(JWKS)
    const { privateKey } = await generateKeyPair('ES256')
    const claims = { ...decodeJwt(await gh.token()) }
    for (const kid of ['foreign-1', 'foreign-2', 'foreign-3']) {
      const foreign = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .sign(privateKey)
      const result = await fresh.verify(bearer(foreign))
      await expectRefused(result, 401, 'invalid_token', foreign)
      expect(result.ok || result.description).toBe('the access token is signed by an unknown key')
    }
    expect(gh.count(JWKS)).toBe(jwksBefore)
  })

  it('UI-06: a trusted signature on a token that is not an RFC 9068 access token → 401', async () => {
    const now = gh.clock.now()
    const good = {
      iss: gh.issuer,
      sub: 'service',
      aud: 'api1',
      exp: now + 600,
      iat: now,
      jti: 'j1',
      client_id: 'service',
      scope: 'api1',
    }
    // the forged token with the right header and claims passes: the failures below are the header/claims
    expect((await rs.verify(bearer(await gh.forge(good)))).ok).toBe(true)
    expect((await rs.verify(bearer(await gh.forge(good, { typ: 'application/at+jwt' })))).ok).toBe(true)
    const cases: Array<[string, Promise<string>, string]> = [
      [
        'typ JWT (an ID token)',
        gh.forge(good, { typ: 'JWT' }),
        'the token is not a JWT access token (typ at+jwt, RFC 9068)',
      ],
      ['no client_id', gh.forge({ ...good, client_id: undefined }), 'the access token lacks a required claim'],
      ['numeric sub', gh.forge({ ...good, sub: 42 as unknown as string }), 'the access token lacks a required claim'],
      ['no scope', gh.forge({ ...good, scope: undefined }), 'the access token lacks a required claim'],
      ['issued in the future', gh.forge({ ...good, iat: now + 600 }), 'the access token was issued in the future'],
      ['not valid yet', gh.forge({ ...good, nbf: now + 600 }), 'the access token is not valid yet'],
    ]
    for (const [what, pending, description] of cases) {
      const token = await pending
      const result = await rs.verify(bearer(token))
      await expectRefused(result, 401, 'invalid_token', token)
      expect(result.ok || result.description, what).toBe(description)
    }
    // alg allow-list: Gatehouse signs access tokens with ES256
    const rsaOnly = make({ algorithms: ['RS256'] })
    const result = await rsaOnly.verify(bearer(await gh.token()))
    await expectRefused(result, 401, 'invalid_token')
    expect(result.ok || result.description).toBe('the access token is signed with an algorithm that is not allowed')
  })

  it('UI-07: a token without a required scope → 403 insufficient_scope naming the scopes', async () => {
    const token = await gh.token()
    const result = await rs.verify(bearer(token), { scopes: ['api1.write'] })
    const refused = await expectRefused(result, 403, 'insufficient_scope', token)
    expect(refused?.challenge).toContain('scope="api1 api1.write"')
    expect(result.ok || result.description).toBe('the access token lacks the scope api1.write')
    const writer = await gh.token(WRITER, 'api1 api1.write')
    const ok = await rs.verify(bearer(writer), { scopes: ['api1.write'] })
    expect(ok.ok && ok.scopes).toEqual(['api1', 'api1.write'])
  })

  it('rejects (IssuerUnavailableError) when the issuer cannot be discovered, and tries again later', async () => {
    const token = await gh.token()
    const wrongIssuer = createResourceServer({ issuer: `${gh.issuer}/`, audience: 'api1', allowInsecureRequests: true })
    await expect(wrongIssuer.verify(bearer(token))).rejects.toBeInstanceOf(IssuerUnavailableError)
    const flaky = make()
    gh.failNext(DISCOVERY, () => new Response('down', { status: 503 }))
    await expect(flaky.verify(bearer(token))).rejects.toThrow(/metadata could not be fetched/)
    expect((await flaky.verify(bearer(token))).ok).toBe(true)
    expect(() => createResourceServer({ issuer: gh.issuer, audience: 'api1' })).toThrow(/https/)
    expect(() => createResourceServer({ issuer: 'https://id.example.test' } as never)).toThrow(/audience/)
  })
})

describe('JWKS-06 key rotation', () => {
  it('a token signed by the new key verifies: the JWKS is fetched again for its kid', async () => {
    const gh = await startGatehouse({ keyPublishAhead: 0 })
    try {
      const rs = createResourceServer({
        issuer: gh.issuer,
        audience: 'api1',
        allowInsecureRequests: true,
        jwksCooldown: 0,
      })
      const before = await gh.token()
      expect((await rs.verify(bearer(before))).ok).toBe(true)
      expect(gh.count(JWKS)).toBe(1)
      await gh.service.keys.rotate()
      const after = await gh.token()
      expect(decodeProtectedHeader(after).kid).not.toBe(decodeProtectedHeader(before).kid)
      const result = await rs.verify(bearer(after))
      expect(result.ok).toBe(true)
      expect(gh.count(JWKS)).toBe(2)
      // the retired key stays published: tokens it signed still verify, from the cache
      expect((await rs.verify(bearer(before))).ok).toBe(true)
      expect(gh.count(JWKS)).toBe(2)
    } finally {
      await gh.close()
    }
  })
})

describe('protect() when the issuer cannot be reached', () => {
  it('answers 503 temporarily_unavailable with Retry-After, never a 500', async () => {
    const rs = createResourceServer({
      issuer: 'http://127.0.0.1:9',
      audience: 'api1',
      allowInsecureRequests: true,
      timeout: 1,
    })
    const { privateKey } = await generateKeyPair('ES256')
    const token = await new SignJWT({ client_id: 'c', scope: 'api1' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' })
      .setIssuer('http://127.0.0.1:9')
      .setAudience('api1')
      .setSubject('c')
      .setJti('j')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey)
    const handler = rs.protect(() => new Response('secret data'))
    const response = await handler(
      new Request('http://api.test/data', { headers: { authorization: `Bearer ${token}` } }),
    )
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' })
  })
})
