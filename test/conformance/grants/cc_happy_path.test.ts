/**
 * CC-01 TOK-02 TOK-03 TOK-04 TOK-10: the client credentials grant through oauth4webapi, and the
 * RFC 9068 JWT access token it yields, verified against the JWKS the handler serves.
 */
import { createRemoteJWKSet, customFetch, decodeProtectedHeader, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { ISSUER, discover, inProcess, makeService } from '../../helpers/service.ts'

async function setup(options: Parameters<typeof makeService>[0] = {}) {
  const { service, clock } = await makeService(options)
  const as = await discover(service.fetch)
  const opts = inProcess(service.fetch)
  return { service, clock, as, opts }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** Runs the grant; returns the raw response (unread clone) and oauth4webapi's parsed result. */
async function grant(ctx: Setup, clientId: string, auth: oauth.ClientAuth, parameters: Record<string, string> = {}) {
  const client = { client_id: clientId }
  const response = await oauth.clientCredentialsGrantRequest(ctx.as, client, auth, parameters, ctx.opts)
  const raw = response.clone()
  const result = await oauth.processClientCredentialsResponse(ctx.as, client, response)
  return { raw, result, body: (await raw.json()) as Record<string, unknown> }
}

/** Verifies with jose against the JWKS fetched from the handler, at the service's clock. */
async function verify(ctx: Setup, token: string, audience: string) {
  const jwks = createRemoteJWKSet(new URL(ctx.as.jwks_uri as string), {
    [customFetch]: (url, init) => ctx.service.fetch(new Request(url, init)),
  })
  return jwtVerify(token, jwks, {
    issuer: ISSUER,
    audience,
    typ: 'at+jwt',
    currentDate: new Date(ctx.clock.now() * 1000),
  })
}

const auths = [
  ['client_secret_basic', () => oauth.ClientSecretBasic('service-secret')],
  ['client_secret_post', () => oauth.ClientSecretPost('service-secret')],
] as const

describe('client_credentials happy path', () => {
  it.each(auths)('CC-01 TOK-10: %s → exactly access_token, token_type Bearer, expires_in', async (_, auth) => {
    const ctx = await setup()
    const { raw, result, body } = await grant(ctx, 'service', auth(), { scope: 'api1' })
    expect(raw.status).toBe(200)
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'token_type'])
    expect(body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600 })
    expect(result).toMatchObject({ token_type: 'bearer', expires_in: 3600 })
    expect(result.refresh_token).toBeUndefined()
    expect(result.id_token).toBeUndefined()
    expect(result.scope).toBeUndefined()
  })

  it('TOK-02: 200, application/json, Cache-Control: no-store, Pragma: no-cache', async () => {
    const ctx = await setup()
    const { raw } = await grant(ctx, 'service', oauth.ClientSecretBasic('service-secret'))
    expect(raw.status).toBe(200)
    expect(raw.headers.get('content-type')).toMatch(/^application\/json/)
    expect(raw.headers.get('cache-control')).toBe('no-store')
    expect(raw.headers.get('pragma')).toBe('no-cache')
  })

  it('RFC 9068: the access token is an at+jwt with kid and iss, sub = client id, aud, client_id, scope, jti, iat, exp', async () => {
    const ctx = await setup()
    const { body } = await grant(ctx, 'service', oauth.ClientSecretBasic('service-secret'), { scope: 'api1' })
    const token = body.access_token as string
    const { payload, protectedHeader } = await verify(ctx, token, 'api1')
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'at+jwt' })
    expect(payload).toEqual({
      iss: ISSUER,
      sub: 'service',
      aud: 'api1',
      client_id: 'service',
      scope: 'api1',
      jti: expect.any(String),
      iat: ctx.clock.now(),
      exp: ctx.clock.now() + 3600,
      gty: 'client_credentials', // #17.9: the token represents the client itself
    })
    // JWKS-03: the kid is published.
    const jwks = (await (await ctx.service.fetch(new Request(ctx.as.jwks_uri as string))).json()) as {
      keys: Array<{ kid: string }>
    }
    expect(jwks.keys.map((k) => k.kid)).toContain(decodeProtectedHeader(token).kid)
  })

  it('every token has its own jti', async () => {
    const ctx = await setup()
    const a = await grant(ctx, 'service', oauth.ClientSecretBasic('service-secret'))
    const b = await grant(ctx, 'service', oauth.ClientSecretBasic('service-secret'))
    const jti = async (token: unknown) => (await verify(ctx, token as string, 'api1')).payload.jti
    expect(await jti(a.body.access_token)).not.toBe(await jti(b.body.access_token))
  })

  it('oauth4webapi validateJwtAccessToken (a resource server) accepts the token', async () => {
    const ctx = await setup()
    const { body } = await grant(ctx, 'service', oauth.ClientSecretPost('service-secret'), { scope: 'api1' })
    const request = new Request('https://api1.example.test/things', {
      headers: { authorization: `Bearer ${body.access_token}` },
    })
    const claims = await oauth.validateJwtAccessToken(ctx.as, request, 'api1', {
      ...ctx.opts,
      [oauth.clockSkew]: ctx.clock.now() - Math.floor(Date.now() / 1000),
    })
    expect(claims).toMatchObject({ iss: ISSUER, sub: 'service', client_id: 'service', scope: 'api1', aud: 'api1' })
    // …and a resource server for another audience rejects it.
    await expect(
      oauth.validateJwtAccessToken(ctx.as, request, 'api2', {
        ...ctx.opts,
        [oauth.clockSkew]: ctx.clock.now() - Math.floor(Date.now() / 1000),
      }),
    ).rejects.toThrow()
  })

  it('no scope requested → every permitted API scope, and their audiences; identity and unknown scopes are left out', async () => {
    const ctx = await setup({ scopes: [{ name: 'api2', audience: 'https://api2.example.test' }, 'api3'] })
    await ctx.service.clients.ensure({
      clientId: 'multi',
      clientSecret: 'multi-secret',
      permissions: [
        'ept:token',
        'gt:client_credentials',
        'scp:openid',
        'scp:profile',
        'scp:offline_access',
        'scp:api1',
        'scp:api2',
        'scp:ghost',
      ],
    })
    const { body } = await grant(ctx, 'multi', oauth.ClientSecretBasic('multi-secret'))
    const { payload } = await verify(ctx, body.access_token as string, 'api1')
    expect((payload.scope as string).split(' ').sort()).toEqual(['api1', 'api2'])
    expect([...(payload.aud as string[])].sort()).toEqual(['api1', 'https://api2.example.test'])
    expect(body).not.toHaveProperty('id_token')
  })

  it('a requested subset is granted as asked, duplicates collapsed', async () => {
    const ctx = await setup({ scopes: [{ name: 'api2', audience: 'https://api2.example.test' }] })
    await ctx.service.clients.ensure({
      clientId: 'multi',
      clientSecret: 'multi-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1', 'scp:api2'],
    })
    const { body } = await grant(ctx, 'multi', oauth.ClientSecretBasic('multi-secret'), { scope: 'api2 api2' })
    const { payload } = await verify(ctx, body.access_token as string, 'https://api2.example.test')
    expect(payload).toMatchObject({ scope: 'api2', aud: 'https://api2.example.test' })
  })

  it('a client with no API scope permission gets a token whose audience is the issuer', async () => {
    const ctx = await setup()
    await ctx.service.clients.ensure({
      clientId: 'bare',
      clientSecret: 'bare-secret',
      permissions: ['ept:token', 'gt:client_credentials'],
    })
    const { body } = await grant(ctx, 'bare', oauth.ClientSecretBasic('bare-secret'))
    const { payload } = await verify(ctx, body.access_token as string, ISSUER)
    expect(payload).toMatchObject({ aud: ISSUER, sub: 'bare', client_id: 'bare' })
  })

  it('TOK-04: a per-client access token lifetime changes expires_in and exp', async () => {
    const ctx = await setup()
    await ctx.service.clients.ensure({
      clientId: 'short',
      clientSecret: 'short-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
      lifetimes: { accessToken: 120 },
    })
    const { body, result } = await grant(ctx, 'short', oauth.ClientSecretBasic('short-secret'))
    expect(body.expires_in).toBe(120)
    expect(result.expires_in).toBe(120)
    const { payload } = await verify(ctx, body.access_token as string, 'api1')
    expect(payload.exp).toBe(ctx.clock.now() + 120)
    expect(payload.iat).toBe(ctx.clock.now())
  })

  it('TOK-04: the service-wide accessTokenTtl applies otherwise', async () => {
    const ctx = await setup({ accessTokenTtl: 900 })
    const { body } = await grant(ctx, 'service', oauth.ClientSecretBasic('service-secret'))
    expect(body.expires_in).toBe(900)
    const { payload } = await verify(ctx, body.access_token as string, 'api1')
    expect(payload.exp).toBe(ctx.clock.now() + 900)
  })

  it('TOK-06: unknown parameters are ignored', async () => {
    const ctx = await setup()
    const { raw } = await grant(ctx, 'service', oauth.ClientSecretBasic('service-secret'), {
      foo: 'bar',
      resource_hint: 'x',
    })
    expect(raw.status).toBe(200)
  })
})
