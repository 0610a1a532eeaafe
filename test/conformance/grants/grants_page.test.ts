/**
 * #42 item 3: the end-user's grants page over HTTP (the handler in process, a cookie-keeping
 * browser): the list of the signed-in end-user's grants, the CSRF-protected and confirmed revoke
 * whose effect is item 2's (the access token inactive at introspection and refused at userinfo,
 * the refresh token refused), and the refusals (CSRF, another origin, another end-user's grant).
 * Run on every store the machine has (memory; PostgreSQL, Redis with their variables).
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { Browser, type Page, unescapeHtml } from '../../helpers/browser.ts'
import { authorizationUrl, redeemCallback, setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { ISSUER, clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const PAGE = `${ISSUER}/account/apps`
const CONSENT_RU = 'https://consent.example.test/cb'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

/** The hidden fields of every form on a page, in order. */
function forms(html: string): Array<Record<string, string>> {
  return [...html.matchAll(/<form method="post" action="[^"]+">([\s\S]*?)<\/form>/g)].map((match) =>
    Object.fromEntries(
      [...(match[1] as string).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
        unescapeHtml(m[1] as string),
        unescapeHtml(m[2] as string),
      ]),
    ),
  )
}

async function open(browser: Browser, url = PAGE): Promise<Page> {
  const { page } = await browser.navigate(url)
  if (!page) throw new Error('no page')
  return page
}

/** POSTs a form to the page as `browser`. */
function post(browser: Browser, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return browser.request(PAGE, { method: 'POST', headers: { ...FORM, ...headers }, body: new URLSearchParams(fields) })
}

