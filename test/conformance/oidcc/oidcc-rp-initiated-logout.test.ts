/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout` (OIDCCRpInitiatedLogout):
 * after a sign-in, the end_session request with id_token_hint, post_logout_redirect_uri and state
 * must redirect to the post_logout_redirect_uri with the same state (CheckPostLogoutState) and no
 * other parameter (CheckForUnexpectedParametersInPostLogoutRedirect, a WARN, held here); then an
 * authorization with prompt=none must fail with an error that needs a UI
 * (CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface).
 */
import { describe, expect, it } from 'vitest'
import { POST_LOGOUT_REDIRECT_URI, createSuite, loginThenLogout, promptNoneMustFail } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout (LO-03, LO-14): redirect with state only, then prompt=none fails', async () => {
    const suite = await createSuite()
    const { request, result } = await loginThenLogout(suite)
    const callback = result.callback as URL
    expect(callback, 'no redirect to the post_logout_redirect_uri').toBeDefined()
    expect(callback.origin + callback.pathname).toBe(POST_LOGOUT_REDIRECT_URI)
    expect(callback.searchParams.get('state')).toBe(request.get('state'))
    expect([...callback.searchParams.keys()]).toEqual(['state'])
    await promptNoneMustFail(suite)
  })
})
