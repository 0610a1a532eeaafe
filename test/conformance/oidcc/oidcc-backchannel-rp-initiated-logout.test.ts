/**
 * #30, Back-Channel Logout OP plan (`oidcc-backchannel-rp-initiated-logout-certification-test-plan`,
 * OIDCCBackchannelRpInitiatedLogoutTestPlan), module `oidcc-backchannel-rp-initiated-logout`
 * (OIDCCBackChannelRpInitiatedLogout; suite source read at commits a288bed and c3aa7e2; variants server_metadata=discovery,
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
 * `backchannel_logout_session_required: true` (AddBackchannelLogout…ToDynamicRegistrationRequest)
 * and its post_logout_redirect_uris: both variants run here, static (`web`) then dynamic.
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import * as oauth from 'oauth4webapi'
import type { Page } from '../../helpers/browser.ts'
import { authorizationUrl, redeemCallback, signIn } from '../../helpers/flow.ts'
import { ISSUER, PLRU } from '../../helpers/service.ts'
import { LOGOUT_EVENT, WEB_BC, backchannelSetup, isSignedIn, rpLogout, until } from './suite.ts'

const BASE = 'https://rp.example.test/test/a/gatehouse'

/**
 * The dynamic-client variant: registration with backchannel_logout_uri, session required and
 * post_logout_redirect_uris; sign-in and consent; logout (a self-registered client's return URI
 * waits for the page naming its host, which the suite's browser confirms); the same checks.
 */
async function dynamicVariant(ctx: Awaited<ReturnType<typeof backchannelSetup>>): Promise<void> {
  const registered = await ctx.service.fetch(
    new Request(ctx.as.registration_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: [`${BASE}/callback`],
        post_logout_redirect_uris: [`${BASE}/post_logout_redirect`],
        backchannel_logout_uri: `${BASE}/backchannel_logout`,
        backchannel_logout_session_required: true,
        token_endpoint_auth_method: 'client_secret_basic',
      }),
    }),
    { address: '203.0.113.5' },
  )
  expect(registered.status).toBe(201)
  const info = await registered.json()
  expect(info).toMatchObject({
    backchannel_logout_uri: `${BASE}/backchannel_logout`,
    backchannel_logout_session_required: true,
    post_logout_redirect_uris: [`${BASE}/post_logout_redirect`],
  })
  const client: oauth.Client = { client_id: info.client_id }
  const request = await authorizationUrl(ctx.as, {
    clientId: info.client_id,
    redirectUri: `${BASE}/callback`,
    scope: 'openid',
  })
  const first = await ctx.browser.navigate(request.url.href)
  const consent = await ctx.browser.signIn(first.page as Page, 'alice', 'alice-password')
  const callback = (await ctx.browser.submit(consent.page as Page, { decision: 'allow' })).callback as URL
  const { response } = await redeemCallback(ctx, callback, request, {
    client,
    auth: oauth.ClientSecretBasic(info.client_secret),
    redirectUri: `${BASE}/callback`,
  })
  const result = await oauth.processAuthorizationCodeResponse(ctx.as, client, response, {
    expectedNonce: request.nonce as string,
  })
  const idToken = decodeJwt(result.id_token as string)

  const logout = new URL(ctx.as.end_session_endpoint as string)
  logout.search = new URLSearchParams({
    id_token_hint: result.id_token as string,
    post_logout_redirect_uri: `${BASE}/post_logout_redirect`,
    state: 'dyn',
  }).toString()
  const confirm = await ctx.browser.navigate(logout.href)
  const back = (await ctx.browser.submit(confirm.page as Page, { decision: 'yes' })).callback as URL
  expect(back.href).toBe(`${BASE}/post_logout_redirect?state=dyn`)
  await until(() => ctx.receiver.deliveries.some((d) => d.url === `${BASE}/backchannel_logout`))
  const token = ctx.receiver.deliveries.find((d) => d.url === `${BASE}/backchannel_logout`)?.body.get('logout_token')
  const jwks = await (await ctx.service.fetch(new Request(ctx.as.jwks_uri as string))).json()
  const { payload } = await jwtVerify(token as string, createLocalJWKSet(jwks), {
    issuer: ISSUER,
    audience: info.client_id,
    currentDate: new Date(ctx.clock.now() * 1000),
  })
  expect(payload).toMatchObject({ sub: idToken.sub, sid: idToken.sid, events: { [LOGOUT_EVENT]: {} } })
  expect(payload).not.toHaveProperty('nonce')
  expect(await isSignedIn(ctx)).toBe(false)
}

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

    // client_registration=dynamic_client: the module registers its URIs itself, then runs the same flow.
    await dynamicVariant(ctx)
  })
})
