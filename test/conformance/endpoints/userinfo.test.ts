import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { setup, signIn, webClient } from '../../helpers/flow.ts'
import { basic, form } from '../../helpers/service.ts'

describe('userinfo', () => {
  it('UI-02 UI-03 UI-09: POST with header, POST with form body, lower-case scheme', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid' })
    const url = ctx.as.userinfo_endpoint as string
    const post = await ctx.service.fetch(
      new Request(url, { method: 'POST', headers: { authorization: `Bearer ${result.access_token}` } }),
    )
    expect(await post.json()).toEqual({ sub: 'user-1' })
    const body = await ctx.service.fetch(form(url, { access_token: result.access_token }))
    expect(body.status).toBe(200)
    expect(body.headers.get('content-type')).toBe('application/json')
    expect(body.headers.get('www-authenticate')).toBeNull()
    const lower = await ctx.service.fetch(
      new Request(url, { headers: { authorization: `bearer ${result.access_token}` } }),
    )
    expect(lower.status).toBe(200)
  })

  it('UI-06: no token → 401 Bearer challenge without an error code', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(new Request(ctx.as.userinfo_endpoint as string))
    expect(response.status).toBe(401)
    const challenge = response.headers.get('www-authenticate') as string
    expect(challenge).toMatch(/^Bearer realm="/)
    expect(challenge).not.toContain('error=')
  })

  it('UI-06: a bad or expired token → 401 invalid_token', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    for (const token of ['garbage', `${result.access_token}x`]) {
      const response = await oauth.userInfoRequest(ctx.as, webClient, token, ctx.opts)
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toMatch(/error="invalid_token"/)
    }
    ctx.clock.advance(3601)
    const expired = await oauth.userInfoRequest(ctx.as, webClient, result.access_token, ctx.opts)
    expect(expired.status).toBe(401)
  })

  it('UI-07 CC-04: a token without openid → 403 insufficient_scope', async () => {
    const ctx = await setup()
    const cc = await ctx.service.fetch(
      form(
        ctx.as.token_endpoint as string,
        { grant_type: 'client_credentials' },
        { authorization: basic('service', 'service-secret') },
      ),
    )
    const { access_token } = (await cc.json()) as { access_token: string }
    const response = await oauth.userInfoRequest(ctx.as, webClient, access_token, ctx.opts)
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer .*error="insufficient_scope"/)
  })

  it('UI-07: a token in header and body at once → 400 invalid_request', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const response = await ctx.service.fetch(
      form(
        ctx.as.userinfo_endpoint as string,
        { access_token: result.access_token },
        { authorization: `Bearer ${result.access_token}` },
      ),
    )
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_request' })
  })

  it('a deleted end-user → 401 invalid_token', async () => {
    const accounts = new Map<string, Record<string, unknown>>([['user-1', { sub: 'user-1', email: 'a@x' }]])
    const ctx = await setup({ accounts: { findAccount: async (sub) => accounts.get(sub) } })
    const { result } = await signIn(ctx)
    accounts.delete('user-1')
    const response = await oauth.userInfoRequest(ctx.as, webClient, result.access_token, ctx.opts)
    expect(response.status).toBe(401)
  })
})
