/**
 * #30, Basic OP plan, module `oidcc-userinfo-post-body` (OIDCCUserInfoPostBody, OP-UserInfo-Body):
 * POST to UserInfo with `access_token` in the form body (RFC 6750 §2.2). The module only warns on
 * an HTTP error; Gatehouse supports it, so the full checks are held: 200, JSON, same `sub`.
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, checkUserinfo, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-userinfo-post-body ($method)', (client) => {
  it('#30 oidcc-userinfo-post-body (UI-03, UI-04): POST with access_token in the body', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client, scope: 'openid email' })
    const claims = await checkUserinfo(suite, flow.response.access_token, flow.idToken.sub, 'post-body')
    expect(claims.email).toBe('alice@example.com')
  })
})
