import { describe, expect, it } from 'vitest'
import { authorizationUrl, expectErrorRedirect, setup } from '../../helpers/flow.ts'
import { RU } from '../../helpers/service.ts'

async function go(ctx: Awaited<ReturnType<typeof setup>>, url: URL) {
  return ctx.service.fetch(new Request(url, { redirect: 'manual' }))
}

describe('authorization endpoint: errors before the redirect URI is verified are an HTML page', () => {
  const cases: Array<[string, (url: URL) => void]> = [
    ['AUTHZ-14 unknown client_id', (u) => u.searchParams.set('client_id', 'nope')],
    ['AUTHZ-14 missing client_id', (u) => u.searchParams.delete('client_id')],
    ['AUTHZ-13 missing redirect_uri', (u) => u.searchParams.delete('redirect_uri')],
    ['AUTHZ-11 redirect_uri with a suffix', (u) => u.searchParams.set('redirect_uri', `${RU}x`)],
    ['AUTHZ-11 redirect_uri with a trailing slash', (u) => u.searchParams.set('redirect_uri', `${RU}/`)],
    ['AUTHZ-11 redirect_uri with a query', (u) => u.searchParams.set('redirect_uri', `${RU}?a=b`)],
    [
      'AUTHZ-11 redirect_uri upper-cased host',
      (u) => u.searchParams.set('redirect_uri', RU.replace('rp.example', 'RP.EXAMPLE')),
    ],
    ['AUTHZ-11 http variant', (u) => u.searchParams.set('redirect_uri', RU.replace('https', 'http'))],
    [
      "AUTHZ-11 another client's redirect_uri",
      (u) => u.searchParams.set('redirect_uri', 'https://rp2.example.test/cb'),
    ],
    [
      'AUTHZ-15 bad redirect_uri and no response_type',
      (u) => {
        u.searchParams.set('redirect_uri', 'https://attacker.example/cb')
        u.searchParams.delete('response_type')
      },
    ],
    [
      'AUTHZ-15 bad redirect_uri and prompt=none',
      (u) => {
        u.searchParams.set('redirect_uri', 'https://attacker.example/cb')
        u.searchParams.set('prompt', 'none')
      },
    ],
    [
      'AUTHZ-15 bad redirect_uri and request object',
      (u) => {
        u.searchParams.set('redirect_uri', 'https://attacker.example/cb')
        u.searchParams.set('request', 'eyJhbGciOiJub25lIn0.e30.')
      },
    ],
  ]
  it.each(cases)('%s', async (_name, mutate) => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    mutate(url)
    const response = await go(ctx, url)
    expect(response.status).toBe(400)
    expect(response.headers.get('location')).toBeNull()
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(await response.text()).toContain('Something went wrong')
  })
})

