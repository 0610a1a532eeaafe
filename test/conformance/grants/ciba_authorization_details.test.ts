/**
 * #41 CIBA with Rich Authorization Requests (RFC 9396): `authorization_details` at the CIBA endpoint
 * are checked as at the authorization endpoint (400 `invalid_authorization_details`), reach the
 * end-user (the `ciba.notify` hook, the approval page with every field, escaped), and the approved
 * ones are in the token response, the access token and may be narrowed at the token endpoint
 * (§6.1, §7). The flow otherwise as in ciba.test.ts.
 */
import { decodeJwt } from 'jose'
import { describe, expect, it } from 'vitest'
import { Browser, type Page } from '../../helpers/browser.ts'
import { CIBA_GRANT, type CibaCtx, cibaRequest, cibaSetup, startCiba } from '../../helpers/ciba.ts'
import { basic, form } from '../../helpers/service.ts'

const PAYMENT = {
  type: 'payment_initiation',
  instructedAmount: { currency: 'EUR', amount: '123.50' },
  creditorName: 'Merchant <A&B>',
}
const ACCOUNT = { type: 'account_information', actions: ['list_accounts'] }

async function start(): Promise<CibaCtx> {
  const ctx = await cibaSetup({ authorizationDetailsTypes: ['payment_initiation', 'account_information'] })
  await ctx.service.clients.update('agent', {
    authorizationDetailsTypes: ['payment_initiation', 'account_information'],
  })
  return ctx
}

async function approveInBrowser(ctx: CibaCtx, approvalUrl: string): Promise<Page> {
  const browser = new Browser(ctx.service.fetch)
  const signIn = (await browser.navigate(approvalUrl)).page as Page
  const page = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
  const html = page.html
  const done = (await browser.submit(page, { decision: 'approve' })).page as Page
  expect(done.status).toBe(200)
  return { ...page, html }
}

function redeem(ctx: CibaCtx, authReqId: string, extra: Record<string, string> = {}): Promise<Response> {
  return ctx.service.fetch(
    form(
      ctx.service.endpoints.token,
      { grant_type: CIBA_GRANT, auth_req_id: authReqId, ...extra },
      { authorization: basic('agent', 'agent-secret') },
    ),
  )
}

describe('#41 CIBA with authorization_details (RFC 9396)', () => {
  it('#41 RAR at the CIBA endpoint: malformed, untyped or unknown types are 400 invalid_authorization_details', async () => {
    const ctx = await start()
    for (const value of ['not json', '{}', '[{"actions":[]}]', '[{"type":"unknown_type"}]']) {
      const response = await cibaRequest(ctx, { scope: 'openid', login_hint: 'alice', authorization_details: value })
      expect(response.status).toBe(400)
      expect(((await response.json()) as { error: string }).error).toBe('invalid_authorization_details')
    }
  })

  it('#41 RAR through CIBA: the end-user is told and shown every detail (escaped), approves; the tokens carry exactly those', async () => {
    const ctx = await start()
    const details = [PAYMENT, ACCOUNT]
    const started = await startCiba(ctx, { scope: 'openid', authorization_details: JSON.stringify(details) })
    expect(started.notification.authorizationDetails).toEqual(details)
    const page = await approveInBrowser(ctx, started.notification.approvalUrl)
    expect(page.html).toContain('data-detail-type="payment_initiation"')
    expect(page.html).toContain('data-detail-type="account_information"')
    expect(page.html).toContain('Merchant &lt;A&amp;B&gt;')
    expect(page.html).not.toContain('Merchant <A&B>')
    expect(page.html).toContain('123.50')
    ctx.clock.advance(5)
    const response = await redeem(ctx, started.auth_req_id)
    expect(response.status).toBe(200)
    const body = (await response.json()) as { access_token: string; authorization_details?: unknown }
    expect(body.authorization_details).toEqual(details)
    expect(decodeJwt(body.access_token).authorization_details).toEqual(details)
  })

  it('#41 RAR through CIBA: the token request narrows to a subset; a detail that was not approved is invalid_authorization_details', async () => {
    const ctx = await start()
    const started = await startCiba(ctx, { scope: 'openid', authorization_details: JSON.stringify([PAYMENT]) })
    await ctx.service.ciba.decide({ approval: started.notification.approvalUrl, sub: 'user-1', approve: true })
    ctx.clock.advance(5)
    const wider = await redeem(ctx, started.auth_req_id, { authorization_details: JSON.stringify([PAYMENT, ACCOUNT]) })
    expect(wider.status).toBe(400)
    expect(((await wider.json()) as { error: string }).error).toBe('invalid_authorization_details')
    ctx.clock.advance(5)
    const same = await redeem(ctx, started.auth_req_id, { authorization_details: JSON.stringify([PAYMENT]) })
    expect(same.status).toBe(200)
    expect(((await same.json()) as { authorization_details?: unknown }).authorization_details).toEqual([PAYMENT])
  })
})