describe.each(STORES)('#42 item 3 the grants page on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start() {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const ctx = await setup({ store: opened.store, now: time.now, grantsPage: true })
    // alice signs in to `web` (openid profile email): a grant with a refresh token.
    const { result } = await signIn(ctx, { scope: 'openid profile email' })
    return { ...ctx, time, tokens: result }
  }

  it('#42 item 3: the list shows the signed-in end-user’s grant: name, host, scopes in words, when and how, a Revoke form', async () => {
    const ctx = await start()
    const page = await open(ctx.browser)
    expect(page.status).toBe(200)
    expect(page.response.headers.get('cache-control')).toBe('no-store')
    expect(page.response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(page.response.headers.get('x-frame-options')).toBe('DENY')
    expect(page.html).toContain('Apps and agents with access to your account')
    expect(page.html).toContain('<h2 id="grant-0"><bdi>Web App</bdi></h2>')
    expect(page.html).toContain('<span class="grant-host"><bdi>rp.example.test</bdi></span>')
    expect(page.html).toContain('See your email address <code>email</code>')
    expect(page.html).toContain('Not since it was granted')
    expect(page.html).toContain('<dd>Signing in</dd>')
    const [form] = forms(page.html)
    expect(form).toMatchObject({ action: 'revoke', grant_id: expect.any(String), csrf: expect.any(String) })
    // The grant's id is the access token's gid.
    const { gid } = JSON.parse(
      atob((ctx.tokens.access_token.split('.')[1] as string).replace(/-/g, '+').replace(/_/g, '/')),
    )
    expect(form?.grant_id).toBe(gid)

    // A browser without a session sees no list, and no redirect either.
    const stranger = await open(new Browser(ctx.service.fetch))
    expect(stranger.status).toBe(200)
    expect(stranger.html).toContain('Sign in first')
    expect(stranger.html).not.toContain('Web App')
  })

  it('#42 item 3: a POST without the session’s CSRF token, with another session’s, or from another origin is refused (403); nothing is revoked', async () => {
    const ctx = await start()
    const [form] = forms((await open(ctx.browser)).html)
    const fields = form as Record<string, string>
    const bob = new Browser(ctx.service.fetch)
    await signIn({ ...ctx, browser: bob }, { credentials: { username: 'bob', password: 'bob-password' } })
    const [bobForm] = forms((await open(bob)).html)

    const attempts = [
      post(ctx.browser, { ...fields, action: 'confirm', decision: 'revoke', csrf: '' }),
      post(ctx.browser, { grant_id: fields.grant_id as string, action: 'confirm', decision: 'revoke' }),
      post(ctx.browser, { ...fields, action: 'confirm', decision: 'revoke', csrf: bobForm?.csrf as string }),
      post(ctx.browser, { ...fields, action: 'confirm', decision: 'revoke' }, { origin: 'https://evil.example' }),
      post(ctx.browser, { ...fields, action: 'confirm', decision: 'revoke' }, { 'sec-fetch-site': 'cross-site' }),
    ]
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(403)
      expect(response.headers.get('content-type')).toContain('text/html')
    }
    // Without a session at all: the sign-in-first page, 403.
    const nobody = await post(new Browser(ctx.service.fetch), { ...fields, action: 'confirm', decision: 'revoke' })
    expect(nobody.status).toBe(403)
    // Not a form, or a repeated field: 400 pages, never 500.
    const json = await ctx.browser.request(PAGE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    expect(json.status).toBe(400)
    const twice = await ctx.browser.request(PAGE, {
      method: 'POST',
      headers: FORM,
      body: 'action=revoke&action=confirm',
    })
    expect(twice.status).toBe(400)
    // Still there and still working.
    const introspected = await oauth.introspectionRequest(ctx.as, webClient, webAuth, ctx.tokens.access_token, ctx.opts)
    expect(await introspected.json()).toMatchObject({ active: true })
    expect(forms((await open(ctx.browser)).html)).toHaveLength(1)
  })

  it('#42 item 3: another end-user’s grant id, an unknown one and garbage get the same “no longer there” page; nothing is revoked', async () => {
    const ctx = await start()
    const [aliceForm] = forms((await open(ctx.browser)).html)
    const bob = new Browser(ctx.service.fetch)
    await signIn({ ...ctx, browser: bob }, { credentials: { username: 'bob', password: 'bob-password' } })
    const [bobForm] = forms((await open(bob)).html)
    const csrf = bobForm?.csrf as string
    const pages: string[] = []
    for (const grantId of [aliceForm?.grant_id as string, 'unknown-grant-id', '../../x', 'a'.repeat(300)]) {
      for (const action of ['revoke', 'confirm']) {
        const response = await post(bob, { csrf, grant_id: grantId, action, decision: 'revoke' })
        expect(response.status).toBe(404)
        pages.push((await response.text()).replace(/nonce-[^'"]+|nonce="[^"]+"/g, ''))
      }
    }
    expect(new Set(pages).size).toBe(1)
    expect(pages[0]).toContain('This access is no longer there')
    expect(pages[0]).not.toContain('Web App')
    const introspected = await oauth.introspectionRequest(ctx.as, webClient, webAuth, ctx.tokens.access_token, ctx.opts)
    expect(await introspected.json()).toMatchObject({ active: true })
  })

  it('#42 item 3: Revoke, then confirm: the access token is inactive at introspection and refused at userinfo, the refresh token refused; Cancel keeps it', async () => {
    const ctx = await start()
    const list = await open(ctx.browser)
    // Revoke shows the confirmation naming the client; Cancel goes back and keeps the grant.
    const confirm = await ctx.browser.submit(list, {})
    expect(confirm.page?.status).toBe(200)
    expect(confirm.page?.html).toContain('Revoke access for <strong><bdi>Web App</bdi></strong>?')
    const cancelled = await ctx.browser.request(PAGE, {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({
        ...(forms(confirm.page?.html as string)[0] as Record<string, string>),
        decision: 'cancel',
      }),
    })
    expect([cancelled.status, cancelled.headers.get('location')]).toEqual([303, PAGE])
    const before = await oauth.introspectionRequest(ctx.as, webClient, webAuth, ctx.tokens.access_token, ctx.opts)
    expect(await before.json()).toMatchObject({ active: true })

    // Confirmed: 303 back to the list with the notice, and the grant is gone.
    const confirmed = await ctx.browser.request(PAGE, {
      method: 'POST',
      headers: { ...FORM, origin: 'null', 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams({
        ...(forms(confirm.page?.html as string)[0] as Record<string, string>),
        decision: 'revoke',
      }),
    })
    expect([confirmed.status, confirmed.headers.get('location')]).toEqual([303, `${PAGE}?revoked=1`])
    const after = await open(ctx.browser, `${PAGE}?revoked=1`)
    expect(after.html).toContain('Access revoked.')
    expect(after.html).toContain('No app or agent has access to your account.')
    expect(after.html).not.toContain('Web App')

    const introspected = await oauth.introspectionRequest(ctx.as, webClient, webAuth, ctx.tokens.access_token, ctx.opts)
    expect(await introspected.json()).toEqual({ active: false })
    const userinfo = await oauth.userInfoRequest(ctx.as, webClient, ctx.tokens.access_token, ctx.opts)
    expect(userinfo.status).toBe(401)
    const refreshed = await oauth.refreshTokenGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      ctx.tokens.refresh_token as string,
      ctx.opts,
    )
    expect(refreshed.status).toBe(400)
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' })
    // The same confirmation again: no longer there.
    const again = await ctx.browser.request(PAGE, {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({
        ...(forms(confirm.page?.html as string)[0] as Record<string, string>),
        decision: 'revoke',
      }),
    })
    expect(again.status).toBe(404)
  })

  it('#42 item 3: after a revoke on the page, the session no longer remembers the consent: the client must ask again', async () => {
    const ctx = await start()
    const client = { client_id: 'consent' }
    const request = await authorizationUrl(ctx.as, {
      clientId: 'consent',
      redirectUri: CONSENT_RU,
      scope: 'openid email',
    })
    // Signed in already (start): the explicit-consent client gets the consent page, then the code.
    const consent = await ctx.browser.navigate(request.url.href)
    const allowed = await ctx.browser.submit(consent.page as Page, { decision: 'allow' })
    const { response } = await redeemCallback(ctx, allowed.callback as URL, request, {
      client,
      auth: oauth.ClientSecretBasic('consent-secret'),
      redirectUri: CONSENT_RU,
    })
    expect(response.status).toBe(200)
    // Remembered in the session: a second request goes straight back with a code.
    const again = await authorizationUrl(ctx.as, {
      clientId: 'consent',
      redirectUri: CONSENT_RU,
      scope: 'openid email',
    })
    expect((await ctx.browser.navigate(again.url.href)).callback).toBeInstanceOf(URL)

    const list = await open(ctx.browser)
    const grant = forms(list.html).find((_, i) =>
      list.html.split('<li class="grant"')[i + 1]?.includes('data-client-id="consent"'),
    )
    expect(grant).toBeDefined()
    const confirmed = await post(ctx.browser, {
      ...(grant as Record<string, string>),
      action: 'confirm',
      decision: 'revoke',
    })
    expect(confirmed.status).toBe(303)
    const asked = await ctx.browser.navigate(
      (await authorizationUrl(ctx.as, { clientId: 'consent', redirectUri: CONSENT_RU, scope: 'openid email' })).url
        .href,
    )
    expect(asked.callback).toBeUndefined()
    expect(asked.page?.html).toContain('Allow access?')
  })
})
