/**
 * #30, Basic OP plan, module `oidcc-userinfo-get` (OIDCCUserInfoGet, OP-UserInfo-Endpoint): GET
 * UserInfo with the Bearer header: 200, a JSON content type, `sub` equal to the ID token's, the
 * standard claims well typed (AbstractOIDCCUserInfoTest).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, checkUserinfo, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-userinfo-get ($method)', (client) => {
  it('#30 oidcc-userinfo-get (UI-01, UI-04, UI-05): GET with the Authorization header', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client, scope: 'openid email' })
    const claims = await checkUserinfo(suite, flow.response.access_token, flow.idToken.sub, 'get')
    expect(claims.email).toBe('alice@example.com')
  })
})
