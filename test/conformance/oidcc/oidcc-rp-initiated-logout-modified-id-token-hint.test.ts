/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-modified-id-token-hint`
 * (OIDCCRpInitiatedLogoutModifiedIdTokenHint): the id_token_hint is the ID token changed to
 * `alg: none` with its signature removed (ChangeIdTokenToAlgNone). The OP must not redirect and
 * shows an error or a confirmation (ExpectInvalidIdTokenHintErrorPage); the session stays.
 */
import { describe, expect, it } from 'vitest'
import { codeFlow, createSuite, expectNoRedirect, loginThenLogout } from './suite.ts'

function algNone(idToken: string): string {
  const [header, payload] = idToken.split('.') as [string, string]
  const decoded = JSON.parse(atob(header.replace(/-/g, '+').replace(/_/g, '/'))) as Record<string, unknown>
  const changed = btoa(JSON.stringify({ ...decoded, alg: 'none' }))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
  return `${changed}.${payload}.`
}

describe('#30 oidcc-rp-initiated-logout-modified-id-token-hint (client_secret_basic)', () => {
  it('#30 oidcc-rp-initiated-logout-modified-id-token-hint (LO-08): alg none is refused, no redirect', async () => {
    const suite = await createSuite()
    const { result } = await loginThenLogout(suite, (request, idToken) => {
      request.set('id_token_hint', algNone(idToken))
    })
    const page = expectNoRedirect(result)
    expect(page.status).toBe(400)
    expect(page.html).toContain('id_token_hint')
    // Nothing ended: the end-user is still signed in.
    await codeFlow(suite, { expectLogin: false, extra: { prompt: 'none' } })
  })
})
