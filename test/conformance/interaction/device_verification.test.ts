/**
 * #29 the verification pages of the device authorization grant (RFC 8628 §3.3) at /connect/verify:
 * the user-code form (prefilled from verification_uri_complete), wrong / malformed / used codes,
 * throttling of wrong codes per source address (the wider limits: device_user_code_limits.test.ts),
 * the sign-in (built-in form, live session, or the host's hook, which learns the device kind), the
 * confirmation that always follows, and the decision recorded once in the store. Device authorizations are inserted straight into the store
 * (POST /connect/device is another helper's).
 */
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent, PendingInteraction } from '../../../src/index.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import type { DeviceCodeRecord } from '../../../src/storage/types.ts'
import { randomToken, sha256 } from '../../../src/crypto/opaque.ts'
import { formatUserCode, generateUserCode } from '../../../src/tokens/user_code.ts'
import { Browser, type Page } from '../../helpers/browser.ts'
import { authorize, authorizationUrl } from '../../helpers/flow.ts'
import { ISSUER, clock as testClock, makeService } from '../../helpers/service.ts'

const VERIFY = `${ISSUER}/connect/verify`

async function setup(options: Parameters<typeof makeService>[0] = {}) {
  const clock = testClock()
  const store = createMemoryStore({ now: clock.now })
  const events: GatehouseEvent[] = []
  const { service } = await makeService({
    store,
    now: clock.now,
    onEvent: (event) => void events.push(event),
    dynamicClientRegistration: { scopes: ['openid'] },
    ...options,
  })
  await service.clients.ensure({
    clientId: 'tv',
    displayName: 'Living Room TV',
    consentType: 'implicit',
    permissions: [
      'ept:device_authorization',
      'ept:token',
      'gt:urn:ietf:params:oauth:grant-type:device_code',
      'scp:openid',
      'scp:profile',
      'scp:api1',
    ],
  })
  return { service, clock, store, events, browser: () => new Browser(service.fetch) }
}

type Ctx = Awaited<ReturnType<typeof setup>>

/** A pending device authorization in the store, as POST /connect/device would leave it. */
async function pendingDevice(ctx: Ctx, options: { clientId?: string; scope?: string } = {}) {
  const now = ctx.clock.now()
  const record: DeviceCodeRecord = {
    id: await sha256(randomToken()),
    userCode: generateUserCode(),
    familyId: randomToken(16),
    clientId: options.clientId ?? 'tv',
    scope: options.scope ?? 'openid profile api1',
    interval: 5,
    status: 'pending',
    issuedAt: now,
    expiresAt: now + 600,
  }
  expect(await ctx.store.deviceCodes.insert(record, now)).toBe(true)
  return record
}

/** Opens the verification page (prefilled) and submits the code: the page it leads to. */
async function enterCode(browser: Browser, userCode: string): Promise<Page> {
  const form = (await browser.navigate(`${VERIFY}?user_code=${encodeURIComponent(userCode)}`)).page as Page
  return (await browser.submit(form, { user_code: userCode })).page as Page
}

