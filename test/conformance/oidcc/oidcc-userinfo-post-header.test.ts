/**
 * #30, Basic OP plan, module `oidcc-userinfo-post-header` (OIDCCUserInfoPostHeader,
 * OP-UserInfo-Header): POST to UserInfo with the Bearer header (OIDC Core §5.3.1 allows GET and
 * POST): the same checks as oidcc-userinfo-get.
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, checkUserinfo, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-userinfo-post-header ($method)', (client) => {
  it('#30 oidcc-userinfo-post-header (UI-02, UI-04): POST with the Authorization header', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client, scope: 'openid email' })
    const claims = await checkUserinfo(suite, flow.response.access_token, flow.idToken.sub, 'post-header')
    expect(claims.email).toBe('alice@example.com')
  })
})
