/**
 * INT-01 INT-09: who may call the introspection endpoint and how request errors look:
 * 4xx application/json with an error string, never a 200 that leaks token data.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { basic, discover, form, inProcess, makeService } from '../../helpers/service.ts'

const NQSCHAR = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

async function setup() {
  const { service, clock } = await makeService()
  const as = await discover(service.fetch)
  const client = { client_id: 'service' }
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic('service-secret'),
    { scope: 'api1' },
    inProcess(service.fetch),
  )
  const { access_token: token } = await oauth.processClientCredentialsResponse(as, client, response)
  return { service, clock, as, token, url: service.endpoints.introspection }
}

async function expectError(response: Response, status: number, error: string) {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toMatch(/^application\/json/)
  const body = (await response.json()) as Record<string, unknown>
  expect(typeof body.error).toBe('string')
  expect(body.error).toBe(error)
  expect(body.error_description).toMatch(NQSCHAR)
  expect(body).not.toHaveProperty('active')
  return body
}

describe('introspection requests', () => {
  it('INT-01: no client authentication → 401 invalid_client', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(form(ctx.url, { token: ctx.token }))
    await expectError(response, 401, 'invalid_client')
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="/)
  })

  it('INT-01: a wrong secret via Basic → 401 invalid_client + WWW-Authenticate: Basic', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(ctx.url, { token: ctx.token }, { authorization: basic('api1', 'wrong') }),
    )
    await expectError(response, 401, 'invalid_client')
    expect(response.headers.get('www-authenticate')).toBe(`Basic realm="${ctx.service.issuer}"`)
  })

  it('INT-01: a wrong secret via the body → 401 invalid_client', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(ctx.url, { token: ctx.token, client_id: 'api1', client_secret: 'wrong' }),
    )
    await expectError(response, 401, 'invalid_client')
  })

  it('INT-01: oauth4webapi surfaces the Basic challenge of a failed authentication', async () => {
    const ctx = await setup()
    const client = { client_id: 'api1' }
    const response = await oauth.introspectionRequest(
      ctx.as,
      client,
      oauth.ClientSecretBasic('wrong'),
      ctx.token,
      inProcess(ctx.service.fetch),
    )
    await expect(oauth.processIntrospectionResponse(ctx.as, client, response)).rejects.toBeInstanceOf(
      oauth.WWWAuthenticateChallengeError,
    )
  })

  it('INT-01: a public client cannot introspect', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(form(ctx.url, { token: ctx.token, client_id: 'spa' }))
    await expectError(response, 401, 'invalid_client')
  })

  it('a caller without ept:introspection → 400 unauthorized_client, and no token data', async () => {
    const ctx = await setup()
    // no-cc holds ept:token and scp:api1, but not ept:introspection.
    const client = { client_id: 'no-cc' }
    const response = await oauth.introspectionRequest(
      ctx.as,
      client,
      oauth.ClientSecretBasic('no-cc-secret'),
      ctx.token,
      inProcess(ctx.service.fetch),
    )
    const raw = response.clone()
    await expect(oauth.processIntrospectionResponse(ctx.as, client, response)).rejects.toMatchObject({
      error: 'unauthorized_client',
      status: 400,
    })
    await expectError(raw, 400, 'unauthorized_client')
  })

  it('INT-09: a missing token → 400 invalid_request JSON', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(form(ctx.url, {}, { authorization: basic('service', 'service-secret') }))
    await expectError(response, 400, 'invalid_request')
  })

  it('INT-09: an empty token is a missing token', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(ctx.url, { token: '' }, { authorization: basic('service', 'service-secret') }),
    )
    await expectError(response, 400, 'invalid_request')
  })

  it('INT-09: two token parameters → 400 invalid_request', async () => {
    const ctx = await setup()
    const body = new URLSearchParams([
      ['token', ctx.token],
      ['token', 'garbage'],
    ])
    const response = await ctx.service.fetch(
      new Request(ctx.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic('service', 'service-secret'),
        },
        body,
      }),
    )
    await expectError(response, 400, 'invalid_request')
  })

  it('#17.6 INT-01: a JSON body → 400 invalid_request', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      new Request(ctx.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basic('service', 'service-secret') },
        body: JSON.stringify({ token: ctx.token }),
      }),
    )
    await expectError(response, 400, 'invalid_request')
  })

  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])('INT-01: %s → 405 with Allow: POST', async (method) => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      new Request(`${ctx.url}?token=${encodeURIComponent(ctx.token)}`, {
        method,
        headers: { authorization: basic('service', 'service-secret') },
      }),
    )
    expect(response.headers.get('allow')).toBe('POST')
    await expectError(response, 405, 'invalid_request')
  })
})