async function signInAndConfirmPage(browser: Browser, device: DeviceCodeRecord): Promise<Page> {
  const signIn = await enterCode(browser, formatUserCode(device.userCode))
  expect(signIn.html).toContain('name="password"')
  return (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
}

function decision(page: Page, value: 'approve' | 'deny', browser: Browser) {
  return browser.submit(page, { decision: value })
}

describe('#29 device verification page (RFC 8628 §3.3)', () => {
  it('GET shows a themed form with user_code prefilled from verification_uri_complete, CSRF-protected', async () => {
    const ctx = await setup({ theme: { texts: { verifyTitle: 'Gerät verbinden' } } })
    const response = await ctx.service.fetch(new Request(`${VERIFY}?user_code=BCDF-GHJK`))
    expect(response.status).toBe(200)
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    const html = await response.text()
    expect(html).toContain('<h1>Gerät verbinden</h1>')
    expect(html).toMatch(/<form method="post" action="https:\/\/auth\.example\.test\/connect\/verify">/)
    expect(html).toContain('name="user_code"')
    expect(html).toContain('value="BCDF-GHJK"')
    expect(html).toMatch(/<input type="hidden" name="csrf" value="[^"]{20,}">/)
    // The browser-binding cookie the CSRF token is tied to.
    expect(response.headers.getSetCookie().some((c) => c.startsWith('gatehouse.session.browser='))).toBe(true)
    // The value is escaped.
    const evil = await (await ctx.service.fetch(new Request(`${VERIFY}?user_code=%22%3E%3Cscript%3E`))).text()
    expect(evil).not.toContain('<script>')
    expect(evil).toContain('value="&quot;&gt;&lt;script&gt;"')
  })

  it('a wrong code shows the form again with a message (no 500, no detail); a malformed one says what a code looks like', async () => {
    const ctx = await setup()
    const browser = ctx.browser()
    const wrong = await enterCode(browser, 'BCDF-GHJK')
    expect(wrong.status).toBe(400)
    expect(wrong.html).toContain('This code is not valid or has expired.')
    expect(wrong.html).toContain('name="user_code"')
    const malformed = await enterCode(browser, 'AEIOU-123')
    expect(malformed.status).toBe(400)
    expect(malformed.html).toContain('A code has 8 letters')
    const empty = await enterCode(browser, '')
    expect(empty.status).toBe(400)
    expect(ctx.events.filter((e) => e.type === 'device.user_code_failed')).toEqual([
      expect.objectContaining({ type: 'device.user_code_failed', reason: 'invalid_user_code' }),
    ])
  })

  it('an expired code is refused like an unknown one', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    ctx.clock.advance(601)
    const page = await enterCode(ctx.browser(), device.userCode.toLowerCase())
    expect(page.html).toContain('This code is not valid or has expired.')
  })

  it('wrong codes are throttled per source address after throttle.userCode.perAddress (20) failures: 429, even for a right code', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    const form = (await browser.navigate(VERIFY)).page as Page
    const csrf = /name="csrf" value="([^"]+)"/.exec(form.html)?.[1] as string
    const post = (userCode: string, address: string) =>
      ctx.service.fetch(
        new Request(VERIFY, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browser.cookieHeader() },
          body: new URLSearchParams({ csrf, user_code: userCode }),
        }),
        { address },
      )
    const guesses: number[] = []
    for (let i = 0; i < 20; i++) guesses.push((await post(i % 2 ? 'BCDF-GHJK' : 'ZZZZ-ZZZZ', '198.51.100.7')).status)
    expect(guesses.every((status) => status === 400)).toBe(true)
    const throttled = await post(device.userCode, '198.51.100.7')
    expect(throttled.status).toBe(429)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await throttled.text()).toContain('Too many wrong codes. Try again in 15 min.')
    expect(ctx.events.filter((e) => e.type === 'device.user_code_failed' && e.reason === 'throttled')).toHaveLength(1)
    // Another address is not locked out; the code is still pending.
    expect((await post(device.userCode, '203.0.113.5')).status).toBe(303)
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe('pending')
    // The window (throttle.window, 900 s) over, the address may try again.
    ctx.clock.advance(901)
    const later = await pendingDevice(ctx)
    expect((await post(later.userCode, '198.51.100.7')).status).toBe(303)
  })

  it('sign-in with username and password, then a confirmation naming the client and every scope; Approve records the user', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    const signIn = await enterCode(browser, formatUserCode(device.userCode).toLowerCase())
    expect(signIn.html).toContain('to continue to <strong><bdi>Living Room TV</bdi></strong>')
    const wrong = (await browser.signIn(signIn, 'alice', 'nope')).page as Page
    expect(wrong.html).toContain('The username or password is incorrect.')
    const confirm = (await browser.signIn(wrong, 'alice', 'alice-password')).page as Page
    expect(confirm.html).toContain('<h1>Allow this device?</h1>')
    expect(confirm.html).toContain('<strong><bdi>Living Room TV</bdi></strong>')
    for (const scope of ['openid', 'profile', 'api1']) expect(confirm.html).toContain(`data-scope="${scope}"`)
    expect(confirm.html).toContain(formatUserCode(device.userCode))
    expect(confirm.html).toContain('name="decision" value="approve"')
    expect(confirm.html).toContain('name="decision" value="deny"')
    // A browser session, like any sign-in; the device grant is not in it.
    expect(browser.cookies.has('gatehouse.session')).toBe(true)
    const done = (await decision(confirm, 'approve', browser)).page as Page
    expect(done.html).toContain('You may continue on your device.')
    const stored = await ctx.store.deviceCodes.get(device.id)
    expect(stored).toMatchObject({ status: 'approved', login: { sub: 'user-1', amr: ['pwd'] } })
    expect(stored?.login?.authTime).toBe(ctx.clock.now())
    const session = await ctx.store.sessions.get(await sha256(browser.cookies.get('gatehouse.session') as string))
    expect(session?.grants ?? []).not.toContain(device.familyId)
    expect(session?.clients).not.toContain('tv')
    expect(ctx.events).toContainEqual(
      expect.objectContaining({
        type: 'device.approved',
        clientId: 'tv',
        sub: 'user-1',
        grantId: device.familyId,
        scope: 'openid profile api1',
      }),
    )
    expect(ctx.events).toContainEqual(
      expect.objectContaining({ type: 'signin.succeeded', clientId: 'tv', sub: 'user-1' }),
    )
    // The store's poll now hands the approval to the token endpoint.
    expect(await ctx.store.deviceCodes.poll(device.id, ctx.clock.now())).toMatchObject({ status: 'ok' })
  })

  it('Deny records a denial and says the device was not given access', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    const confirm = await signInAndConfirmPage(browser, device)
    const done = (await decision(confirm, 'deny', browser)).page as Page
    expect(done.html).toContain('The device was not given access.')
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe('denied')
    expect(await ctx.store.deviceCodes.poll(device.id, ctx.clock.now())).toMatchObject({ status: 'denied' })
    expect(ctx.events).toContainEqual(
      expect.objectContaining({ type: 'device.denied', clientId: 'tv', sub: 'user-1', grantId: device.familyId }),
    )
    expect(ctx.events.some((e) => e.type === 'device.approved')).toBe(false)
  })

  it('Cancel on the sign-in page denies the device (no one signed in)', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    const signIn = await enterCode(browser, device.userCode)
    const done = (await browser.submit(signIn, { decision: 'cancel' })).page as Page
    expect(done.html).toContain('The device was not given access.')
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe('denied')
    const denied = ctx.events.find((e) => e.type === 'device.denied')
    expect(denied).toMatchObject({ clientId: 'tv', grantId: device.familyId })
    expect(denied).not.toHaveProperty('sub')
  })

  it('a code already decided: the form says it was already used', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    await ctx.store.deviceCodes.decide(device.id, { status: 'denied' }, ctx.clock.now())
    const page = await enterCode(ctx.browser(), device.userCode)
    expect(page.html).toContain('This code was already used.')
  })

  it('an existing browser session skips the sign-in but never the confirmation (even for a client without consent)', async () => {
    const ctx = await setup()
    const browser = ctx.browser()
    // Signed in through the code flow first (client `web`, implicit consent).
    const request = await authorizationUrl({ authorization_endpoint: `${ISSUER}/connect/authorize`, issuer: ISSUER })
    await authorize(browser, request.url)
    const device = await pendingDevice(ctx)
    const confirm = await enterCode(browser, device.userCode)
    expect(confirm.html).not.toContain('name="password"')
    expect(confirm.html).toContain('<h1>Allow this device?</h1>')
    await decision(confirm, 'approve', browser)
    expect(await ctx.store.deviceCodes.get(device.id)).toMatchObject({ status: 'approved', login: { sub: 'user-1' } })
  })

  it('a self-registered client: the confirmation shows the notice, the name isolated', async () => {
    const ctx = await setup()
    const registration = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          client_name: 'Agent',
          redirect_uris: ['https://tool.example.test/cb'],
          token_endpoint_auth_method: 'none',
        }),
      }),
      { address: '203.0.113.9' },
    )
    const clientId = ((await registration.json()) as { client_id: string }).client_id
    const device = await pendingDevice(ctx, { clientId, scope: 'openid' })
    const confirm = await signInAndConfirmPage(ctx.browser(), device)
    expect(confirm.html).toContain('id="self-registered"')
    expect(confirm.html).toContain('<strong><bdi>Agent</bdi></strong> registered itself')
    expect(confirm.html).toContain('Approve only if you started this sign-in yourself.')
  })

  it('a client name with markup is escaped and isolated on the sign-in and confirmation pages', async () => {
    const ctx = await setup()
    await ctx.service.clients.ensure({
      clientId: 'evil-tv',
      displayName: '<img src=x onerror=alert(1)>',
      permissions: ['ept:device_authorization', 'gt:urn:ietf:params:oauth:grant-type:device_code', 'scp:openid'],
    })
    const device = await pendingDevice(ctx, { clientId: 'evil-tv', scope: 'openid' })
    const browser = ctx.browser()
    const signIn = await enterCode(browser, device.userCode)
    const confirm = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
    for (const html of [signIn.html, confirm.html]) {
      expect(html).not.toContain('<img src=x')
      expect(html).toContain('<strong><bdi>&lt;img src=x onerror=alert(1)&gt;</bdi></strong>')
    }
  })

  it('CSRF: the code form and the confirmation without their token (or from another browser) are refused', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    await browser.navigate(VERIFY)
    const forged = await browser.request(VERIFY, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ user_code: device.userCode }),
    })
    expect(forged.status).toBe(403)
    expect(await forged.text()).toContain('CSRF check failed')
    const confirm = await signInAndConfirmPage(browser, device)
    const uid = /name="uid" value="([^"]+)"/.exec(confirm.html)?.[1] as string
    const noCsrf = await browser.request(VERIFY, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ uid, action: 'confirm', decision: 'approve' }),
    })
    expect(noCsrf.status).toBe(403)
    // Another browser with the whole form (uid and csrf) still cannot complete it.
    const other = ctx.browser()
    await other.navigate(VERIFY)
    const stolen = await other.submit(confirm, { decision: 'approve' })
    expect(stolen.page?.status).toBe(403)
    expect(stolen.page?.html).toContain('CSRF check failed')
    expect((await other.navigate(`${VERIFY}?uid=${uid}`)).page?.status).toBe(403)
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe('pending')
  })

  it('a double submit of the confirmation decides once', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    const confirm = await signInAndConfirmPage(browser, device)
    const [first, second] = await Promise.all([
      decision(confirm, 'approve', browser),
      decision(confirm, 'deny', browser),
    ])
    const pages = [first.page?.html ?? '', second.page?.html ?? '']
    const approved = pages.filter((html) => html.includes('You may continue on your device.'))
    const denied = pages.filter((html) => html.includes('The device was not given access.'))
    expect(approved.length + denied.length).toBe(1)
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe(approved.length ? 'approved' : 'denied')
    expect(ctx.events.filter((e) => e.type === 'device.approved' || e.type === 'device.denied')).toHaveLength(1)
    // Submitted again later: the interaction is gone.
    const again = (await decision(confirm, 'approve', browser)).page as Page
    expect(again.html).toContain('the sign-in request has expired or was already used')
    expect(ctx.events.filter((e) => e.type === 'device.approved' || e.type === 'device.denied')).toHaveLength(1)
  })

  it('the device code expires between the steps: the confirmation says the code is no longer valid', async () => {
    const ctx = await setup()
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    const confirm = await signInAndConfirmPage(browser, device)
    ctx.clock.advance(590)
    // Decided by another path meanwhile (or expired): decide() refuses.
    await ctx.store.deviceCodes.decide(device.id, { status: 'denied' }, ctx.clock.now())
    const raced = (await decision(confirm, 'approve', browser)).page as Page
    expect(raced.html).toContain('This code is no longer valid.')
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe('denied')

    const later = await pendingDevice(ctx)
    const page = await signInAndConfirmPage(ctx.browser(), later)
    ctx.clock.advance(601)
    const expired = (await decision(page, 'approve', ctx.browser())).page as Page
    expect(expired.html).toMatch(/no longer valid|expired or was already used/)
    expect((await ctx.store.deviceCodes.get(later.id))?.status).toBe('pending')
    expect(ctx.events.filter((e) => e.type === 'device.approved')).toHaveLength(0)
  })

  it('the host interaction hook learns the device kind; complete() leads to the built-in confirmation', async () => {
    const seen: PendingInteraction[] = []
    const ctx = await setup({
      interaction: (_request, pending) => {
        seen.push(pending)
        return Response.redirect(`https://host.example/login?uid=${pending.uid}`, 303)
      },
    })
    const device = await pendingDevice(ctx)
    const browser = ctx.browser()
    const form = (await browser.navigate(`${VERIFY}?user_code=${device.userCode}`)).page as Page
    const submitted = await browser.request(VERIFY, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        csrf: /name="csrf" value="([^"]+)"/.exec(form.html)?.[1] as string,
        user_code: device.userCode,
      }),
    })
    expect(submitted.status).toBe(303)
    const uid = new URL(submitted.headers.get('location') as string).searchParams.get('uid') as string
    expect(seen).toEqual([
      expect.objectContaining({
        uid,
        kind: 'device',
        device: { userCode: formatUserCode(device.userCode) },
        prompt: 'login',
        clientId: 'tv',
        clientName: 'Living Room TV',
        scopes: ['openid', 'profile', 'api1'],
      }),
    ])
    expect(await ctx.service.interactions.get(uid)).toMatchObject({ kind: 'device', clientId: 'tv' })
    // The built-in password form is not the sign-in here.
    expect((await browser.navigate(`${VERIFY}?uid=${uid}`)).page?.html).not.toContain('name="password"')
    const done = await ctx.service.interactions.complete(uid, { login: { sub: 'host-user-7', amr: ['pwd', 'otp'] } })
    expect(done.status).toBe(303)
    expect(done.headers.getSetCookie().some((c) => c.startsWith('gatehouse.session='))).toBe(true)
    const confirm = (await browser.navigate(new URL(done.headers.get('location') as string, ISSUER).href)).page as Page
    expect(confirm.html).toContain('<h1>Allow this device?</h1>')
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe('pending')
    await decision(confirm, 'approve', browser)
    expect(await ctx.store.deviceCodes.get(device.id)).toMatchObject({
      status: 'approved',
      login: { sub: 'host-user-7', amr: ['pwd', 'otp'] },
    })
  })

  it('the host hook vouching at once still leads to the confirmation; an error result denies the device', async () => {
    let answer: object = { login: { sub: 'host-user-7' }, consent: { scopes: [] } }
    const ctx = await setup({ interaction: () => answer as never })
    const device = await pendingDevice(ctx)
    const confirm = await enterCode(ctx.browser(), device.userCode)
    expect(confirm.html).toContain('<h1>Allow this device?</h1>')
    expect((await ctx.store.deviceCodes.get(device.id))?.status).toBe('pending')

    answer = { error: 'access_denied' }
    const other = await pendingDevice(ctx)
    const denied = await enterCode(ctx.browser(), other.userCode)
    expect(denied.html).toContain('The device was not given access.')
    expect((await ctx.store.deviceCodes.get(other.id))?.status).toBe('denied')
    expect(ctx.events).toContainEqual(
      expect.objectContaining({ type: 'device.denied', clientId: 'tv', grantId: other.familyId }),
    )
  })
})
