/**
 * #41 the CIBA approval page (/connect/ciba/approve): the link's reference (not the auth_req_id)
 * starts a sign-in bound to the browser; the confirmation shows the client, the scopes and the
 * binding message (escaped); only the hinted end-user decides (anyone else: an error page, nothing
 * recorded); the form is CSRF-protected and decides once.
 */
import { describe, expect, it } from 'vitest'
import type { PendingInteraction } from '../../../src/index.ts'
import { Browser, type Page } from '../../helpers/browser.ts'
import { type CibaCtx, cibaSetup, pollCiba, startCiba } from '../../helpers/ciba.ts'

async function signedInConfirm(ctx: CibaCtx, approvalUrl: string, username = 'alice', password = 'alice-password') {
  const browser = new Browser(ctx.service.fetch)
  const signIn = (await browser.navigate(approvalUrl)).page as Page
  expect(signIn.html).toContain('name="password"')
  const page = (await browser.signIn(signIn, username, password)).page as Page
  return { browser, page }
}

async function pollError(ctx: CibaCtx, authReqId: string): Promise<string> {
  return ((await (await pollCiba(ctx, authReqId)).json()) as { error?: string }).error ?? 'tokens'
}

describe('#41 CIBA approval page', () => {
  it('#41 the hinted user signs in, sees client, scopes and binding message, approves once; the client gets tokens', async () => {
    const ctx = await cibaSetup()
    const started = await startCiba(ctx, { scope: 'openid email', binding_message: 'Pay A&B invoice 42' })
    const { browser, page } = await signedInConfirm(ctx, started.notification.approvalUrl)
    expect(page.status).toBe(200)
    expect(page.html).toContain('<bdi>Travel Agent</bdi>')
    expect(page.html).toContain('data-scope="email"')
    expect(page.html).toContain('Pay A&amp;B invoice 42')
    expect(await pollError(ctx, started.auth_req_id)).toBe('authorization_pending')
    const done = (await browser.submit(page, { decision: 'approve' })).page as Page
    expect(done.html).toContain('Request approved')
    // The same form again: the interaction is gone, nothing changes.
    const again = (await browser.submit(page, { decision: 'deny' })).page as Page
    expect(again.status).toBe(400)
    ctx.clock.advance(5)
    expect(await pollError(ctx, started.auth_req_id)).toBe('tokens')
  })

  it('#41 another user who signs in gets an error page and no decision is recorded; the session-less link of an unknown ref is an error page', async () => {
    const ctx = await cibaSetup()
    const started = await startCiba(ctx, { login_hint: 'alice' })
    const { browser, page } = await signedInConfirm(ctx, started.notification.approvalUrl, 'bob', 'bob-password')
    expect(page.status).toBe(403)
    expect(page.html).toContain('access_denied')
    expect(page.html).not.toContain('name="decision"')
    // A forged confirm from bob's browser decides nothing either.
    const uid = new URL(page.url).searchParams.get('uid') ?? ''
    const record = await ctx.service.store.interactions.get(uid)
    const forged = await browser.request(ctx.service.endpoints.cibaApproval, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ uid, csrf: record?.csrf ?? '', action: 'confirm', decision: 'approve' }),
    })
    expect(forged.status).toBe(403)
    expect(await pollError(ctx, started.auth_req_id)).toBe('authorization_pending')
    const unknown = (await new Browser(ctx.service.fetch).navigate(`${ctx.service.endpoints.cibaApproval}?ref=nope`))
      .page as Page
    expect(unknown.status).toBe(400)
    // The auth_req_id is not an approval reference.
    const byId = (
      await new Browser(ctx.service.fetch).navigate(`${ctx.service.endpoints.cibaApproval}?ref=${started.auth_req_id}`)
    ).page as Page
    expect(byId.status).toBe(400)
  })

  it('#41 CSRF: a wrong csrf token, or another browser, decides nothing (403)', async () => {
    const ctx = await cibaSetup()
    const started = await startCiba(ctx)
    const { page } = await signedInConfirm(ctx, started.notification.approvalUrl)
    const uid = new URL(page.url).searchParams.get('uid') ?? ''
    const record = await ctx.service.store.interactions.get(uid)
    const post = (browser: Browser, csrf: string) =>
      browser.request(ctx.service.endpoints.cibaApproval, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ uid, csrf, action: 'confirm', decision: 'approve' }),
      })
    expect((await post(new Browser(ctx.service.fetch), record?.csrf ?? '')).status).toBe(403)
    expect(await pollError(ctx, started.auth_req_id)).toBe('authorization_pending')
  })

  it('#41 denying on the page: access_denied at the token endpoint', async () => {
    const ctx = await cibaSetup()
    const started = await startCiba(ctx)
    const { browser, page } = await signedInConfirm(ctx, started.notification.approvalUrl)
    const done = (await browser.submit(page, { decision: 'deny' })).page as Page
    expect(done.html).toContain('Request denied')
    expect(await pollError(ctx, started.auth_req_id)).toBe('access_denied')
  })
})

describe('#41 CIBA approval with the host interaction hook', () => {
  it('#41 the hook signs the end-user in (kind ciba, the hinted sub), the built-in confirmation follows; an error result before anyone signed in decides nothing (the host denies through service.ciba.decide)', async () => {
    const seen: PendingInteraction[] = []
    const ctx = await cibaSetup({
      interaction: async (_request, pending) => {
        seen.push(pending)
        return Response.redirect(`https://host.example.test/login?uid=${pending.uid}`, 303)
      },
    })
    const started = await startCiba(ctx, { binding_message: 'Deploy v2' })
    const browser = new Browser(ctx.service.fetch, ['https://host.example.test'])
    const first = await browser.navigate(started.notification.approvalUrl)
    const uid = first.callback?.searchParams.get('uid') ?? ''
    expect(seen[0]).toMatchObject({
      kind: 'ciba',
      ciba: { sub: 'user-1', bindingMessage: 'Deploy v2' },
      clientName: 'Travel Agent',
    })
    expect(await ctx.service.interactions.get(uid)).toMatchObject({ kind: 'ciba', loginHint: 'user-1' })
    const completed = await ctx.service.interactions.complete(uid, { login: { sub: 'user-1' } })
    const confirm = (await browser.navigate(completed.headers.get('location') ?? '')).page as Page
    expect(confirm.html).toContain('value="approve"')
    expect((await browser.submit(confirm, { decision: 'approve' })).page?.html).toContain('Request approved')
    expect(await pollError(ctx, started.auth_req_id)).toBe('tokens')

    const refused = await startCiba(ctx)
    const second = await browser.navigate(refused.notification.approvalUrl)
    const uid2 = second.callback?.searchParams.get('uid') ?? ''
    // #41 review: whoever holds the link cannot cancel the request by failing the sign-in.
    const cancelled = await ctx.service.interactions.complete(uid2, { error: 'access_denied' })
    expect(cancelled.status).toBe(403)
    expect(await cancelled.text()).not.toContain('Request denied')
    expect(await pollError(ctx, refused.auth_req_id)).toBe('authorization_pending')
    expect(
      await ctx.service.ciba.decide({ approval: refused.notification.approvalUrl, sub: 'user-1', approve: false }),
    ).toBe('denied')
    ctx.clock.advance(5)
    expect(await pollError(ctx, refused.auth_req_id)).toBe('access_denied')
  })
})
