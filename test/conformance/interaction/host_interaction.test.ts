import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { PendingInteraction } from '../../../src/index.ts'
import { authorizationUrl, setup, webAuth, webClient } from '../../helpers/flow.ts'
import { RU } from '../../helpers/service.ts'

const accounts = new Map<string, Record<string, unknown>>([
  ['host-user-7', { sub: 'host-user-7', email: 'seven@host.example', email_verified: true, given_name: 'Seven' }],
])

async function hostSetup(decide: (request: Request, pending: PendingInteraction) => Response | object) {
  const seen: PendingInteraction[] = []
  const ctx = await setup({
    accounts: { findAccount: async (sub) => accounts.get(sub) },
    interaction: (request, pending) => {
      seen.push(pending)
      return decide(request, pending) as never
    },
  })
  return { ...ctx, seen }
}

async function redeem(
  ctx: Awaited<ReturnType<typeof setup>>,
  callback: URL,
  request: Awaited<ReturnType<typeof authorizationUrl>>,
) {
  const params = oauth.validateAuthResponse(ctx.as, webClient, callback, request.state as string)
  const response = await oauth.authorizationCodeGrantRequest(
    ctx.as,
    webClient,
    webAuth,
    params,
    RU,
    request.verifier,
    ctx.opts,
  )
  return oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, { expectedNonce: request.nonce as string })
}

describe('host sign-in through the interaction hook', () => {
  it('the hook redirects to the host login page; complete() resumes and sets the session', async () => {
    const ctx = await hostSetup((_request, pending) =>
      Response.redirect(`https://host.example/login?uid=${pending.uid}`, 303),
    )
    const request = await authorizationUrl(ctx.as, { extra: { login_hint: 'seven' } })
    const first = await ctx.browser.request(request.url.href)
    expect(first.status).toBe(303)
    const login = new URL(first.headers.get('location') as string)
    expect(login.origin).toBe('https://host.example')
    const uid = login.searchParams.get('uid') as string
    const pending = await ctx.service.interactions.get(uid)
    expect(pending).toMatchObject({
      uid,
      prompt: 'login',
      clientId: 'web',
      clientName: 'Web App',
      loginHint: 'seven',
      scopes: ['openid', 'profile', 'email'],
    })
    const done = await ctx.service.interactions.complete(uid, { login: { sub: 'host-user-7', amr: ['pwd', 'otp'] } })
    expect(done.status).toBe(303)
    expect(done.headers.getSetCookie().some((c) => c.startsWith('gatehouse.session='))).toBe(true)
    const callback = new URL(done.headers.get('location') as string)
    const tokens = await redeem(ctx, callback, request)
    const claims = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken
    expect(claims.sub).toBe('host-user-7')
    expect(claims.amr).toEqual(['pwd', 'otp'])
    const info = await oauth.processUserInfoResponse(
      ctx.as,
      webClient,
      'host-user-7',
      await oauth.userInfoRequest(ctx.as, webClient, tokens.access_token, ctx.opts),
    )
    expect(info.email).toBe('seven@host.example')
    // an interaction completes once
    const again = await ctx.service.interactions.complete(uid, { login: { sub: 'host-user-7' } })
    expect(again.status).toBe(400)
    expect(await ctx.service.interactions.get(uid)).toBeUndefined()
  })

  it('the hook may answer with the account directly (the host already knows the user)', async () => {
    const ctx = await hostSetup(() => ({ login: { sub: 'host-user-7' } }))
    const request = await authorizationUrl(ctx.as)
    const response = await ctx.browser.request(request.url.href)
    const callback = new URL(response.headers.get('location') as string)
    expect(callback.origin + callback.pathname).toBe(RU)
    const tokens = await redeem(ctx, callback, request)
    expect((oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken).sub).toBe('host-user-7')
    // the session now gives single sign-on without calling the hook again
    const calls = ctx.seen.length
    const second = await authorizationUrl(ctx.as)
    const silent = await ctx.browser.request(second.url.href)
    expect(new URL(silent.headers.get('location') as string).searchParams.get('code')).toBeTypeOf('string')
    expect(ctx.seen.length).toBe(calls)
  })

  it('the hook may refuse: the client gets the error with state and iss', async () => {
    const ctx = await hostSetup(() => ({ error: 'access_denied', description: 'blocked by policy' }))
    const request = await authorizationUrl(ctx.as)
    const response = await ctx.browser.request(request.url.href)
    const callback = new URL(response.headers.get('location') as string)
    expect(callback.searchParams.get('error')).toBe('access_denied')
    expect(callback.searchParams.get('error_description')).toBe('blocked by policy')
    expect(callback.searchParams.get('state')).toBe(request.state)
  })

  it('an unknown or expired uid cannot be completed', async () => {
    const ctx = await hostSetup((_r, pending) =>
      Response.redirect(`https://host.example/login?uid=${pending.uid}`, 303),
    )
    expect((await ctx.service.interactions.complete('nope', { login: { sub: 'host-user-7' } })).status).toBe(400)
    const request = await authorizationUrl(ctx.as)
    const first = await ctx.browser.request(request.url.href)
    const uid = new URL(first.headers.get('location') as string).searchParams.get('uid') as string
    ctx.clock.advance(901)
    expect(await ctx.service.interactions.get(uid)).toBeUndefined()
    expect((await ctx.service.interactions.complete(uid, { login: { sub: 'host-user-7' } })).status).toBe(400)
  })

  it('prompt=login with a session calls the hook again and shows the current session', async () => {
    const ctx = await hostSetup((_r, pending) =>
      pending.session ? Response.redirect('https://host.example/reauth', 303) : { login: { sub: 'host-user-7' } },
    )
    const first = await authorizationUrl(ctx.as)
    await ctx.browser.request(first.url.href)
    const second = await authorizationUrl(ctx.as, { extra: { prompt: 'login' } })
    const response = await ctx.browser.request(second.url.href)
    expect(response.headers.get('location')).toBe('https://host.example/reauth')
    expect(ctx.seen.at(-1)?.session?.sub).toBe('host-user-7')
    expect(ctx.seen.at(-1)?.requestedPrompt).toEqual(['login'])
  })
})
