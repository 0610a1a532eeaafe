/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri`
 * (OIDCCRpInitiatedLogoutQueryAddedToLogoutRedirectUri): the registered post_logout_redirect_uri
 * with `?foo=bar` added (AddPostLogoutRedirectUriWithQueryAddedToEndSessionEndpointRequest). It is
 * not the registered URI (exact match, RP-Initiated Logout §3): no redirect, an error or a
 * confirmation (ExpectPostLogoutRedirectUriNotRegisteredErrorPage).
 */
import { describe, expect, it } from 'vitest'
import { POST_LOGOUT_REDIRECT_URI, createSuite, expectNoRedirect, loginThenLogout } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri (LO-06): no redirect', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request) => {
      request.set('post_logout_redirect_uri', `${POST_LOGOUT_REDIRECT_URI}?foo=bar`)
    })
    const page = expectNoRedirect(result)
    expect(page.status).toBe(400)
    expect(page.html).toContain('post_logout_redirect_uri')
  })
})
