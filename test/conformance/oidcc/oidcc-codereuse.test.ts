/**
 * #30, Basic OP plan, module `oidcc-codereuse` (OIDCCAuthCodeReuse, OP-OAuth-2nd): the code is
 * redeemed a second time right after the first. Expected 400, JSON, `invalid_grant`
 * (AbstractOIDCCAuthCodeReuse; a 200 is only a WARN there, held as a failure here). RFC 6749
 * §4.1.2: the tokens of the first use are revoked too (UserInfo refuses the first access token).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite, redeem } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-codereuse ($method)', (client) => {
  it('#30 oidcc-codereuse (CODE-02, CODE-03): the second use fails with invalid_grant and revokes the first tokens', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client })
    const again = await redeem(suite, flow.params, flow.request, client)
    expect(again.status).toBe(400)
    expect(again.headers.get('content-type')).toMatch(/^application\/json\b/)
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' })
    const userinfo = await suite.fetch(
      new Request(suite.as.userinfo_endpoint as string, {
        headers: { authorization: `Bearer ${flow.response.access_token}` },
      }),
    )
    expect(userinfo.status).toBe(401)
  })
})
