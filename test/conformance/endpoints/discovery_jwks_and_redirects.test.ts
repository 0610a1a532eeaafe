/**
 * JWKS-01 … JWKS-05 and DISC-03: the key set as served, and no redirects on any machine-to-machine
 * endpoint: the advertised URLs answer directly; a trailing-slash variant is a 404, never a 3xx.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { ISSUER, basic, discover, form, makeService } from '../../helpers/service.ts'

const PRIVATE = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']

async function jwks(service: Awaited<ReturnType<typeof makeService>>['service']) {
  const as = await discover(service.fetch)
  const response = await service.fetch(new Request(as.jwks_uri as string))
  return { response, body: (await response.json()) as { keys: Array<Record<string, unknown>> } }
}

describe('JWKS', () => {
  it('JWKS-01: GET jwks_uri → 200 application/json {"keys":[objects]}', async () => {
    const { service } = await makeService()
    const { response, body } = await jwks(service)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/(json|jwk-set\+json)/)
    expect(Array.isArray(body.keys)).toBe(true)
    expect(body.keys.length).toBeGreaterThan(0)
    for (const key of body.keys) expect(typeof key === 'object' && key !== null && !Array.isArray(key)).toBe(true)
  })

  it('JWKS-02: public keys only, no symmetric keys', async () => {
    const { service } = await makeService()
    const { body } = await jwks(service)
    for (const key of body.keys) {
      for (const member of PRIVATE) expect(key, `${key.kid} ${member}`).not.toHaveProperty(member)
      expect(key.kty).not.toBe('oct')
    }
  })

  it('JWKS-03: every key has a kid, unique within the set', async () => {
    const { service } = await makeService()
    const { body } = await jwks(service)
    const kids = body.keys.map((k) => k.kid)
    for (const kid of kids) expect(kid).toEqual(expect.any(String))
    expect(new Set(kids).size).toBe(kids.length)
  })

  it('JWKS-04: use sig, key_ops absent or verify, EC curves match their alg, RSA ≥ 2048 bits', async () => {
    const { service } = await makeService()
    const { body } = await jwks(service)
    for (const key of body.keys) {
      expect(key.use ?? 'sig').toBe('sig')
      if (key.key_ops !== undefined) expect(key.key_ops).toContain('verify')
      if (key.alg === 'ES256') expect(key).toMatchObject({ kty: 'EC', crv: 'P-256' })
      if (key.alg === 'RS256') {
        expect(key.kty).toBe('RSA')
        expect(Buffer.from(key.n as string, 'base64url').length * 8).toBeGreaterThanOrEqual(2048)
      }
    }
  })

  it('JWKS-05: an RS256 key is always published', async () => {
    for (const accessTokenSigningAlg of ['ES256', 'PS256', 'EdDSA'] as const) {
      const { service } = await makeService({ accessTokenSigningAlg })
      const { body } = await jwks(service)
      expect(
        body.keys.some((k) => k.alg === 'RS256'),
        accessTokenSigningAlg,
      ).toBe(true)
      expect(
        body.keys.some((k) => k.alg === accessTokenSigningAlg),
        accessTokenSigningAlg,
      ).toBe(true)
    }
  })

  it('JWKS-01: oauth4webapi can select the access token key from the served set', async () => {
    const { service, clock } = await makeService()
    const as = await discover(service.fetch)
    const response = await service.fetch(
      form(
        as.token_endpoint as string,
        { grant_type: 'client_credentials' },
        { authorization: basic('service', 'service-secret') },
      ),
    )
    const { access_token } = (await response.json()) as { access_token: string }
    const request = new Request('https://api1.example.test/', { headers: { authorization: `Bearer ${access_token}` } })
    await expect(
      oauth.validateJwtAccessToken(as, request, 'api1', {
        [oauth.customFetch]: (url: string, init?: RequestInit) => service.fetch(new Request(url, init)),
        [oauth.clockSkew]: clock.now() - Math.floor(Date.now() / 1000),
      }),
    ).resolves.toMatchObject({ client_id: 'service' })
  })
})

describe('no redirects (DISC-03)', () => {
  it('every advertised machine-to-machine URL answers directly, never 3xx', async () => {
    const { service } = await makeService()
    const as = await discover(service.fetch)
    const auth = { authorization: basic('service', 'service-secret') }
    const requests: Array<[string, Request, number]> = [
      ['discovery', new Request(`${ISSUER}/.well-known/openid-configuration`, { redirect: 'manual' }), 200],
      ['oauth metadata', new Request(`${ISSUER}/.well-known/oauth-authorization-server`, { redirect: 'manual' }), 200],
      ['jwks', new Request(as.jwks_uri as string, { redirect: 'manual' }), 200],
      ['token', form(as.token_endpoint as string, { grant_type: 'client_credentials' }, auth), 200],
      ['introspection', form(as.introspection_endpoint as string, { token: 'x' }, auth), 200],
      ['revocation', form(as.revocation_endpoint as string, { token: 'x' }, auth), 200],
      // A bogus token: the point is that the answer is not a redirect.
      ['userinfo', new Request(as.userinfo_endpoint as string, { headers: { authorization: 'Bearer x' } }), 401],
    ]
    for (const [name, request, status] of requests) {
      const response = await service.fetch(request)
      expect(response.status, name).toBe(status)
      expect(response.headers.has('location'), name).toBe(false)
    }
  })

  it.each([
    ['/.well-known/openid-configuration/', 'GET'],
    ['/.well-known/oauth-authorization-server/', 'GET'],
    ['/.well-known/jwks.json/', 'GET'],
    ['/connect/token/', 'POST'],
    ['/connect/introspect/', 'POST'],
    ['/connect/revoke/', 'POST'],
    ['/connect/userinfo/', 'GET'],
    ['//connect/token', 'POST'],
    ['/Connect/Token', 'POST'],
    ['/connect/token.json', 'POST'],
    ['/.well-known/openid-configuration.json', 'GET'],
  ])('%s (%s) → 404 JSON, never a redirect', async (path, method) => {
    const { service } = await makeService()
    const init: RequestInit = { method, redirect: 'manual' }
    if (method === 'POST') {
      init.headers = {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic('service', 'service-secret'),
      }
      init.body = 'grant_type=client_credentials'
    }
    const response = await service.fetch(new Request(`${ISSUER}${path}`, init))
    expect(response.status).toBe(404)
    expect(response.headers.has('location')).toBe(false)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await response.json()).toMatchObject({ error: expect.any(String) })
  })
})
