/**
 * #30, Basic OP plan, module `oidcc-prompt-none-not-logged-in` (OIDCCPromptNoneNotLoggedIn,
 * OP-prompt-none-NotLoggedIn): `prompt=none` from a browser without a session (and a 128-character
 * state, which must come back intact). Expected: a redirect with an error that needs a user
 * interface (CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface, OIDC Core
 * §3.1.2.6), correct iss, no code, and no page.
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, buildRequest, checkErrorCallback, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-prompt-none-not-logged-in ($method)', (client) => {
  it('#30 oidcc-prompt-none-not-logged-in (AUTHZ-23, AUTHZ-03, AUTHZ-04): login_required redirect with the long state', async () => {
    const suite = await createSuite()
    const request = await buildRequest(suite.as, { client, stateLength: 128, extra: { prompt: 'none' } })
    const result = await suite.browser.navigate(request.url.href)
    expect(result.page).toBeUndefined()
    const error = checkErrorCallback(suite, result.callback as URL, request)
    expect(['interaction_required', 'login_required', 'account_selection_required', 'consent_required']).toContain(
      error,
    )
    expect(result.callback?.searchParams.get('state')).toHaveLength(128)
  })
})