describe('authorization endpoint: errors after verification go back to the client with state and iss', () => {
  const cases: Array<[string, (url: URL) => void, string]> = [
    ['AUTHZ-17 missing response_type', (u) => u.searchParams.delete('response_type'), 'invalid_request'],
    ['AUTHZ-18 response_type token', (u) => u.searchParams.set('response_type', 'token'), 'unsupported_response_type'],
    [
      'AUTHZ-18 response_type code id_token',
      (u) => u.searchParams.set('response_type', 'code id_token'),
      'unsupported_response_type',
    ],
    ['AUTHZ-18 response_mode fragment', (u) => u.searchParams.set('response_mode', 'fragment'), 'invalid_request'],
    ['AUTHZ-19 unknown scope', (u) => u.searchParams.set('scope', 'openid bogus'), 'invalid_scope'],
    ['AUTHZ-19 scope not permitted', (u) => u.searchParams.set('scope', 'openid phone'), 'invalid_scope'],
    [
      'AUTHZ-31 request object',
      (u) => u.searchParams.set('request', 'eyJhbGciOiJub25lIn0.e30.'),
      'request_not_supported',
    ],
    [
      'AUTHZ-31 request_uri',
      (u) => u.searchParams.set('request_uri', 'https://rp.example.test/req'),
      'request_uri_not_supported',
    ],
    [
      'AUTHZ-30 unknown code_challenge_method',
      (u) => u.searchParams.set('code_challenge_method', 'foo'),
      'invalid_request',
    ],
    [
      'AUTHZ-30 plain refused unless configured',
      (u) => u.searchParams.set('code_challenge_method', 'plain'),
      'invalid_request',
    ],
    [
      'AUTHZ-30 missing method means plain, refused',
      (u) => u.searchParams.delete('code_challenge_method'),
      'invalid_request',
    ],
    ['AUTHZ-30 method without challenge', (u) => u.searchParams.delete('code_challenge'), 'invalid_request'],
    ['AUTHZ-30 malformed challenge', (u) => u.searchParams.set('code_challenge', 'short'), 'invalid_request'],
    ['AUTHZ-28 prompt=none with another value', (u) => u.searchParams.set('prompt', 'none login'), 'invalid_request'],
    ['prompt unknown value', (u) => u.searchParams.set('prompt', 'bogus'), 'invalid_request'],
    ['max_age not a number', (u) => u.searchParams.set('max_age', '-1'), 'invalid_request'],
    ['id_token_hint garbage', (u) => u.searchParams.set('id_token_hint', 'a.b.c'), 'invalid_request'],
    ['AUTHZ-23 prompt=none without a session', (u) => u.searchParams.set('prompt', 'none'), 'login_required'],
    ['AUTHZ-07 repeated parameter', (u) => u.searchParams.append('scope', 'openid'), 'invalid_request'],
  ]
  it.each(cases.map(([name, mutate, error]) => [name, error, mutate] as const))(
    '%s → %s',
    async (_name, error, mutate) => {
      const ctx = await setup()
      const { url, state } = await authorizationUrl(ctx.as, { state: 'st~._-ate' })
      mutate(url)
      const response = await go(ctx, url)
      expect(response.status).toBe(303)
      const location = new URL(response.headers.get('location') as string)
      expectErrorRedirect(location, RU, error, state)
      expect(location.searchParams.has('code')).toBe(false)
      // AUTHZ-20: error_description uses the allowed characters only
      expect(location.searchParams.get('error_description')).toMatch(/^[\x20\x21\x23-\x5b\x5d-\x7e]+$/)
      for (const name of location.searchParams.keys()) {
        expect(['error', 'error_description', 'state', 'iss']).toContain(name)
      }
    },
  )

  it('client without the authorization permissions → unauthorized_client', async () => {
    const ctx = await setup()
    await ctx.service.clients.ensure({
      clientId: 'no-authz',
      clientSecret: 's',
      permissions: ['ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
      redirectUris: ['https://rp.example.test/no-authz'],
    })
    const { url } = await authorizationUrl(ctx.as, {
      clientId: 'no-authz',
      redirectUri: 'https://rp.example.test/no-authz',
    })
    const response = await go(ctx, url)
    expect(new URL(response.headers.get('location') as string).searchParams.get('error')).toBe('unauthorized_client')
  })

  it('AUTHZ-03: no state in the request → no state in the response', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as, { state: null, extra: { prompt: 'none' } })
    const response = await go(ctx, url)
    const location = new URL(response.headers.get('location') as string)
    expect(location.searchParams.has('state')).toBe(false)
    expect(location.searchParams.get('error')).toBe('login_required')
  })

  it('AUTHZ-33: no CORS on the authorization endpoint', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    const response = await ctx.service.fetch(new Request(url, { headers: { origin: 'https://spa.example.test' } }))
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('wrong content type on a POST authorization request → error page', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      new Request(ctx.as.authorization_endpoint as string, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      }),
    )
    expect(response.status).toBe(400)
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
  })
})
