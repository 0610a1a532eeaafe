/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-no-state`
 * (OIDCCRpInitiatedLogoutNoState): id_token_hint and post_logout_redirect_uri, no state
 * (RemoveStateFromEndSessionEndpointRequest). The OP must redirect to the post_logout_redirect_uri
 * without a state (CheckNoPostLogoutState) and no other parameter
 * (CheckForUnexpectedParametersInPostLogoutRedirect); then prompt=none must fail.
 */
import { describe, expect, it } from 'vitest'
import { POST_LOGOUT_REDIRECT_URI, createSuite, loginThenLogout, promptNoneMustFail } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-no-state (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-no-state (LO-04, LO-14): redirect without state, then prompt=none fails', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request) => {
      request.delete('state')
    })
    const callback = result.callback as URL
    expect(callback, 'no redirect to the post_logout_redirect_uri').toBeDefined()
    expect(callback.href).toBe(POST_LOGOUT_REDIRECT_URI)
    expect([...callback.searchParams.keys()]).toEqual([])
    await promptNoneMustFail(suite)
  })
})
