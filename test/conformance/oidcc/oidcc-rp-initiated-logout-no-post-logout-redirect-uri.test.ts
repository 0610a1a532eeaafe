/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-no-post-logout-redirect-uri`
 * (OIDCCRpInitiatedLogoutNoPostLogoutRedirectUri): id_token_hint and state, no
 * post_logout_redirect_uri (RemovePostLogoutRedirectUriFromEndSessionEndpointRequest). The OP must
 * log the end-user out and show the signed-out page, never redirecting (ExpectSuccessfulLogoutPage).
 * The hint names the current session, so no confirmation is needed.
 */
import { describe, it } from 'vitest'
import { createSuite, expectNoRedirect, expectSignedOutPage, loginThenLogout, promptNoneMustFail } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-no-post-logout-redirect-uri (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-no-post-logout-redirect-uri (LO-11, LO-14): the signed-out page, no redirect', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request) => {
      request.delete('post_logout_redirect_uri')
    })
    expectSignedOutPage(expectNoRedirect(result))
    await promptNoneMustFail(suite)
  })
})
