/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-bad-post-logout-redirect-uri`
 * (OIDCCRpInitiatedLogoutBadLogoutRedirectUri): the post_logout_redirect_uri is the suite's
 * unregistered `…/bad_post_logout_redirect_uri` (AddBadPostLogoutRedirectUriToEndSessionEndpointRequest).
 * The OP must not redirect (to it or to the registered one) and shows an error or a confirmation
 * (ExpectPostLogoutRedirectUriNotRegisteredErrorPage, RP-Initiated Logout §2, §3).
 */
import { describe, expect, it } from 'vitest'
import { BASE_URL, createSuite, expectNoRedirect, loginThenLogout } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-bad-post-logout-redirect-uri (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-bad-post-logout-redirect-uri (LO-05): an error page, no redirect', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request) => {
      request.set('post_logout_redirect_uri', `${BASE_URL}/bad_post_logout_redirect_uri`)
    })
    const page = expectNoRedirect(result)
    expect(page.status).toBe(400)
    expect(page.html).toContain('post_logout_redirect_uri')
  })
})
