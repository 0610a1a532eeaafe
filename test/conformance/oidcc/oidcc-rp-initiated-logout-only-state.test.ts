/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-only-state`
 * (OIDCCRpInitiatedLogoutOnlyState): only `state` (RemoveIdTokenHintFromEndSessionEndpointRequest,
 * RemovePostLogoutRedirectUriFromEndSessionEndpointRequest). The OP must log the end-user out and
 * show the signed-out page, never redirecting (ExpectSuccessfulLogoutPage). Without a hint
 * Gatehouse asks first (RP-Initiated Logout §2); after "Sign out" the session is gone.
 */
import { describe, it } from 'vitest'
import {
  confirmLogout,
  createSuite,
  expectNoRedirect,
  expectSignedOutPage,
  loginThenLogout,
  promptNoneMustFail,
} from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-only-state (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-only-state (LO-11, LO-12, LO-14): logged out after the confirmation, no redirect', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request) => {
      request.delete('id_token_hint')
      request.delete('post_logout_redirect_uri')
    })
    const signedOut = await confirmLogout(suite, expectNoRedirect(result))
    expectSignedOutPage(signedOut)
    await promptNoneMustFail(suite)
  })
})
