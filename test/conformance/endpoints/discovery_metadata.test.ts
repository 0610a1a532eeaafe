/**
 * DISC-01 … DISC-13: both metadata documents, fetched and validated by oauth4webapi, for issuers
 * with and without a path.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { ISSUER, makeService } from '../../helpers/service.ts'

const ENDPOINTS = [
  'authorization_endpoint',
  'token_endpoint',
  'userinfo_endpoint',
  'jwks_uri',
  'end_session_endpoint',
  'revocation_endpoint',
  'introspection_endpoint',
] as const

async function fetchRaw(service: { fetch: (r: Request) => Promise<Response> }, url: string) {
  const response = await service.fetch(new Request(url))
  return { response, text: await response.text() }
}

describe('discovery metadata', () => {
  it('DISC-01 DISC-02: /.well-known/openid-configuration → 200 JSON object; issuer byte-for-byte', async () => {
    const { service } = await makeService()
    const { response, text } = await fetchRaw(service, `${ISSUER}/.well-known/openid-configuration`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    const doc = JSON.parse(text) as Record<string, unknown>
    expect(doc.issuer).toBe(ISSUER)
    expect(text).toContain(`"issuer":"${ISSUER}"`)
  })

  it.each([
    ['oidc', 'openid-configuration'],
    ['oauth2', 'oauth-authorization-server'],
  ] as const)(
    'DISC-01 DISC-13: oauth4webapi discovers and validates the %s document (%s)',
    async (algorithm, document) => {
      const { service } = await makeService()
      const url = new URL(ISSUER)
      const fetched: string[] = []
      const response = await oauth.discoveryRequest(url, {
        algorithm,
        [oauth.customFetch]: (target: string, init?: RequestInit) => {
          fetched.push(target)
          return service.fetch(new Request(target, init))
        },
      })
      expect(fetched).toEqual([`${ISSUER}/.well-known/${document}`])
      const as = await oauth.processDiscoveryResponse(url, response)
      expect(as.issuer).toBe(ISSUER)
    },
  )

  it('DISC-13: both documents are identical', async () => {
    const { service } = await makeService()
    const a = await fetchRaw(service, `${ISSUER}/.well-known/openid-configuration`)
    const b = await fetchRaw(service, `${ISSUER}/.well-known/oauth-authorization-server`)
    expect(b.response.status).toBe(200)
    expect(b.text).toBe(a.text)
  })

  it('DISC-04 DISC-06 DISC-07: every endpoint is present, https, and below the issuer', async () => {
    const { service } = await makeService()
    const doc = JSON.parse((await fetchRaw(service, `${ISSUER}/.well-known/openid-configuration`)).text) as Record<
      string,
      unknown
    >
    for (const name of ENDPOINTS) {
      expect(doc[name], name).toEqual(expect.any(String))
      const url = new URL(doc[name] as string)
      expect(url.protocol).toBe('https:')
      expect((doc[name] as string).startsWith(`${ISSUER}/`)).toBe(true)
    }
    for (const [name, value] of Object.entries(doc)) {
      if (name.endsWith('_endpoint')) expect(new URL(value as string).protocol, name).toBe('https:')
    }
    expect(doc).toMatchObject({
      token_endpoint: service.endpoints.token,
      introspection_endpoint: service.endpoints.introspection,
      jwks_uri: service.endpoints.jwks,
    })
  })

  it('DISC-04 DISC-05 DISC-08 DISC-10 DISC-11 DISC-12: required and truthful members', async () => {
    const { service } = await makeService()
    const doc = JSON.parse((await fetchRaw(service, `${ISSUER}/.well-known/openid-configuration`)).text) as Record<
      string,
      unknown
    >
    expect(doc.response_types_supported).toContain('code')
    expect(doc.subject_types_supported).toContain('public')
    expect(doc.id_token_signing_alg_values_supported).toContain('RS256')
    expect(doc.id_token_signing_alg_values_supported).not.toContain('none')
    expect(doc.code_challenge_methods_supported).toEqual(expect.arrayContaining(['S256']))
    expect(doc.scopes_supported).toContain('openid')
    expect(doc.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']),
    )
    expect(doc.grant_types_supported).not.toContain('password')
    expect(doc.grant_types_supported).not.toContain('implicit')
    expect(doc.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'client_secret_post']),
    )
    expect(doc.introspection_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'client_secret_post']),
    )
    expect(doc.request_parameter_supported).toBe(false)
    expect(doc.request_uri_parameter_supported).toBe(false)
  })

  it('DISC-11: id_token_signing_alg_values_supported lists the configured ID token algorithm', async () => {
    const { service } = await makeService({ idTokenSigningAlg: 'ES256' })
    const doc = JSON.parse((await fetchRaw(service, `${ISSUER}/.well-known/openid-configuration`)).text) as Record<
      string,
      unknown
    >
    expect(doc.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(['RS256', 'ES256']))
  })

  it('DISC-02: the issuer comes from configuration, never from Host or X-Forwarded-* headers', async () => {
    const { service } = await makeService()
    const response = await service.fetch(
      new Request('https://evil.example.test/.well-known/openid-configuration', {
        headers: { host: 'evil.example.test', 'x-forwarded-host': 'evil.example.test', 'x-forwarded-proto': 'http' },
      }),
    )
    const text = await response.text()
    expect(JSON.parse(text).issuer).toBe(ISSUER)
    expect(text).not.toContain('evil.example.test')
  })

  it.each([
    [
      'https://auth.example.test/',
      'https://auth.example.test/.well-known/openid-configuration',
      'https://auth.example.test/.well-known/oauth-authorization-server',
    ],
    [
      'https://auth.example.test/tenant-a',
      'https://auth.example.test/tenant-a/.well-known/openid-configuration',
      'https://auth.example.test/.well-known/oauth-authorization-server/tenant-a',
    ],
    [
      'https://auth.example.test/tenant-a/',
      'https://auth.example.test/tenant-a/.well-known/openid-configuration',
      'https://auth.example.test/.well-known/oauth-authorization-server/tenant-a',
    ],
  ])(
    'DISC-01 DISC-13: issuer %s is served at both well-known locations, byte-for-byte',
    async (issuer, oidcUrl, oauthUrl) => {
      const { service } = await makeService({ issuer })
      for (const [algorithm, expected] of [
        ['oidc', oidcUrl],
        ['oauth2', oauthUrl],
      ] as const) {
        const url = new URL(issuer)
        const fetched: string[] = []
        const response = await oauth.discoveryRequest(url, {
          algorithm,
          [oauth.customFetch]: (target: string, init?: RequestInit) => {
            fetched.push(target)
            return service.fetch(new Request(target, init))
          },
        })
        expect(fetched).toEqual([expected])
        expect((await oauth.processDiscoveryResponse(url, response)).issuer).toBe(issuer)
      }
      for (const url of [oidcUrl, oauthUrl]) {
        const { response, text } = await fetchRaw(service, url)
        expect(response.status, url).toBe(200)
        expect(JSON.parse(text).issuer).toBe(issuer)
      }
      const doc = JSON.parse((await fetchRaw(service, oidcUrl)).text) as Record<string, string>
      const base = issuer.replace(/\/$/, '')
      expect(doc.token_endpoint).toBe(`${base}/connect/token`)
      expect(doc.jwks_uri).toBe(`${base}/.well-known/jwks.json`)
    },
  )

  it('an issuer with a path serves nothing outside its path', async () => {
    const { service } = await makeService({ issuer: 'https://auth.example.test/tenant-a' })
    for (const path of [
      '/connect/token',
      '/.well-known/openid-configuration',
      '/tenant-ab/connect/token',
      '/tenant-a-connect/token',
    ]) {
      const response = await service.fetch(new Request(`https://auth.example.test${path}`, { method: 'POST' }))
      expect(response.status, path).toBe(404)
    }
  })

  it('HEAD on a metadata document → 200 without a body', async () => {
    const { service } = await makeService()
    const response = await service.fetch(new Request(`${ISSUER}/.well-known/openid-configuration`, { method: 'HEAD' }))
    expect(response.status).toBe(200)
    expect(await response.text()).toBe('')
  })
})
