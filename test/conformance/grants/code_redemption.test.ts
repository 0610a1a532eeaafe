import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent } from '../../../src/index.ts'
import { authorizationUrl, authorize, setup, webAuth, webClient } from '../../helpers/flow.ts'
import { RU, form } from '../../helpers/service.ts'

async function code(ctx: Awaited<ReturnType<typeof setup>>, options: Parameters<typeof authorizationUrl>[1] = {}) {
  const request = await authorizationUrl(ctx.as, options)
  const callback = await authorize(ctx.browser, request.url)
  const params = oauth.validateAuthResponse(
    ctx.as,
    { client_id: options.clientId ?? 'web' },
    callback,
    request.state ?? oauth.expectNoState,
  )
  return { ...request, params, code: callback.searchParams.get('code') as string }
}

async function redeem(
  ctx: Awaited<ReturnType<typeof setup>>,
  fields: Record<string, string>,
  auth = { id: 'web', secret: 'web-secret' },
) {
  const response = await ctx.service.fetch(
    form(ctx.as.token_endpoint as string, {
      grant_type: 'authorization_code',
      redirect_uri: RU,
      client_id: auth.id,
      client_secret: auth.secret,
      ...fields,
    }),
  )
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, response }
}

describe('#17.2 a failed redemption burns nothing', () => {
  const spa = { id: 'spa', secret: '' }

  async function redeemAs(ctx: Awaited<ReturnType<typeof setup>>, fields: Record<string, string>, who = spa) {
    const body: Record<string, string> = { grant_type: 'authorization_code', redirect_uri: RU, client_id: who.id }
    if (who.secret !== '') body.client_secret = who.secret
    const response = await ctx.service.fetch(form(ctx.as.token_endpoint as string, { ...body, ...fields }))
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  it.each([
    [
      'CODE-04 a public client presenting the code',
      (c: { code: string; verifier: string }) => ({ code: c.code, code_verifier: c.verifier }),
      spa,
    ],
    [
      'CODE-04 another confidential client',
      (c: { code: string; verifier: string }) => ({ code: c.code, code_verifier: c.verifier }),
      { id: 'web2', secret: 'web2-secret' },
    ],
    [
      'CODE-08 the rightful client with a wrong code_verifier',
      (c: { code: string }) => ({ code: c.code, code_verifier: 'x'.repeat(43) }),
      { id: 'web', secret: 'web-secret' },
    ],
    [
      'CODE-07 the rightful client without code_verifier',
      (c: { code: string }) => ({ code: c.code }),
      { id: 'web', secret: 'web-secret' },
    ],
    [
      'CODE-05 the rightful client with its other registered redirect_uri',
      (c: { code: string; verifier: string }) => ({
        code: c.code,
        code_verifier: c.verifier,
        redirect_uri: 'https://rp.example.test/cb2',
      }),
      { id: 'web', secret: 'web-secret' },
    ],
  ])(
    '#17.2 %s fails with invalid_grant, and the rightful redemption afterwards succeeds',
    async (_name, fields, who) => {
      const events: GatehouseEvent[] = []
      const ctx = await setup({ onEvent: (event) => void events.push(event) })
      const c = await code(ctx)
      const failed = await redeemAs(ctx, fields(c), who)
      expect(failed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
      // twice: a second failure does not count as a replay either
      expect((await redeemAs(ctx, fields(c), who)).status).toBe(400)
      expect(events.filter((e) => e.type.startsWith('code.') || e.type.startsWith('token.'))).toEqual([])
      const rightful = await redeem(ctx, { code: c.code, code_verifier: c.verifier })
      expect(rightful.status).toBe(200)
      const info = await oauth.userInfoRequest(ctx.as, webClient, rightful.body.access_token as string, ctx.opts)
      expect(info.status).toBe(200)
    },
  )

  it('#17.2 a failed attempt after the real redemption revokes nothing; the rightful replay does (CODE-03)', async () => {
    const events: GatehouseEvent[] = []
    const ctx = await setup({ onEvent: (event) => void events.push(event) })
    const replays = () => events.filter((e) => e.type === 'code.replay_detected')
    const c = await code(ctx)
    const first = await redeem(ctx, { code: c.code, code_verifier: c.verifier })
    expect(first.status).toBe(200)
    const foreign = await redeemAs(ctx, { code: c.code, code_verifier: c.verifier })
    expect(foreign).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    const wrongVerifier = await redeem(ctx, { code: c.code, code_verifier: 'y'.repeat(43) })
    expect(wrongVerifier.status).toBe(400)
    const otherUri = { code: c.code, code_verifier: c.verifier, redirect_uri: 'https://rp.example.test/cb2' }
    expect((await redeem(ctx, otherUri)).status).toBe(400)
    expect(replays()).toEqual([])
    const token = first.body.access_token as string
    expect((await oauth.userInfoRequest(ctx.as, webClient, token, ctx.opts)).status).toBe(200)
    const replay = await redeem(ctx, { code: c.code, code_verifier: c.verifier })
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    expect(replays()).toHaveLength(1)
    expect((await oauth.userInfoRequest(ctx.as, webClient, token, ctx.opts)).status).toBe(401)
  })
})

describe('authorization_code grant', () => {
  it('CODE-02 CODE-03: a replayed code fails and revokes the tokens issued from it', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    const first = await redeem(ctx, { code: c.code, code_verifier: c.verifier })
    expect(first.status).toBe(200)
    ctx.clock.advance(30)
    const second = await redeem(ctx, { code: c.code, code_verifier: c.verifier })
    expect(second).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    const info = await oauth.userInfoRequest(ctx.as, webClient, first.body.access_token as string, ctx.opts)
    expect(info.status).toBe(401)
    const refresh = await oauth.refreshTokenGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      first.body.refresh_token as string,
      ctx.opts,
    )
    await expect(oauth.processRefreshTokenResponse(ctx.as, webClient, refresh)).rejects.toMatchObject({
      error: 'invalid_grant',
    })
  })

  it('CODE-04: a code redeemed by another client → invalid_grant', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    const result = await redeem(ctx, { code: c.code, code_verifier: c.verifier }, { id: 'web2', secret: 'web2-secret' })
    expect(result).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
  })

  it('CODE-05: a different redirect_uri → invalid_grant; a missing one → invalid_request', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    expect(
      await redeem(ctx, { code: c.code, code_verifier: c.verifier, redirect_uri: 'https://rp.example.test/cb2' }),
    ).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
    const d = await code(ctx)
    const response = await ctx.service.fetch(
      form(ctx.as.token_endpoint as string, {
        grant_type: 'authorization_code',
        code: d.code,
        code_verifier: d.verifier,
        client_id: 'web',
        client_secret: 'web-secret',
      }),
    )
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_request' })
  })

  it('CODE-06: expired, unknown and missing codes', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    ctx.clock.advance(301)
    expect(await redeem(ctx, { code: c.code, code_verifier: c.verifier })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
    expect(await redeem(ctx, { code: 'not-a-code', code_verifier: c.verifier })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
    expect(await redeem(ctx, { code_verifier: c.verifier })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    })
  })

  it('CODE-07: a missing code_verifier → invalid_grant', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    expect(await redeem(ctx, { code: c.code })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
  })

  it('CODE-08: a wrong code_verifier → invalid_grant', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    const other = oauth.generateRandomCodeVerifier()
    expect(await redeem(ctx, { code: c.code, code_verifier: other })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
  })

  it('CODE-09: a code_verifier for a code issued without PKCE → invalid_grant', async () => {
    const ctx = await setup()
    const c = await code(ctx, { pkce: false })
    expect(await redeem(ctx, { code: c.code, code_verifier: c.verifier })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
  })

  it('CODE-10: a malformed code_verifier → invalid_grant', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    expect(await redeem(ctx, { code: c.code, code_verifier: 'a'.repeat(42) })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
  })

  it('CODE-11 TOK-12: a public client signs in with PKCE and authenticates with client_id alone', async () => {
    const ctx = await setup()
    const spa: oauth.Client = { client_id: 'spa', token_endpoint_auth_method: 'none' }
    const request = await authorizationUrl(ctx.as, {
      clientId: 'spa',
      redirectUri: 'https://spa.example.test/callback',
    })
    const callback = await authorize(ctx.browser, request.url)
    const params = oauth.validateAuthResponse(ctx.as, spa, callback, request.state as string)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      spa,
      oauth.None(),
      params,
      'https://spa.example.test/callback',
      request.verifier,
      ctx.opts,
    )
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, spa, response, {
      expectedNonce: request.nonce as string,
    })
    expect(result.refresh_token).toBeTypeOf('string')
    // RT-07: public clients get rotated refresh tokens too
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      spa,
      await oauth.refreshTokenGrantRequest(ctx.as, spa, oauth.None(), result.refresh_token as string, ctx.opts),
    )
    expect(refreshed.refresh_token).not.toBe(result.refresh_token)
  })

  it('CODE-11: a public client without PKCE is refused at the authorization endpoint', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as, {
      clientId: 'spa',
      redirectUri: 'https://spa.example.test/callback',
      pkce: false,
    })
    const response = await ctx.service.fetch(new Request(url))
    expect(new URL(response.headers.get('location') as string).searchParams.get('error')).toBe('invalid_request')
  })

  it('TOK-12: a confidential client sending no secret → 401 invalid_client', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    const response = await ctx.service.fetch(
      form(ctx.as.token_endpoint as string, {
        grant_type: 'authorization_code',
        code: c.code,
        code_verifier: c.verifier,
        redirect_uri: RU,
        client_id: 'web',
      }),
    )
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('CODE-12 AUTHZ-19: without openid there is no ID token', async () => {
    const ctx = await setup()
    const c = await code(ctx, { scope: 'api1', nonce: null })
    const result = await redeem(ctx, { code: c.code, code_verifier: c.verifier })
    expect(result.status).toBe(200)
    expect(result.body.id_token).toBeUndefined()
    expect(result.body.scope).toBe('api1')
  })

  it('AUTHZ-08 IDT-06: no nonce in the request → no nonce in the ID token', async () => {
    const ctx = await setup()
    const c = await code(ctx, { nonce: null })
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      c.params,
      RU,
      c.verifier,
      ctx.opts,
    )
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, { requireIdToken: true })
    expect(oauth.getValidatedIdTokenClaims(result)?.nonce).toBeUndefined()
  })

  it('AUTHZ-12: a registered redirect URI with a query keeps it', async () => {
    const ctx = await setup()
    await ctx.service.clients.ensure({
      clientId: 'query-rp',
      clientSecret: 'query-secret',
      permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
      redirectUris: ['https://rp.example.test/cb?tenant=a%20b'],
    })
    const request = await authorizationUrl(ctx.as, {
      clientId: 'query-rp',
      redirectUri: 'https://rp.example.test/cb?tenant=a%20b',
      scope: 'openid',
    })
    const callback = await authorize(ctx.browser, request.url)
    expect(callback.href.startsWith('https://rp.example.test/cb?tenant=a%20b&code=')).toBe(true)
  })

  it('AUTHZ-10: codes are long, URL-safe and unique', async () => {
    const ctx = await setup()
    const codes = new Set<string>()
    for (let i = 0; i < 20; i++) {
      const { url } = await authorizationUrl(ctx.as)
      const callback = await authorize(ctx.browser, url)
      const value = callback.searchParams.get('code') as string
      expect(value).toMatch(/^[A-Za-z0-9_-]{43,}$/)
      codes.add(value)
    }
    expect(codes.size).toBe(20)
  })

  it('AUTHZ-02: the authorization request may be a form POST', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(ctx.as.authorization_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: url.searchParams,
    })
    expect(first.page?.html).toContain('name="password"')
    const done = await ctx.browser.signIn(first.page as never, 'alice', 'alice-password')
    expect(done.callback?.searchParams.get('code')).toBeTypeOf('string')
  })

  it('AUTHZ-06: unknown parameters are ignored and order does not matter', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as, {
      scope: 'email profile openid',
      extra: { extra: 'foobar', display: 'popup', ui_locales: 'se', claims_locales: 'se', acr_values: '1 2' },
    })
    const callback = await authorize(ctx.browser, url)
    expect(callback.searchParams.get('code')).toBeTypeOf('string')
  })
})

describe('concurrent redemption', () => {
  it('CODE-02: 20 parallel redemptions of one code give exactly one success, whose tokens the replays revoke', async () => {
    const ctx = await setup()
    const c = await code(ctx)
    const results = await Promise.all(
      Array.from({ length: 20 }, () => redeem(ctx, { code: c.code, code_verifier: c.verifier })),
    )
    const ok = results.filter((r) => r.status === 200)
    expect(ok).toHaveLength(1)
    expect(results.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(19)
    const info = await oauth.userInfoRequest(ctx.as, webClient, String(ok[0]?.body.access_token), ctx.opts)
    expect(info.status).toBe(401)
  })
})
