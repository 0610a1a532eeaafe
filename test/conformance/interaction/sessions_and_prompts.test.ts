import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { Browser } from '../../helpers/browser.ts'
import { authorizationUrl, authorize, setup, signIn } from '../../helpers/flow.ts'
import { RU } from '../../helpers/service.ts'

describe('sign-in page and browser session', () => {
  it('the sign-in form posts username and password with hidden state; the session cookie is HttpOnly and SameSite=Lax', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(url.href)
    const html = first.page?.html as string
    expect(first.page?.status).toBe(200)
    expect(html).toMatch(/<form method="post"/)
    expect(html).toContain('name="username"')
    expect(html).toContain('name="password"')
    expect(html).toContain('type="hidden" name="csrf"')
    expect(html).toMatch(/<label for="username">/)
    const headers = first.page?.response.headers as Headers
    expect(headers.get('x-frame-options')).toBe('DENY')
    expect(headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(headers.get('referrer-policy')).toBe('no-referrer')
    expect(headers.get('x-content-type-options')).toBe('nosniff')
    const response = await ctx.browser.submit(first.page as never, {
      username: 'alice',
      password: 'alice-password',
      decision: 'login',
    })
    expect(response.callback).toBeDefined()
    expect(ctx.browser.cookies.has('gatehouse.session')).toBe(true)
  })

  it('session cookie attributes: HttpOnly, SameSite=Lax, Secure for an https issuer', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(url.href)
    const html = first.page?.html as string
    const uid = /name="uid" value="([^"]+)"/.exec(html)?.[1] as string
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] as string
    const response = await ctx.browser.request(ctx.service.endpoints.interaction, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        uid,
        csrf,
        action: 'login',
        decision: 'login',
        username: 'alice',
        password: 'alice-password',
      }),
    })
    expect(response.status).toBe(303)
    const cookie = response.headers.getSetCookie().find((c) => c.startsWith('gatehouse.session=')) as string
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/SameSite=Lax/)
    expect(cookie).toMatch(/Secure/)
  })

  it('a wrong password shows the form again with a message and never redirects', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(url.href)
    const again = await ctx.browser.signIn(first.page as never, 'alice', 'wrong')
    expect(again.callback).toBeUndefined()
    expect(again.page?.html).toContain('The username or password is incorrect.')
    expect(again.page?.html).toContain('name="password"')
    const unknown = await ctx.browser.signIn(again.page as never, 'mallory', 'x')
    expect(unknown.page?.html).toContain('The username or password is incorrect.')
    const ok = await ctx.browser.signIn(unknown.page as never, 'alice', 'alice-password')
    expect(ok.callback?.searchParams.get('code')).toBeTypeOf('string')
  })

  it('a forged sign-in POST without the csrf token or from another browser is refused', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(url.href)
    const badCsrf = await ctx.browser.submit(first.page as never, {
      username: 'alice',
      password: 'alice-password',
      csrf: 'forged',
      decision: 'login',
    })
    expect(badCsrf.page?.status).toBe(403)
    const attacker = new Browser(ctx.service.fetch)
    const stolen = await attacker.submit(first.page as never, {
      username: 'alice',
      password: 'alice-password',
      decision: 'login',
    })
    expect(stolen.page?.status).toBe(403)
    expect(stolen.callback).toBeUndefined()
  })

  it('AUTHZ-21: cancel on the sign-in page → access_denied', async () => {
    const ctx = await setup()
    const { url, state } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(url.href)
    const result = await ctx.browser.submit(first.page as never, { decision: 'cancel' })
    expect(result.callback?.searchParams.get('error')).toBe('access_denied')
    expect(result.callback?.searchParams.get('state')).toBe(state)
  })

  it('an interaction completes once', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(url.href)
    await ctx.browser.signIn(first.page as never, 'alice', 'alice-password')
    const replay = await ctx.browser.signIn(first.page as never, 'alice', 'alice-password')
    expect(replay.callback).toBeUndefined()
    expect(replay.page?.status).toBe(400)
  })

  it('single sign-on across clients: the second client gets a code without a sign-in page', async () => {
    const ctx = await setup()
    await signIn(ctx)
    const { url } = await authorizationUrl(ctx.as, {
      clientId: 'web2',
      redirectUri: 'https://rp2.example.test/cb',
      scope: 'openid',
    })
    const callback = await authorize(ctx.browser, url, undefined)
    expect(callback.searchParams.get('code')).toBeTypeOf('string')
  })

  it('AUTHZ-24: prompt=none with a session → code, same sub and auth_time', async () => {
    const ctx = await setup()
    const first = await signIn(ctx)
    ctx.clock.advance(60)
    const second = await signIn(ctx, { extra: { prompt: 'none' }, credentials: undefined })
    const a = oauth.getValidatedIdTokenClaims(first.result) as oauth.IDToken
    const b = oauth.getValidatedIdTokenClaims(second.result) as oauth.IDToken
    expect(b.sub).toBe(a.sub)
    expect(b.auth_time).toBe(a.auth_time)
  })

  it('AUTHZ-25: prompt=login forces a new sign-in with a later auth_time', async () => {
    const ctx = await setup()
    const first = await signIn(ctx)
    ctx.clock.advance(5)
    const { url } = await authorizationUrl(ctx.as, { extra: { prompt: 'login' } })
    const page = await ctx.browser.navigate(url.href)
    expect(page.page?.html).toContain('name="password"')
    const second = await signIn(ctx, { extra: { prompt: 'login' } })
    const a = oauth.getValidatedIdTokenClaims(first.result) as oauth.IDToken
    const b = oauth.getValidatedIdTokenClaims(second.result) as oauth.IDToken
    expect(b.auth_time as number).toBeGreaterThan(a.auth_time as number)
  })

  it('AUTHZ-26: max_age elapsed forces sign-in; within max_age it does not', async () => {
    const ctx = await setup()
    const first = await signIn(ctx, { extra: { max_age: '15000' } })
    const a = oauth.getValidatedIdTokenClaims(first.result) as oauth.IDToken
    ctx.clock.advance(2)
    const within = await signIn(ctx, { extra: { max_age: '10000' }, credentials: undefined })
    expect((oauth.getValidatedIdTokenClaims(within.result) as oauth.IDToken).auth_time).toBe(a.auth_time)
    const { url } = await authorizationUrl(ctx.as, { extra: { max_age: '1' } })
    const page = await ctx.browser.navigate(url.href)
    expect(page.page?.html).toContain('name="password"')
    const after = await ctx.browser.signIn(page.page as never, 'alice', 'alice-password')
    expect(after.callback?.searchParams.get('code')).toBeTypeOf('string')
  })

  it('AUTHZ-27: prompt=none with id_token_hint of the signed-in user succeeds; of another user → login_required', async () => {
    const ctx = await setup()
    const first = await signIn(ctx)
    const same = await signIn(ctx, {
      extra: { prompt: 'none', id_token_hint: first.result.id_token as string },
      credentials: undefined,
    })
    expect((oauth.getValidatedIdTokenClaims(same.result) as oauth.IDToken).sub).toBe('user-1')
    const bob = new Browser(ctx.service.fetch)
    const bobResult = await signIn(
      { ...ctx, browser: bob },
      { credentials: { username: 'bob', password: 'bob-password' } },
    )
    const { url } = await authorizationUrl(ctx.as, {
      extra: { prompt: 'none', id_token_hint: bobResult.result.id_token as string },
    })
    const response = await ctx.browser.navigate(url.href)
    expect(response.callback?.searchParams.get('error')).toBe('login_required')
  })

  it('prompt=none from a different browser (no cookie) → login_required', async () => {
    const ctx = await setup()
    await signIn(ctx)
    const { url } = await authorizationUrl(ctx.as, { extra: { prompt: 'none' } })
    const other = new Browser(ctx.service.fetch)
    expect((await other.navigate(url.href)).callback?.searchParams.get('error')).toBe('login_required')
  })

  it('the session expires after sessionTtl', async () => {
    const ctx = await setup({ sessionTtl: 600 })
    await signIn(ctx)
    ctx.clock.advance(601)
    const { url } = await authorizationUrl(ctx.as, { extra: { prompt: 'none' } })
    expect((await ctx.browser.navigate(url.href)).callback?.searchParams.get('error')).toBe('login_required')
  })

  it('login_hint pre-fills the username', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as, { extra: { login_hint: 'alice"<x>' } })
    const page = await ctx.browser.navigate(url.href)
    expect(page.page?.html).toContain('value="alice&quot;&lt;x&gt;"')
  })
})

