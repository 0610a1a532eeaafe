/**
 * #30, Basic OP plan, module `oidcc-alternate-happy-flow` (OIDCCAlternateHappyFlow, a subclass of
 * oidcc-scope-email): scope `openid email` sent reversed (ReverseScopeOrderInAuthorizationEndpointRequest,
 * RFC 6749 §3.3: order does not matter) and the query parameters in reverse order
 * (BuildPlainRedirectToAuthorizationEndpointReorderedParams). The flow must succeed and the email
 * claims should be in UserInfo.
 */
import { describe, expect, it } from 'vitest'
import {
  CLIENT_AUTH_VARIANTS,
  buildRequest,
  checkCodeCallback,
  checkTokenResponse,
  checkUserinfo,
  createSuite,
  redeem,
  runAuthorization,
} from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-alternate-happy-flow ($method)', (client) => {
  it('#30 oidcc-alternate-happy-flow (AUTHZ-06, UI-08): reversed scope and parameter order succeed', async () => {
    const suite = await createSuite()
    const request = await buildRequest(suite.as, { client, scope: 'email openid' })
    const reversed = [...request.params].sort(([a], [b]) => (a < b ? 1 : a > b ? -1 : 0))
    request.url.search = new URLSearchParams(reversed).toString()
    expect(request.url.search.startsWith('?state=')).toBe(true)
    const { callback } = await runAuthorization(suite.browser, request.url)
    const params = checkCodeCallback(suite, callback, request, client)
    const tokens = await checkTokenResponse(suite, await redeem(suite, params, request, client), request, client)
    expect((tokens.response.scope ?? '').split(' ').sort()).toEqual(['email', 'openid'])
    const claims = await checkUserinfo(suite, tokens.response.access_token, tokens.idToken.sub)
    expect(claims.email).toBe('alice@example.com')
    expect(claims.email_verified).toBe(true)
  })
})
