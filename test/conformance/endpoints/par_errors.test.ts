/**
 * RFC 9126 §2.3: errors at the pushed authorization request endpoint are JSON (the token
 * endpoint's format), never redirects; the pushed parameters fail as they would at the
 * authorization endpoint, with invalid_request where that endpoint would show a page.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../../src/index.ts'
import { PAR_URL, type ParContext, parSetup, requestParams } from '../../helpers/par.ts'
import { basic, form } from '../../helpers/service.ts'

/** A JSON error with `error`, no redirect, not cached. */
async function expectJsonError(response: Response, status: number, error: string): Promise<Record<string, string>> {
  expect(response.status).toBe(status)
  expect(response.headers.get('location')).toBeNull()
  expect(response.headers.get('content-type')).toMatch(/^application\/json/)
  expect(response.headers.get('cache-control')).toBe('no-store')
  const body = await response.json()
  expect(body.error).toBe(error)
  expect(body.error_description).toMatch(/^[\x20\x21\x23-\x5b\x5d-\x7e]+$/)
  return body
}

const WEB = { authorization: basic('web', 'web-secret') }

/** POSTs `params` as they are (repeated names included) to the PAR endpoint. */
function pushRaw(ctx: ParContext, params: URLSearchParams, headers: Record<string, string> = WEB): Promise<Response> {
  return ctx.service.fetch(
    new Request(PAR_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: params,
    }),
  )
}

describe('RFC 9126 §2.3: invalid pushed requests → 400 JSON', () => {
  const cases: Array<[string, (p: URLSearchParams) => void, string]> = [
    ['redirect_uri not registered', (p) => p.set('redirect_uri', 'https://attacker.example/cb'), 'invalid_request'],
    ['redirect_uri with a suffix', (p) => p.set('redirect_uri', 'https://rp.example.test/cbx'), 'invalid_request'],
    ['redirect_uri missing', (p) => p.delete('redirect_uri'), 'invalid_request'],
    ['response_type missing', (p) => p.delete('response_type'), 'invalid_request'],
    ['response_type token', (p) => p.set('response_type', 'token'), 'unsupported_response_type'],
    ['response_mode fragment', (p) => p.set('response_mode', 'fragment'), 'invalid_request'],
    ['unknown scope', (p) => p.set('scope', 'openid bogus'), 'invalid_scope'],
    ['scope not permitted', (p) => p.set('scope', 'openid phone'), 'invalid_scope'],
    ['resource not an absolute URI', (p) => p.set('resource', 'api1'), 'invalid_target'],
    ['PKCE plain', (p) => p.set('code_challenge_method', 'plain'), 'invalid_request'],
    ['PKCE unknown method', (p) => p.set('code_challenge_method', 'foo'), 'invalid_request'],
    ['prompt=none with another value', (p) => p.set('prompt', 'none login'), 'invalid_request'],
    ['max_age not a number', (p) => p.set('max_age', 'soon'), 'invalid_request'],
    ['id_token_hint garbage', (p) => p.set('id_token_hint', 'a.b.c'), 'invalid_request'],
    ['dpop_jkt not a thumbprint', (p) => p.set('dpop_jkt', 'not-a-thumbprint'), 'invalid_request'],
    ['a repeated parameter', (p) => p.append('state', 'again'), 'invalid_request'],
    ['RFC 9126 §2.1: request_uri inside the push', (p) => p.set('request_uri', 'urn:x'), 'invalid_request'],
    ['AUTHZ-31: a request object', (p) => p.set('request', 'eyJhbGciOiJub25lIn0.e30.'), 'request_not_supported'],
  ]
  it.each(cases.map(([name, mutate, error]) => [name, error, mutate] as const))(
    '%s → %s',
    async (_name, error, mutate) => {
      const ctx = await parSetup()
      const { params } = await requestParams()
      mutate(params)
      await expectJsonError(await pushRaw(ctx, params), 400, error)
    },
  )

  it('AUTHZ-30: a public client without code_challenge → invalid_request', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams({ clientId: 'spa', redirectUri: 'https://spa.example.test/callback' })
    params.delete('code_challenge')
    params.delete('code_challenge_method')
    const body = await expectJsonError(
      await ctx.service.fetch(form(PAR_URL, Object.fromEntries(params))),
      400,
      'invalid_request',
    )
    expect(body.error_description).toMatch(/PKCE/)
  })

  it('as oauth4webapi sees it: ResponseBodyError with the error and status', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams()
    params.set('redirect_uri', 'https://attacker.example/cb')
    const client = { client_id: 'web' }
    const response = await oauth.pushedAuthorizationRequest(
      ctx.as,
      client,
      oauth.ClientSecretBasic('web-secret'),
      params,
      ctx.opts,
    )
    await expect(oauth.processPushedAuthorizationResponse(ctx.as, client, response)).rejects.toMatchObject({
      error: 'invalid_request',
      status: 400,
    })
  })
})

describe('RFC 9126 §2: client authentication as at the token endpoint', () => {
  it('a wrong secret → 401 invalid_client with a Basic challenge', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams()
    const response = await ctx.service.fetch(
      form(PAR_URL, Object.fromEntries(params), { authorization: basic('web', 'wrong') }),
    )
    await expectJsonError(response, 401, 'invalid_client')
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic /)
  })

  it('a confidential client without its secret → 401 invalid_client', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams()
    await expectJsonError(await ctx.service.fetch(form(PAR_URL, Object.fromEntries(params))), 401, 'invalid_client')
  })

  it('a client_id in the body that is not the authenticated client → 401 invalid_client', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams({ clientId: 'web2' })
    await expectJsonError(
      await ctx.service.fetch(form(PAR_URL, Object.fromEntries(params), WEB)),
      401,
      'invalid_client',
    )
  })

  it('a client without ept:authorization → 400 unauthorized_client', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams({ clientId: 'service' })
    const response = await ctx.service.fetch(
      form(PAR_URL, Object.fromEntries(params), { authorization: basic('service', 'service-secret') }),
    )
    await expectJsonError(response, 400, 'unauthorized_client')
  })
})

describe('RFC 9126 §2.3: the endpoint answers POST only', () => {
  it('GET → 405 with Allow: POST, counted under endpoint="par"', async () => {
    const metrics = createMetrics()
    const ctx = await parSetup({ metrics })
    const response = await ctx.service.fetch(new Request(PAR_URL))
    await expectJsonError(response, 405, 'invalid_request')
    expect(response.headers.get('allow')).toBe('POST')
    const { params } = await requestParams()
    expect((await ctx.service.fetch(form(PAR_URL, Object.fromEntries(params), WEB))).status).toBe(201)
    const text = metrics.render()
    expect(text).toContain('gatehouse_http_requests_total{endpoint="par",status="405"} 1')
    expect(text).toContain('gatehouse_http_requests_total{endpoint="par",status="201"} 1')
  })

  it('a body that is not a form → 400 invalid_request', async () => {
    const ctx = await parSetup()
    const response = await ctx.service.fetch(
      new Request(PAR_URL, { method: 'POST', headers: { ...WEB, 'content-type': 'application/json' }, body: '{}' }),
    )
    await expectJsonError(response, 400, 'invalid_request')
  })
})
