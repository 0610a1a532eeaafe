/**
 * #17.10: RP-initiated logout ends the session's grants made without offline_access (their refresh
 * and access tokens), keeps the offline ones, and an id_token_hint of a session that already
 * ended does not silently sign out the browser's current session.
 * CONFORMANCE: RP-Initiated Logout §2 (confirmation when the request is not verified), LO-*.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { SESSION_GRANTS_MAX } from '../../../src/interaction/flow.ts'
import { authorizationUrl, redeemCallback, setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { ISSUER, basic, form } from '../../helpers/service.ts'

type Ctx = Awaited<ReturnType<typeof setup>>

async function refresh(ctx: Ctx, token: string): Promise<number> {
  const response = await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, token, ctx.opts)
  return response.status
}

async function active(ctx: Ctx, token: string): Promise<boolean> {
  const response = await ctx.service.fetch(
    form(`${ISSUER}/connect/introspect`, { token }, { authorization: basic('web', 'web-secret') }),
  )
  return ((await response.json()) as { active: boolean }).active
}

async function logout(ctx: Ctx, idToken: string): Promise<Response> {
  const url = new URL(ctx.as.end_session_endpoint as string)
  url.searchParams.set('id_token_hint', idToken)
  return ctx.browser.request(url.href)
}

async function isSignedIn(ctx: Ctx): Promise<boolean> {
  const { url } = await authorizationUrl(ctx.as, { extra: { prompt: 'none' } })
  const result = await ctx.browser.navigate(url.href)
  return result.callback?.searchParams.has('code') ?? false
}

describe('#17.10 logout and the tokens of the session', () => {
  it('#17.10 logout revokes the refresh and access tokens of grants without offline_access, and keeps offline ones', async () => {
    const ctx = await setup()
    const online = (await signIn(ctx, { scope: 'openid profile' })).result
    const offline = (await signIn(ctx, { scope: 'openid offline_access' })).result
    expect(online.refresh_token).toBeTypeOf('string')
    expect(offline.refresh_token).toBeTypeOf('string')
    expect(await active(ctx, online.access_token)).toBe(true)

    const response = await logout(ctx, online.id_token as string)
    expect(response.status).toBe(200) // the signed-out page
    expect(await isSignedIn(ctx)).toBe(false)

    expect(await refresh(ctx, online.refresh_token as string)).toBe(400)
    expect(await active(ctx, online.access_token)).toBe(false)
    expect(await refresh(ctx, offline.refresh_token as string)).toBe(200)
    expect(await active(ctx, offline.access_token)).toBe(true)
  })

  it('#17.10 a code of the session not yet redeemed dies with the logout too', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid' })
    const request = await authorizationUrl(ctx.as, { scope: 'openid' })
    const pending = await ctx.browser.navigate(request.url.href)
    await logout(ctx, result.id_token as string)
    const { response } = await redeemCallback(ctx, pending.callback as URL, request)
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: string }).error).toBe('invalid_grant')
  })

  it(`#17.10 a session tracks its newest ${SESSION_GRANTS_MAX} grants; an older one ends when it drops out`, async () => {
    const ctx = await setup()
    const first = (await signIn(ctx, { scope: 'openid' })).result
    for (let i = 0; i < SESSION_GRANTS_MAX - 1; i++) {
      const { url } = await authorizationUrl(ctx.as, { scope: 'openid' })
      expect((await ctx.browser.navigate(url.href)).callback?.searchParams.has('code')).toBe(true)
    }
    const still = await oauth.refreshTokenGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      first.refresh_token as string,
      ctx.opts,
    )
    const next = (await oauth.processRefreshTokenResponse(ctx.as, webClient, still)).refresh_token as string
    const { url } = await authorizationUrl(ctx.as, { scope: 'openid' })
    await ctx.browser.navigate(url.href)
    expect(await refresh(ctx, next)).toBe(400)
  })

  it('#17.10 signing in as another user in the same browser ends the previous session the same way', async () => {
    const ctx = await setup()
    const alice = (await signIn(ctx, { scope: 'openid' })).result
    const bob = (
      await signIn(ctx, {
        scope: 'openid',
        extra: { prompt: 'login' },
        credentials: { username: 'bob', password: 'bob-password' },
      })
    ).result
    expect(await refresh(ctx, alice.refresh_token as string)).toBe(400)
    expect(await refresh(ctx, bob.refresh_token as string)).toBe(200)
  })

  it('#17.10 an id_token_hint whose session already ended asks before ending the current session', async () => {
    const ctx = await setup()
    const first = (await signIn(ctx, { scope: 'openid' })).result
    expect((await logout(ctx, first.id_token as string)).status).toBe(200)
    expect(await isSignedIn(ctx)).toBe(false)
    const second = (await signIn(ctx, { scope: 'openid' })).result
    expect(await isSignedIn(ctx)).toBe(true)

    const stale = await logout(ctx, first.id_token as string)
    expect(stale.status).toBe(200)
    const html = await stale.text()
    expect(html).toContain('name="confirm"')
    expect(await isSignedIn(ctx)).toBe(true)
    expect(await refresh(ctx, second.refresh_token as string)).toBe(200)

    // the current session's own hint still signs out at once
    const current = await logout(ctx, second.id_token as string)
    expect(await current.text()).not.toContain('name="confirm"')
    expect(await isSignedIn(ctx)).toBe(false)
  })
})
