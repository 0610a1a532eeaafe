/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-no-id-token-hint`
 * (OIDCCRpInitiatedLogoutNoIdTokenHint): post_logout_redirect_uri and state, no id_token_hint
 * (RemoveIdTokenHintFromEndSessionEndpointRequest). The OP must not redirect and shows an error or
 * a confirmation (ExpectIdTokenHintRequiredErrorPage, RP-Initiated Logout §2: the URI is only
 * honoured with a hint).
 */
import { describe, expect, it } from 'vitest'
import { createSuite, expectNoRedirect, loginThenLogout } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-no-id-token-hint (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-no-id-token-hint (LO-07): no redirect without a hint', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request) => {
      request.delete('id_token_hint')
    })
    const page = expectNoRedirect(result)
    expect(page.status).toBe(400)
    expect(page.html).toContain('id_token_hint')
  })
})
