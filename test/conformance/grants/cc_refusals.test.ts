/**
 * CC-02 CC-03 TOK-06: what the client credentials grant refuses: scopes outside the client's
 * permissions, identity scopes, clients without the grant or the token endpoint, public clients.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { basic, discover, form, inProcess, makeService } from '../../helpers/service.ts'

const NQSCHAR = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

async function setup() {
  const { service, clock } = await makeService({ scopes: [{ name: 'api2', audience: 'https://api2.example.test' }] })
  await service.clients.ensure({
    clientId: 'no-ept',
    clientSecret: 'no-ept-secret',
    permissions: ['gt:client_credentials', 'scp:api1'],
  })
  await service.clients.ensure({
    clientId: 'with-openid',
    clientSecret: 'with-openid-secret',
    permissions: ['ept:token', 'gt:client_credentials', 'scp:openid', 'scp:profile', 'scp:offline_access', 'scp:api1'],
  })
  const as = await discover(service.fetch)
  return { service, clock, as, opts: inProcess(service.fetch) }
}

type Setup = Awaited<ReturnType<typeof setup>>

async function attempt(ctx: Setup, clientId: string, auth: oauth.ClientAuth, parameters: Record<string, string> = {}) {
  const client = { client_id: clientId }
  const response = await oauth.clientCredentialsGrantRequest(ctx.as, client, auth, parameters, ctx.opts)
  const raw = response.clone()
  const outcome = await oauth.processClientCredentialsResponse(ctx.as, client, response).then(
    () => {
      throw new Error('expected the grant to be refused')
    },
    (err: unknown) => err,
  )
  expect(raw.headers.get('content-type')).toMatch(/^application\/json/)
  expect(raw.headers.get('cache-control')).toBe('no-store')
  const body = (await raw.json()) as { error: string; error_description?: string }
  expect(body.error).toMatch(NQSCHAR)
  expect(body.error_description ?? '').toMatch(NQSCHAR)
  return { outcome, status: raw.status, body }
}

describe('client_credentials refusals', () => {
  it.each([
    ['a scope the client is not permitted', 'service', 'service-secret', 'api2'],
    ['an unknown scope', 'service', 'service-secret', 'ghost'],
    ['openid, although the client holds scp:openid', 'with-openid', 'with-openid-secret', 'openid'],
    ['profile, a user scope', 'with-openid', 'with-openid-secret', 'profile'],
    ['offline_access', 'with-openid', 'with-openid-secret', 'offline_access'],
    ['a permitted scope together with openid', 'with-openid', 'with-openid-secret', 'api1 openid'],
    ['a permitted scope together with a forbidden one', 'service', 'service-secret', 'api1 api2'],
    ['a scope with invalid characters', 'service', 'service-secret', 'api"1'],
  ])('CC-03: %s → 400 invalid_scope', async (_, clientId, secret, scope) => {
    const ctx = await setup()
    const { outcome, status, body } = await attempt(ctx, clientId, oauth.ClientSecretBasic(secret), { scope })
    expect(outcome).toBeInstanceOf(oauth.ResponseBodyError)
    expect(outcome).toMatchObject({ error: 'invalid_scope', status: 400 })
    expect(status).toBe(400)
    expect(body.error).toBe('invalid_scope')
  })

  it('CC-03: scope=openid never yields an ID token', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(
        ctx.as.token_endpoint as string,
        { grant_type: 'client_credentials', scope: 'openid' },
        { authorization: basic('with-openid', 'with-openid-secret') },
      ),
    )
    const body = (await response.json()) as Record<string, unknown>
    expect(body).not.toHaveProperty('id_token')
    expect(body).not.toHaveProperty('access_token')
  })

  it('CC-03: more scopes than limits.maxScopes → invalid_scope', async () => {
    const ctx = await setup()
    const scope = Array.from({ length: 33 }, (_, i) => `s${i}`).join(' ')
    const { outcome } = await attempt(ctx, 'service', oauth.ClientSecretBasic('service-secret'), { scope })
    expect(outcome).toMatchObject({ error: 'invalid_scope', status: 400 })
  })

  it('TOK-06 CC-02: a client without gt:client_credentials → 400 unauthorized_client', async () => {
    const ctx = await setup()
    const { outcome, status } = await attempt(ctx, 'no-cc', oauth.ClientSecretBasic('no-cc-secret'))
    expect(outcome).toMatchObject({ error: 'unauthorized_client', status: 400 })
    expect(status).toBe(400)
  })

  it('a client without ept:token → 400 unauthorized_client', async () => {
    const ctx = await setup()
    const { outcome, status } = await attempt(ctx, 'no-ept', oauth.ClientSecretPost('no-ept-secret'))
    expect(outcome).toMatchObject({ error: 'unauthorized_client', status: 400 })
    expect(status).toBe(400)
  })

  it('CC-02: a public client → 401 invalid_client with a Basic challenge', async () => {
    const ctx = await setup()
    const { outcome, status, body } = await attempt(ctx, 'spa', oauth.None())
    expect(status).toBe(401)
    expect(body.error).toBe('invalid_client')
    // oauth4webapi surfaces the WWW-Authenticate challenge.
    expect(outcome).toBeInstanceOf(oauth.WWWAuthenticateChallengeError)
    expect((outcome as oauth.WWWAuthenticateChallengeError).cause[0]).toMatchObject({ scheme: 'basic' })
  })

  it('CC-02: a public client presenting a made-up secret → 401 invalid_client', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(ctx.as.token_endpoint as string, {
        grant_type: 'client_credentials',
        client_id: 'spa',
        client_secret: 'guess',
      }),
    )
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('CC-02: a confidential client without credentials → 401 invalid_client', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(ctx.as.token_endpoint as string, { grant_type: 'client_credentials', client_id: 'service' }),
    )
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="/)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('permissions are checked only after authentication: a wrong secret for a client without the grant is invalid_client', async () => {
    const ctx = await setup()
    const { status, body } = await attempt(ctx, 'no-cc', oauth.ClientSecretBasic('wrong'))
    expect(status).toBe(401)
    expect(body.error).toBe('invalid_client')
  })
})
