/**
 * INT-02 INT-04 INT-05 INT-06 CC-04: introspecting a live client-credentials access token through
 * oauth4webapi, and who gets to see it.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { ISSUER, discover, inProcess, makeService } from '../../helpers/service.ts'

async function setup() {
  const { service, clock } = await makeService()
  const as = await discover(service.fetch)
  const opts = inProcess(service.fetch)
  const client = { client_id: 'service' }
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic('service-secret'),
    { scope: 'api1' },
    opts,
  )
  const { access_token: token } = await oauth.processClientCredentialsResponse(as, client, response)
  return { service, clock, as, opts, token }
}

type Setup = Awaited<ReturnType<typeof setup>>

async function introspect(
  ctx: Setup,
  clientId: string,
  secret: string,
  token: string,
  additionalParameters?: Record<string, string>,
) {
  const client = { client_id: clientId }
  const response = await oauth.introspectionRequest(ctx.as, client, oauth.ClientSecretBasic(secret), token, {
    ...ctx.opts,
    ...(additionalParameters ? { additionalParameters } : {}),
  })
  const raw = response.clone()
  const result = await oauth.processIntrospectionResponse(ctx.as, client, response)
  const text = await raw.text()
  return { raw, result, text, body: JSON.parse(text) as Record<string, unknown> }
}

describe('introspection of an active access token', () => {
  it('INT-02 CC-04: active true with sub = client id, client_id, scope, exp, iat, iss, aud, jti, token_type', async () => {
    const ctx = await setup()
    const { raw, result, body } = await introspect(ctx, 'service', 'service-secret', ctx.token)
    expect(raw.status).toBe(200)
    expect(raw.headers.get('content-type')).toMatch(/^application\/json/)
    expect(body).toEqual({
      active: true,
      sub: 'service',
      client_id: 'service',
      scope: 'api1',
      exp: ctx.clock.now() + 3600,
      iat: ctx.clock.now(),
      iss: ISSUER,
      aud: 'api1',
      jti: expect.any(String),
      token_type: 'Bearer',
      gty: 'client_credentials',
    })
    expect(result).toEqual(body)
  })

  it('INT-06: the answer carries Cache-Control: no-store', async () => {
    const ctx = await setup()
    const { raw } = await introspect(ctx, 'service', 'service-secret', ctx.token)
    expect(raw.headers.get('cache-control')).toBe('no-store')
  })

  it('the jti is the token’s own', async () => {
    const ctx = await setup()
    const { body } = await introspect(ctx, 'service', 'service-secret', ctx.token)
    const payload = JSON.parse(Buffer.from(ctx.token.split('.')[1] as string, 'base64url').toString()) as {
      jti: string
    }
    expect(body.jti).toBe(payload.jti)
  })

  it.each([['refresh_token'], ['access_token'], ['id_token'], ['made_up_hint']])(
    'INT-04: token_type_hint=%s still finds the access token',
    async (hint) => {
      const ctx = await setup()
      const { raw, body } = await introspect(ctx, 'service', 'service-secret', ctx.token, { token_type_hint: hint })
      expect(raw.status).toBe(200)
      expect(body).toMatchObject({ active: true, client_id: 'service' })
    },
  )

  it('INT-05: the audience client (api1) sees the token active', async () => {
    const ctx = await setup()
    const { body } = await introspect(ctx, 'api1', 'api1-secret', ctx.token)
    expect(body).toMatchObject({ active: true, client_id: 'service', sub: 'service', aud: 'api1' })
  })

  it.each([
    ['web', 'web-secret'],
    ['web2', 'web2-secret'],
  ])('INT-05: %s, neither issuer nor audience, sees exactly {"active":false}', async (clientId, secret) => {
    const ctx = await setup()
    const { raw, result, text } = await introspect(ctx, clientId, secret, ctx.token)
    expect(raw.status).toBe(200)
    expect(text).toBe('{"active":false}')
    expect(result).toEqual({ active: false })
  })

  it('INT-02: the answer also works with client_secret_post', async () => {
    const ctx = await setup()
    const client = { client_id: 'api1' }
    const response = await oauth.introspectionRequest(
      ctx.as,
      client,
      oauth.ClientSecretPost('api1-secret'),
      ctx.token,
      ctx.opts,
    )
    expect(await oauth.processIntrospectionResponse(ctx.as, client, response)).toMatchObject({ active: true })
  })
})
