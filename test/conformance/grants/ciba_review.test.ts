/**
 * #41 review findings on CIBA, each a test: the request is stored before the end-user is told (an
 * immediate decision finds it); a missing `scope` is invalid_request (CIBA §7.1 requires it); the
 * ping's `client_notification_token` must be a bearer token (RFC 6750 b64token); a
 * `binding_message` with invisible format characters (bidi overrides, zero-width) is refused; a
 * self-registered client's approval page says nobody reviewed it.
 */
import { describe, expect, it } from 'vitest'
import type { TokenService } from '../../../src/index.ts'
import { Browser, type Page } from '../../helpers/browser.ts'
import { CIBA_GRANT, type CibaCtx, cibaRequest, cibaSetup, pollCiba, startCiba } from '../../helpers/ciba.ts'
import { ISSUER, basic, form } from '../../helpers/service.ts'

async function errorOf(response: Response): Promise<{ status: number; error: string }> {
  return { status: response.status, error: ((await response.json()) as { error: string }).error }
}

describe('#41 review: CIBA', () => {
  it('#41 review: the request is stored before the end-user is told: a decision from inside ciba.notify counts', async () => {
    let service: TokenService | undefined
    const ctx: CibaCtx = await cibaSetup({
      ciba: {
        notify: async (notification) => {
          const outcome = await service?.ciba.decide({
            approval: notification.approvalUrl,
            sub: 'user-1',
            approve: true,
          })
          if (outcome !== 'approved') throw new Error(`decided ${String(outcome)}`)
        },
      },
    })
    service = ctx.service
    const response = await cibaRequest(ctx, { scope: 'openid', login_hint: 'alice' })
    expect(response.status).toBe(200)
    const { auth_req_id } = (await response.json()) as { auth_req_id: string }
    expect((await pollCiba(ctx, auth_req_id)).status).toBe(200)
  })

  it('#41 review: a missing scope is invalid_request; an unusable notification token and invisible characters in binding_message are refused', async () => {
    const ctx = await cibaSetup()
    expect(await errorOf(await cibaRequest(ctx, { login_hint: 'alice' }))).toEqual({
      status: 400,
      error: 'invalid_request',
    })
    for (const message of ['Pay\u202Egnp.exe', 'Pay\u200Bnow', 'Pay\u2066x\u2069']) {
      expect(
        await errorOf(await cibaRequest(ctx, { scope: 'openid', login_hint: 'alice', binding_message: message })),
      ).toEqual({
        status: 400,
        error: 'invalid_binding_message',
      })
    }
    // Ping clients: a token that cannot travel as a Bearer token is refused at the request.
    const pinging = { scope: 'openid', login_hint: 'alice' }
    expect(
      await errorOf(await cibaRequest(ctx, { ...pinging, client_notification_token: 'tökén with spaces' }, 'pinger')),
    ).toEqual({ status: 400, error: 'invalid_request' })
    expect(
      (await cibaRequest(ctx, { ...pinging, client_notification_token: 'abc-DEF_123.~+/==' }, 'pinger')).status,
    ).toBe(200)
  })

  it("#41 review: a self-registered client's approval page says that nobody reviewed it", async () => {
    const ctx = await cibaSetup({ dynamicClientRegistration: { scopes: ['openid'], grantTypes: [CIBA_GRANT] } })
    const registered = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_types: [CIBA_GRANT], client_name: 'Your Bank' }),
      }),
    )
    expect(registered.status).toBe(201)
    const { client_id, client_secret } = (await registered.json()) as { client_id: string; client_secret: string }
    const response = await ctx.service.fetch(
      form(
        ctx.service.endpoints.backchannelAuthentication,
        { scope: 'openid', login_hint: 'alice', binding_message: 'Pay 42' },
        { authorization: basic(client_id, client_secret) },
      ),
    )
    expect(response.status).toBe(200)
    const notification = ctx.sent.at(-1)
    const browser = new Browser(ctx.service.fetch)
    const signIn = (await browser.navigate(notification?.approvalUrl ?? '')).page as Page
    const page = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
    expect(page.html).toContain('value="approve"')
    expect(page.html).toContain('registered itself: the operator of this service has not reviewed it')
    // A client the host registered gets no such notice.
    const hosts = await startCiba(ctx)
    const other = new Browser(ctx.service.fetch)
    const hostPage = (
      await other.signIn((await other.navigate(hosts.notification.approvalUrl)).page as Page, 'alice', 'alice-password')
    ).page as Page
    expect(hostPage.html).not.toContain('registered itself')
  })
})
