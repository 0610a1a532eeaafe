import { SignJWT, UnsecuredJWT, decodeJwt, generateKeyPair } from 'jose'
import { describe, expect, it } from 'vitest'
import { Browser } from '../../helpers/browser.ts'
import { authorizationUrl, setup, signIn } from '../../helpers/flow.ts'
import { PLRU } from '../../helpers/service.ts'

async function loggedIn() {
  const ctx = await setup()
  const { result } = await signIn(ctx)
  return { ...ctx, idToken: result.id_token as string }
}

function logoutUrl(ctx: { as: { end_session_endpoint?: string } }, params: Record<string, string>) {
  const url = new URL(ctx.as.end_session_endpoint as string)
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  return url.href
}

async function isSignedIn(ctx: Awaited<ReturnType<typeof loggedIn>>): Promise<boolean> {
  const { url } = await authorizationUrl(ctx.as, { extra: { prompt: 'none' } })
  const result = await ctx.browser.navigate(url.href)
  return result.callback?.searchParams.has('code') ?? false
}

describe('RP-Initiated Logout', () => {
  it('LO-02: POST works like GET', async () => {
    const ctx = await loggedIn()
    const response = await ctx.browser.request(ctx.as.end_session_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ id_token_hint: ctx.idToken, post_logout_redirect_uri: PLRU, state: 's' }),
    })
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${PLRU}?state=s`)
    expect(await isSignedIn(ctx)).toBe(false)
  })

  it('LO-04: no state → redirect without state', async () => {
    const ctx = await loggedIn()
    const response = await ctx.browser.request(
      logoutUrl(ctx, { id_token_hint: ctx.idToken, post_logout_redirect_uri: PLRU }),
    )
    expect(response.headers.get('location')).toBe(PLRU)
  })

  it.each([
    ['LO-05 unregistered URI', { post_logout_redirect_uri: 'https://evil.example/' }],
    ['LO-06 registered URI plus a query', { post_logout_redirect_uri: `${PLRU}?foo=bar` }],
    ["LO-10 another client's URI", { post_logout_redirect_uri: 'https://rp2.example.test/logged-out' }],
    ['LO-10 client_id that is not the hint audience', { post_logout_redirect_uri: PLRU, client_id: 'web2' }],
  ])('%s → error page, no redirect, still signed in', async (_name, params) => {
    const ctx = await loggedIn()
    const response = await ctx.browser.request(logoutUrl(ctx, { id_token_hint: ctx.idToken, state: 's', ...params }))
    expect(response.status).toBe(400)
    expect(response.headers.get('location')).toBeNull()
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await isSignedIn(ctx)).toBe(true)
  })

  it('LO-07: post_logout_redirect_uri without id_token_hint → no redirect', async () => {
    const ctx = await loggedIn()
    const response = await ctx.browser.request(
      logoutUrl(ctx, { post_logout_redirect_uri: PLRU, state: 's', client_id: 'web' }),
    )
    expect(response.headers.get('location')).toBeNull()
  })

  it('LO-08: an alg:none hint or one signed with a foreign key → no redirect', async () => {
    const ctx = await loggedIn()
    const claims = decodeJwt(ctx.idToken)
    const unsigned = new UnsecuredJWT(claims).encode()
    const { privateKey } = await generateKeyPair('RS256')
    const foreign = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'x' }).sign(privateKey)
    for (const hint of [unsigned, foreign]) {
      const response = await ctx.browser.request(
        logoutUrl(ctx, { id_token_hint: hint, post_logout_redirect_uri: PLRU, state: 's' }),
      )
      expect(response.status).toBe(400)
      expect(response.headers.get('location')).toBeNull()
    }
    expect(await isSignedIn(ctx)).toBe(true)
  })

  it('LO-09: an expired hint is still accepted', async () => {
    const ctx = await loggedIn()
    ctx.clock.advance(7200)
    const response = await ctx.browser.request(
      logoutUrl(ctx, { id_token_hint: ctx.idToken, post_logout_redirect_uri: PLRU }),
    )
    expect(response.status).toBe(303)
  })

  it('LO-11 LO-12: no parameters → confirmation page (approve button first), then the signed-out page', async () => {
    const ctx = await loggedIn()
    const page = await ctx.browser.navigate(logoutUrl(ctx, {}))
    const html = page.page?.html as string
    expect(html).toContain('Sign out?')
    expect(html.indexOf('value="yes"')).toBeLessThan(html.indexOf('value="no"'))
    expect(await isSignedIn(ctx)).toBe(true)
    const done = await ctx.browser.submit(page.page as never, { decision: 'yes' })
    expect(done.page?.html).toContain('Signed out')
    expect(done.callback).toBeUndefined()
    expect(await isSignedIn(ctx)).toBe(false)
  })

  it('LO-12: a forged confirmation (bad csrf or another browser) is refused', async () => {
    const ctx = await loggedIn()
    const page = await ctx.browser.navigate(logoutUrl(ctx, { state: 'only-state' }))
    const forged = await ctx.browser.submit(page.page as never, { decision: 'yes', csrf: 'nope' })
    expect(forged.page?.status).toBe(403)
    const other = new Browser(ctx.service.fetch)
    const stolen = await other.submit(page.page as never, { decision: 'yes' })
    expect(stolen.page?.status).toBe(403)
    expect(await isSignedIn(ctx)).toBe(true)
  })

  it('LO-11: only id_token_hint → signed-out page without a redirect', async () => {
    const ctx = await loggedIn()
    const response = await ctx.browser.navigate(logoutUrl(ctx, { id_token_hint: ctx.idToken, state: 's' }))
    expect(response.page?.html).toContain('Signed out')
    expect(await isSignedIn(ctx)).toBe(false)
  })

  it('LO-13: logging out twice still redirects with state', async () => {
    const ctx = await loggedIn()
    const url = logoutUrl(ctx, { id_token_hint: ctx.idToken, post_logout_redirect_uri: PLRU, state: 'twice' })
    await ctx.browser.request(url)
    const again = await ctx.browser.request(url)
    expect(again.status).toBe(303)
    expect(again.headers.get('location')).toBe(`${PLRU}?state=twice`)
  })

  it('the session cookie is cleared and the session is gone from the store', async () => {
    const ctx = await loggedIn()
    const response = await ctx.browser.request(logoutUrl(ctx, { id_token_hint: ctx.idToken }))
    const cleared = response.headers.getSetCookie().find((c) => c.startsWith('gatehouse.session='))
    expect(cleared).toMatch(/Max-Age=0/)
    expect(ctx.browser.cookies.has('gatehouse.session')).toBe(false)
  })

  it('a client without ept:logout cannot use the endpoint', async () => {
    const ctx = await loggedIn()
    await ctx.service.clients.update('web', {
      permissions: [
        'ept:authorization',
        'ept:token',
        'gt:authorization_code',
        'rst:code',
        'scp:openid',
        'scp:profile',
        'scp:email',
      ],
    })
    const response = await ctx.browser.request(
      logoutUrl(ctx, { id_token_hint: ctx.idToken, post_logout_redirect_uri: PLRU }),
    )
    expect(response.status).toBe(400)
    expect(response.headers.get('location')).toBeNull()
  })
})
