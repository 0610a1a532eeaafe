import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { basic, form } from '../../helpers/service.ts'

const web2: oauth.Client = { client_id: 'web2' }
const web2Auth = oauth.ClientSecretBasic('web2-secret')

async function refresh(
  ctx: Awaited<ReturnType<typeof setup>>,
  token: string,
  client = webClient,
  auth = webAuth,
  extra?: Record<string, string>,
) {
  const response = await oauth.refreshTokenGrantRequest(ctx.as, client, auth, token, {
    ...ctx.opts,
    ...(extra ? { additionalParameters: extra } : {}),
  })
  return oauth.processRefreshTokenResponse(ctx.as, client, response)
}

describe('refresh_token grant', () => {
  it('RT-08: reuse of a rotated refresh token revokes the whole family', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const rt1 = result.refresh_token as string
    const second = await refresh(ctx, rt1)
    await expect(refresh(ctx, rt1)).rejects.toMatchObject({ error: 'invalid_grant', status: 400 })
    await expect(refresh(ctx, second.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' })
    const info = await oauth.userInfoRequest(ctx.as, webClient, second.access_token, ctx.opts)
    expect(info.status).toBe(401)
    const intro = await oauth.introspectionRequest(ctx.as, webClient, webAuth, second.access_token, ctx.opts)
    expect(await oauth.processIntrospectionResponse(ctx.as, webClient, intro)).toEqual({ active: false })
  })

  it('concurrent use of one refresh token: exactly one success, then the family is revoked', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, () => refresh(ctx, result.refresh_token as string)),
    )
    const ok = outcomes.filter((o) => o.status === 'fulfilled')
    expect(ok).toHaveLength(1)
    const winner = (ok[0] as PromiseFulfilledResult<oauth.TokenEndpointResponse>).value
    await expect(refresh(ctx, winner.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  it('RT-03: a refresh token presented by another client → invalid_grant, and it still works for its owner', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    await expect(refresh(ctx, result.refresh_token as string, web2, web2Auth)).rejects.toMatchObject({
      error: 'invalid_grant',
      status: 400,
    })
    const ok = await refresh(ctx, result.refresh_token as string)
    expect(ok.access_token).toBeTypeOf('string')
  })

  it('RT-04: refresh without client authentication → 401 invalid_client', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const response = await ctx.service.fetch(
      form(ctx.as.token_endpoint as string, {
        grant_type: 'refresh_token',
        refresh_token: result.refresh_token as string,
        client_id: 'web',
      }),
    )
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('RT-05: a narrower scope is granted, a wider one is invalid_scope', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid profile email' })
    const narrower = await refresh(ctx, result.refresh_token as string, webClient, webAuth, { scope: 'openid email' })
    expect(narrower.scope).toBe('openid email')
    // the family keeps its original scope
    const back = await refresh(ctx, narrower.refresh_token as string, webClient, webAuth, { scope: 'openid profile' })
    expect(back.scope).toBe('openid profile')
    await expect(
      refresh(ctx, back.refresh_token as string, webClient, webAuth, { scope: 'openid api1' }),
    ).rejects.toMatchObject({
      error: 'invalid_scope',
    })
  })

  it('RT-09: garbage and expired refresh tokens → invalid_grant', async () => {
    const ctx = await setup({ refreshTokenTtl: 100 })
    await expect(refresh(ctx, 'garbage')).rejects.toMatchObject({ error: 'invalid_grant' })
    const { result } = await signIn(ctx)
    ctx.clock.advance(101)
    await expect(refresh(ctx, result.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  it('the family has an absolute lifetime that rotation does not extend', async () => {
    const ctx = await setup({ refreshTokenTtl: 100, refreshTokenFamilyTtl: 250 })
    const { result } = await signIn(ctx)
    let token = result.refresh_token as string
    for (let i = 0; i < 2; i++) {
      ctx.clock.advance(90)
      token = (await refresh(ctx, token)).refresh_token as string
    }
    ctx.clock.advance(90)
    await expect(refresh(ctx, token)).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  it('a client without gt:refresh_token gets no refresh token; requireOfflineAccess asks for offline_access', async () => {
    const ctx = await setup({ requireOfflineAccess: true })
    const plain = await signIn(ctx)
    expect(plain.result.refresh_token).toBeUndefined()
    const offline = await signIn(ctx, { scope: 'openid offline_access' })
    expect(offline.result.refresh_token).toBeTypeOf('string')
    expect(offline.result.scope).toBe('openid offline_access')
  })
})

describe('revocation (RFC 7009)', () => {
  it('REV-05: an access token is revoked even with a wrong hint; userinfo and introspection then reject it', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const response = await oauth.revocationRequest(ctx.as, webClient, webAuth, result.access_token, {
      ...ctx.opts,
      additionalParameters: { token_type_hint: 'refresh_token' },
    })
    await oauth.processRevocationResponse(response)
    expect(response.status).toBe(200)
    const info = await oauth.userInfoRequest(ctx.as, webClient, result.access_token, ctx.opts)
    expect(info.status).toBe(401)
    const intro = await oauth.introspectionRequest(ctx.as, webClient, webAuth, result.access_token, ctx.opts)
    expect(await oauth.processIntrospectionResponse(ctx.as, webClient, intro)).toEqual({ active: false })
    // the refresh token still works: revoking an access token revokes only it
    expect((await refresh(ctx, result.refresh_token as string)).access_token).toBeTypeOf('string')
  })

  it('#18 REV-01 REV-02: success is 200 `{}` as JSON with no-store, for known and unknown tokens alike', async () => {
    // RFC 7009 §2.2: the client ignores the body; an empty one broke simple-oauth2's revokeAll(),
    // which parses every answer as JSON (test/clients/simple_oauth2.test.ts).
    const ctx = await setup()
    const { result } = await signIn(ctx)
    for (const token of [result.refresh_token as string, result.access_token, 'garbage']) {
      const response = await oauth.revocationRequest(ctx.as, webClient, webAuth, token, ctx.opts)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('application/json')
      expect(response.headers.get('cache-control')).toBe('no-store')
      expect(await response.clone().json()).toEqual({})
      await oauth.processRevocationResponse(response)
    }
  })

  it('REV-02: unknown tokens → 200', async () => {
    const ctx = await setup()
    const response = await oauth.revocationRequest(ctx.as, webClient, webAuth, 'garbage', ctx.opts)
    expect(response.status).toBe(200)
    await oauth.processRevocationResponse(response)
  })

  it('REV-03: a public client revokes its own token with client_id only', async () => {
    const ctx = await setup()
    const spa: oauth.Client = { client_id: 'spa' }
    const { result } = await signIn(ctx, {
      client: spa,
      auth: oauth.None(),
      redirectUri: 'https://spa.example.test/callback',
    })
    const response = await oauth.revocationRequest(ctx.as, spa, oauth.None(), result.refresh_token as string, ctx.opts)
    await oauth.processRevocationResponse(response)
    await expect(refresh(ctx, result.refresh_token as string, spa, oauth.None())).rejects.toMatchObject({
      error: 'invalid_grant',
    })
  })

  it('REV-03: a wrong secret via Basic → 401 invalid_client with a Basic challenge', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(ctx.as.revocation_endpoint as string, { token: 'x' }, { authorization: basic('web', 'nope') }),
    )
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm=/)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })

  it("REV-04: a client cannot revoke another client's token", async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    await ctx.service.clients.update('web2', { permissions: ['ept:revocation', 'ept:token', 'gt:refresh_token'] })
    const response = await oauth.revocationRequest(ctx.as, web2, web2Auth, result.refresh_token as string, ctx.opts)
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_request' })
    expect((await refresh(ctx, result.refresh_token as string)).access_token).toBeTypeOf('string')
  })

  it('REV-08: GET → 405; missing token → 400 invalid_request', async () => {
    const ctx = await setup()
    const get = await ctx.service.fetch(new Request(ctx.as.revocation_endpoint as string))
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST')
    const missing = await ctx.service.fetch(
      form(ctx.as.revocation_endpoint as string, {}, { authorization: basic('web', 'web-secret') }),
    )
    expect(missing.status).toBe(400)
    expect(await missing.json()).toMatchObject({ error: 'invalid_request' })
  })
})
