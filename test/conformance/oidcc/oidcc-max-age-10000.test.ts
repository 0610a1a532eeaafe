/**
 * #30, Basic OP plan, module `oidcc-max-age-10000` (OIDCCMaxAge10000, OP-Req-max_age=10000): a
 * first authorization with `max_age=15000`, a second with `max_age=10000`: no second sign-in;
 * both ID tokens carry auth_time (CheckIdTokenAuthTimeClaimPresentDueToMaxAge), the same one, and
 * the same sub (AbstractOIDCCSameAuthTwiceServerTest).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-max-age-10000 ($method)', (client) => {
  it('#30 oidcc-max-age-10000 (AUTHZ-26, IDT-07): no second sign-in, auth_time present and unchanged', async () => {
    const suite = await createSuite()
    const first = await codeFlow(suite, { client, expectLogin: true, extra: { max_age: '15000' } })
    expect(typeof first.idToken.auth_time).toBe('number')
    suite.clock.advance(60)
    const second = await codeFlow(suite, { client, expectLogin: false, extra: { max_age: '10000' } })
    expect(typeof second.idToken.auth_time).toBe('number')
    expect(second.idToken.auth_time).toBe(first.idToken.auth_time)
    expect(second.idToken.sub).toBe(first.idToken.sub)
  })
})
