/**
 * #30, Basic OP plan, module `oidcc-prompt-login` (OIDCCPromptLogin, OP-prompt-login): after a
 * first sign-in, a second authorization with `prompt=login` (after WaitForOneSecond) must show the
 * sign-in page again (ExpectSecondLoginPage, OIDC Core §3.1.2.1), and a present auth_time must be
 * later than the first (CheckSecondIdTokenAuthTimeIsLaterIfPresent).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-prompt-login ($method)', (client) => {
  it('#30 oidcc-prompt-login (AUTHZ-25): the end-user signs in again and auth_time moves on', async () => {
    const suite = await createSuite()
    const first = await codeFlow(suite, { client, expectLogin: true })
    suite.clock.advance(1)
    const second = await codeFlow(suite, { client, expectLogin: true, extra: { prompt: 'login' } })
    expect(second.idToken.sub).toBe(first.idToken.sub)
    expect(second.idToken.auth_time).toBeDefined()
    expect(second.idToken.auth_time as number).toBeGreaterThan(first.idToken.auth_time as number)
  })
})
