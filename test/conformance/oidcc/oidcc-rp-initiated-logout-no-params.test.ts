/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-no-params`
 * (OIDCCRpInitiatedLogoutNoParams): the end_session request has no parameters
 * (RemoveAllParametersFromEndSessionEndpointRequest). The OP must log the end-user out and show a
 * "you are logged out" page, never redirecting (ExpectSuccessfulLogoutPage). Gatehouse first asks
 * the end-user (RP-Initiated Logout §2: an unverified request should be confirmed); after "Sign
 * out" the signed-out page shows and prompt=none fails.
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

describe('#30 oidcc-rp-initiated-logout-no-params (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-no-params (LO-11, LO-12, LO-14): logged out after the confirmation, no redirect', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request) => {
      request.clear()
    })
    const signedOut = await confirmLogout(suite, expectNoRedirect(result))
    expectSignedOutPage(signedOut)
    await promptNoneMustFail(suite)
  })
})
