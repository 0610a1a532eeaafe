/**
 * #30, Basic OP plan, module `oidcc-prompt-none-logged-in` (OIDCCPromptNoneLoggedIn,
 * OP-prompt-none-LoggedIn): after a first sign-in, a second authorization with `prompt=none`
 * returns a code with no UI; the second ID token has the same `sub` and, if present, the same
 * `auth_time` (AbstractOIDCCSameAuthTwiceServerTest: CheckIdTokenAuthTimeClaimsSameIfPresent,
 * CheckIdTokenSubConsistentForSecondAuthorization).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-prompt-none-logged-in ($method)', (client) => {
  it('#30 oidcc-prompt-none-logged-in (AUTHZ-24): a code with no UI, same sub and auth_time', async () => {
    const suite = await createSuite()
    const first = await codeFlow(suite, { client, expectLogin: true })
    suite.clock.advance(5)
    const second = await codeFlow(suite, { client, expectLogin: false, extra: { prompt: 'none' } })
    expect(second.idToken.sub).toBe(first.idToken.sub)
    expect(second.idToken.auth_time).toBe(first.idToken.auth_time)
  })
})
