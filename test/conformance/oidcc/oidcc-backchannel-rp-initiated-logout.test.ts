/**
 * #30, Back-Channel Logout OP plan (`oidcc-backchannel-rp-initiated-logout-certification-test-plan`,
 * OIDCCBackchannelRpInitiatedLogoutTestPlan), module `oidcc-backchannel-rp-initiated-logout`
 * (OIDCCBackChannelRpInitiatedLogout, suite commit c6ef557; variants server_metadata=discovery,
 * client_secret_basic, response_mode=default). A normal code flow, then the browser goes to
 * end_session_endpoint with id_token_hint, post_logout_redirect_uri and state. Asserted, as the
 * module does:
 * - the backchannel_logout_uri receives a POST whose form holds only `logout_token`
 *   (ExtractLogoutTokenFromBackchannelLogoutRequest, OIDCBCL-2.5; CheckForUnexpectedParameters…)
 * - the token's signature verifies with the server's JWKS (ValidateLogoutTokenSignature)
 * - iss is the issuer, aud the client id, iat not in the future (5 min skew), jti present, events
 *   exactly one entry, the back-channel logout event with an empty object (ValidateLogoutTokenClaims)
 * - sub and sid equal the ID token's (CheckIdTokenSubMatchesLogoutToken, CheckIdTokenSidMatches…)
 * - no nonce (CheckLogoutTokenNoNonce); sub or sid present (CheckLogoutTokenHasSubOrSid)
 * - the redirect to post_logout_redirect_uri carries the same state and nothing else
 *   (CheckPostLogoutState, CheckForUnexpectedParametersInPostLogoutRedirect)
 * - then prompt=none must fail: the end-user is logged out
 * With dynamic registration the module also registers `backchannel_logout_uri` and
 * `backchannel_logout_session_required: true` (AddBackchannelLogout…ToDynamicRegistrationRequest).
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import { signIn } from '../../helpers/flow.ts'
import { ISSUER, PLRU } from '../../helpers/service.ts'
import { LOGOUT_EVENT, WEB_BC, backchannelSetup, isSignedIn, rpLogout, until } from './backchannel_harness.ts'

describe('#30 oidcc-backchannel-rp-initiated-logout (client_secret_basic)', () => {
  it('#30 oidcc-backchannel-rp-initiated-logout: a valid logout token reaches backchannel_logout_uri, the browser returns with state, prompt=none then fails', async () => {
    const ctx = await backchannelSetup({ dynamicClientRegistration: { scopes: ['openid'] } })
    const { result } = await signIn(ctx, { scope: 'openid' })
    const idToken = decodeJwt(result.id_token as string)
    const response = await rpLogout(ctx, result.id_token as string)
    // CheckPostLogoutState, CheckForUnexpectedParametersInPostLogoutRedirect.
    const back = new URL(response.headers.get('location') as string)
    expect(`${back.origin}${back.pathname}`).toBe(PLRU)
    expect([...back.searchParams]).toEqual([['state', 'bye']])

    await until(() => ctx.receiver.deliveries.some((d) => d.url === WEB_BC))
    const request = ctx.receiver.deliveries.find((d) => d.url === WEB_BC)
    expect(request?.method).toBe('POST')
    expect([...(request?.body.keys() ?? [])]).toEqual(['logout_token'])
    const token = request?.body.get('logout_token') as string

    // ValidateLogoutTokenSignature: the server's JWKS, as the suite fetched it from jwks_uri.
    const jwks = await (await ctx.service.fetch(new Request(ctx.as.jwks_uri as string))).json()
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
      currentDate: new Date(ctx.clock.now() * 1000),
    })
    expect(decodeProtectedHeader(token).alg).not.toBe('none')
    // ValidateLogoutTokenClaims.
    expect(payload.iss).toBe(ISSUER)
    expect(Array.isArray(payload.aud) ? payload.aud : [payload.aud]).toContain('web')
    expect(payload.iat).toBeLessThanOrEqual(ctx.clock.now() + 300)
    expect(typeof payload.jti).toBe('string')
    expect(Object.keys(payload.events as object)).toEqual([LOGOUT_EVENT])
    expect((payload.events as Record<string, unknown>)[LOGOUT_EVENT]).toEqual({})
    // CheckIdTokenSubMatchesLogoutToken, CheckIdTokenSidMatchesLogoutToken.
    expect(payload.sub).toBe(idToken.sub)
    expect(payload.sid).toBe(idToken.sid)
    // CheckLogoutTokenNoNonce, CheckLogoutTokenHasSubOrSid.
    expect(payload).not.toHaveProperty('nonce')
    expect(payload.sub !== undefined || payload.sid !== undefined).toBe(true)

    expect(await isSignedIn(ctx)).toBe(false)

    // With dynamic registration, the module's registration request is accepted as sent.
    const registered = await ctx.service.fetch(
      new Request(ctx.as.registration_endpoint as string, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          redirect_uris: ['https://suite.example.test/test/a/gatehouse/callback'],
          backchannel_logout_uri: 'https://suite.example.test/test/a/gatehouse/backchannel_logout',
          backchannel_logout_session_required: true,
        }),
      }),
      { address: '203.0.113.5' },
    )
    expect(registered.status).toBe(201)
    expect(await registered.json()).toMatchObject({
      backchannel_logout_uri: 'https://suite.example.test/test/a/gatehouse/backchannel_logout',
      backchannel_logout_session_required: true,
    })
  })
})
