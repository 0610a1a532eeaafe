/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-bad-id-token-hint`
 * (OIDCCRpInitiatedLogoutBadIdTokenHint): the id_token_hint is an ID token the suite made itself
 * (GenerateFakeIdTokenClaims, SignFakeIdToken with GenerateJWKsFromClientSecret: HS256 over the
 * client secret). The OP must not redirect and shows an error or a confirmation
 * (ExpectInvalidIdTokenHintErrorPage).
 */
import { SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { CLIENT, codeFlow, createSuite, expectNoRedirect, loginThenLogout } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-bad-id-token-hint (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-bad-id-token-hint (LO-08): a hint not signed by the OP is refused, no redirect', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, async (request, idToken) => {
      const claims = JSON.parse(atob((idToken.split('.')[1] as string).replace(/-/g, '+').replace(/_/g, '/')))
      const fake = await new SignJWT({ ...claims, iat: suite.clock.now(), exp: suite.clock.now() + 300 })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .sign(new TextEncoder().encode(CLIENT.secret))
      request.set('id_token_hint', fake)
    })
    const page = expectNoRedirect(result)
    expect(page.status).toBe(400)
    expect(page.html).toContain('id_token_hint')
    await codeFlow(suite, { expectLogin: false, extra: { prompt: 'none' } })
  })
})
