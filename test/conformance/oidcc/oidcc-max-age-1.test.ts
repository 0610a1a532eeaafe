/**
 * #30, Basic OP plan, module `oidcc-max-age-1` (OIDCCMaxAge1, OP-Req-max_age=1): after a first
 * sign-in and WaitFor2Seconds, an authorization with `max_age=1` must ask the end-user to sign in
 * again (ExpectSecondLoginPage); auth_time is then REQUIRED (CheckIdTokenAuthTimeClaimPresentDueToMaxAge,
 * OIDC Core §2), later than the first (CheckSecondIdTokenAuthTimeIsLaterIfPresent) and recent
 * (CheckIdTokenAuthTimeIsRecentIfPresent).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-max-age-1 ($method)', (client) => {
  it('#30 oidcc-max-age-1 (AUTHZ-26, IDT-07): sign-in again, auth_time present, later and recent', async () => {
    const suite = await createSuite()
    const first = await codeFlow(suite, { client, expectLogin: true })
    suite.clock.advance(2)
    const second = await codeFlow(suite, { client, expectLogin: true, extra: { max_age: '1' } })
    expect(typeof second.idToken.auth_time).toBe('number')
    expect(second.idToken.auth_time as number).toBeGreaterThan(first.idToken.auth_time as number)
    expect(suite.clock.now() - (second.idToken.auth_time as number)).toBeLessThanOrEqual(5)
  })
})
