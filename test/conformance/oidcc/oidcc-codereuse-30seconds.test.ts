/**
 * #30, Basic OP plan, module `oidcc-codereuse-30seconds` (OIDCCAuthCodeReuseAfter30Seconds,
 * OP-OAuth-2nd-30s, also covering OP-OAuth-2nd-Revokes): 30 seconds after the first redemption
 * (WaitFor30Seconds) the code is redeemed again: it MUST get 400 JSON `invalid_grant`, and the
 * access token of the first use should then fail at UserInfo with a 4xx (EnsureHttpStatusCodeIs4xx,
 * RFC 6749 §4.1.2). Gatehouse revokes the whole grant, refresh token included.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite, redeem } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-codereuse-30seconds ($method)', (client) => {
  it('#30 oidcc-codereuse-30seconds (CODE-02, CODE-03): invalid_grant after 30 s, first access token revoked', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client })
    suite.clock.advance(30)
    const again = await redeem(suite, flow.params, flow.request, client)
    expect(again.status).toBe(400)
    expect(again.headers.get('content-type')).toMatch(/^application\/json\b/)
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' })

    const userinfo = await suite.fetch(
      new Request(suite.as.userinfo_endpoint as string, {
        headers: { authorization: `Bearer ${flow.response.access_token}` },
      }),
    )
    expect(userinfo.status).toBeGreaterThanOrEqual(400)
    expect(userinfo.status).toBeLessThan(500)
    if (flow.response.refresh_token !== undefined) {
      const refreshed = await oauth.refreshTokenGrantRequest(
        suite.as,
        client.client,
        client.auth,
        flow.response.refresh_token,
        suite.opts,
      )
      expect(refreshed.status).toBe(400)
      expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' })
    }
  })
})
