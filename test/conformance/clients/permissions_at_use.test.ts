/**
 * #17.4: a client's permissions are read when a code is redeemed and when a refresh token is used,
 * not only when the grant was made: a scope, grant type or client taken away stops being issued.
 * Runs on memory and on PostgreSQL / Redis when their variables are set.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { authorizationUrl, authorize, redeemCallback, setup, webClient } from '../../helpers/flow.ts'
import { clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

type Ctx = Awaited<ReturnType<typeof setup>>
const FULL = ['ept:authorization', 'ept:token', 'ept:introspection', 'ept:revocation', 'ept:logout', 'rst:code']

describe.each(STORES)('#17.4 permissions checked at use ($name store)', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start(): Promise<Ctx> {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    return setup({ store: opened.store, now: time.now })
  }

  /** A code for `scope`, not redeemed yet: `exchange()` sends its token request. */
  async function code(ctx: Ctx, scope: string) {
    const request = await authorizationUrl(ctx.as, { scope })
    const callback = await authorize(ctx.browser, request.url)
    return { request, exchange: async () => (await redeemCallback(ctx, callback, request)).response }
  }

  async function redeem(ctx: Ctx, scope: string) {
    const { request, exchange } = await code(ctx, scope)
    const response = await exchange()
    return oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: request.nonce as string,
    })
  }

  async function refresh(ctx: Ctx, token: string, extra?: Record<string, string>): Promise<Response> {
    const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, ...extra })
    return ctx.service.fetch(
      new Request(ctx.as.token_endpoint as string, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${btoa('web:web-secret')}`,
        },
        body,
      }),
    )
  }

  const permissions = (...scopes: string[]) => [...FULL, 'gt:authorization_code', 'gt:refresh_token', ...scopes]

  it('#17.4 a refresh after the client lost scp:api1 does not issue api1, and asking for it is invalid_scope', async () => {
    const ctx = await start()
    const tokens = await redeem(ctx, 'openid email api1')
    expect(tokens.scope).toBe('openid email api1')
    await ctx.service.clients.update('web', { permissions: permissions('scp:openid', 'scp:email') })
    const asked = await refresh(ctx, tokens.refresh_token as string, { scope: 'api1' })
    expect(asked.status).toBe(400)
    expect(((await asked.json()) as { error: string }).error).toBe('invalid_scope')
    const response = await refresh(ctx, tokens.refresh_token as string)
    expect(response.status).toBe(200)
    const body = (await response.json()) as { scope: string; refresh_token: string; access_token: string }
    expect(body.scope).toBe('openid email')
    const claims = JSON.parse(atob(body.access_token.split('.')[1] as string)) as { scope: string; aud: unknown }
    expect(claims.scope).toBe('openid email')
    // the next generation stays narrowed even if the permission comes back
    await ctx.service.clients.update('web', { permissions: permissions('scp:openid', 'scp:email', 'scp:api1') })
    const again = (await (await refresh(ctx, body.refresh_token)).json()) as { scope: string }
    expect(again.scope).toBe('openid email')
  })

  it('#17.4 a refresh after the client lost every scope of the grant issues nothing', async () => {
    const ctx = await start()
    const tokens = await redeem(ctx, 'openid api1')
    await ctx.service.clients.update('web', { permissions: permissions('scp:email') })
    const response = await refresh(ctx, tokens.refresh_token as string)
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: string }).error).toBe('invalid_grant')
  })

  it('#17.4 a refresh after the client lost gt:refresh_token, or was deleted, issues nothing', async () => {
    const ctx = await start()
    const tokens = await redeem(ctx, 'openid email')
    await ctx.service.clients.update('web', {
      permissions: [...FULL, 'gt:authorization_code', 'scp:openid', 'scp:email'],
    })
    const lost = await refresh(ctx, tokens.refresh_token as string)
    expect(lost.status).toBe(400)
    expect(((await lost.json()) as { error: string }).error).toBe('unauthorized_client')
    await ctx.service.clients.update('web', { permissions: permissions('scp:openid', 'scp:email') })
    await ctx.service.clients.delete('web')
    const deleted = await refresh(ctx, tokens.refresh_token as string)
    expect(deleted.status).toBe(401)
    expect(((await deleted.json()) as { error: string }).error).toBe('invalid_client')
  })

  it('#17.4 a code issued before the client lost scp:email is redeemed without email, nor email claims', async () => {
    const ctx = await start()
    const { request, exchange } = await code(ctx, 'openid email api1')
    await ctx.service.clients.update('web', { permissions: permissions('scp:openid', 'scp:api1') })
    const response = await exchange()
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: request.nonce as string,
    })
    expect(tokens.scope).toBe('openid api1')
    const userinfo = await oauth.userInfoRequest(ctx.as, webClient, tokens.access_token, ctx.opts)
    expect(await oauth.processUserInfoResponse(ctx.as, webClient, 'user-1', userinfo)).toEqual({ sub: 'user-1' })
  })

  it('#17.4 a code issued before the client lost gt:authorization_code is refused', async () => {
    const ctx = await start()
    const { exchange } = await code(ctx, 'openid')
    await ctx.service.clients.update('web', { permissions: [...FULL, 'gt:refresh_token', 'scp:openid'] })
    const response = await exchange()
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: string }).error).toBe('unauthorized_client')
  })
})