describe('explicit consent', () => {
  const consentClient: oauth.Client = { client_id: 'consent' }
  const consentAuth = oauth.ClientSecretBasic('consent-secret')
  const options = {
    client: consentClient,
    auth: consentAuth,
    redirectUri: 'https://consent.example.test/cb',
    scope: 'openid email',
  }

  it('shows a consent page with the approving button first; allow → code; next time no page', async () => {
    const ctx = await setup()
    const request = await authorizationUrl(ctx.as, {
      clientId: 'consent',
      redirectUri: options.redirectUri,
      scope: options.scope,
    })
    const login = await ctx.browser.navigate(request.url.href)
    const consent = await ctx.browser.signIn(login.page as never, 'alice', 'alice-password')
    const html = consent.page?.html as string
    expect(html).toContain('Allow access?')
    expect(html.indexOf('value="allow"')).toBeLessThan(html.indexOf('value="deny"'))
    const done = await ctx.browser.submit(consent.page as never, { decision: 'allow' })
    expect(done.callback?.searchParams.get('code')).toBeTypeOf('string')
    const again = await signIn(ctx, { ...options, credentials: undefined })
    expect(again.result.access_token).toBeTypeOf('string')
  })

  it('deny → access_denied; prompt=none before consent → consent_required', async () => {
    const ctx = await setup()
    const request = await authorizationUrl(ctx.as, {
      clientId: 'consent',
      redirectUri: options.redirectUri,
      scope: options.scope,
    })
    const login = await ctx.browser.navigate(request.url.href)
    const consent = await ctx.browser.signIn(login.page as never, 'alice', 'alice-password')
    const denied = await ctx.browser.submit(consent.page as never, { decision: 'deny' })
    expect(denied.callback?.searchParams.get('error')).toBe('access_denied')
    await signIn(ctx) // a session, through the implicit-consent client
    const none = await authorizationUrl(ctx.as, {
      clientId: 'consent',
      redirectUri: options.redirectUri,
      scope: options.scope,
      extra: { prompt: 'none' },
    })
    const response = await ctx.browser.navigate(none.url.href)
    expect(response.callback?.searchParams.get('error')).toBe('consent_required')
  })

  it('implicit-consent clients never see a consent page', async () => {
    const ctx = await setup()
    const { url } = await authorizationUrl(ctx.as, { extra: { prompt: 'consent' } })
    const callback = await authorize(ctx.browser, url)
    expect(callback.searchParams.get('code')).toBeTypeOf('string')
    expect(callback.origin + callback.pathname).toBe(RU)
  })
})
