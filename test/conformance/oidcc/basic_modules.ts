/**
 * The modules of the Basic OP plan (`OIDCCBasicTestPlan.testModulesWithVariants()`, 38 modules at
 * `SUITE_VERSION` (suite.ts)), each asserting what the suite's module asserts (FAILURE conditions as
 * failures; WARNING ones too where Gatehouse meets them), runnable in either response mode: the
 * Form Post Basic plan (`OIDCCFormPostBasicTestPlan`) is exactly this list with ResponseMode
 * form_post (#30). A module's test file calls {@link runBasicModule} with its name.
 */
import * as oauth from 'oauth4webapi'
import { expect } from 'vitest'
import {
  CLIENT,
  CLIENT_POST,
  type Driver,
  ISSUER,
  REDIRECT_URI,
  type ResponseModeVariant,
  SUITE_USER,
  type SuiteClient,
  checkStandardClaimTypes,
  createDriver,
  expectServerBasics,
  unsignedRequestObject,
} from './suite.ts'

type Suite = Driver
type Module = (suite: Suite) => Promise<void>

/** oidcc-server and the modules that only add parameters to its flow: the flow must succeed. */
async function happyFlow(suite: Suite, overrides: Record<string, string | null> = {}) {
  const result = await suite.flow(overrides)
  expectServerBasics(result.params, result.tokens)
  expect(result.params.get('state')).toBe(result.sent.state ?? null)
  // EnsureIdTokenDoesNotContainName (WARNING): scope openid alone puts no profile claim in it.
  if (!('claims' in overrides) && (overrides.scope ?? 'openid') === 'openid') expect(result.claims.name).toBeUndefined()
  expect(result.claims.sub.length).toBeLessThanOrEqual(255)
  checkStandardClaimTypes(result.claims)
  const info = await suite.userinfoClaims(result.tokens, result.claims.sub)
  checkStandardClaimTypes(info)
  return { ...result, info }
}

/** AbstractOIDCCReturnedClaimsServerTest: the scopes are in scopes_supported, their claims in UserInfo. */
async function scopeModule(suite: Suite, scope: string, expected: string[]) {
  for (const name of scope.split(' ')) expect(suite.as.scopes_supported).toContain(name)
  const { info } = await happyFlow(suite, { scope })
  for (const claim of expected) expect(info[claim], claim).toBeDefined()
}

/** The second authorization of a module that needs no UI: same sub, same auth_time. */
async function withoutUi(
  suite: Suite,
  extra: (first: Awaited<ReturnType<Suite['flow']>>) => Record<string, string | null>,
) {
  const first = await suite.flow()
  suite.clock.advance(5)
  const sent = await suite.request({ prompt: 'none', ...extra(first) })
  const params = await suite.authorize(sent, { login: false })
  const second = await suite.redeem(params, sent)
  expect(second.claims.sub).toBe(first.claims.sub)
  expect(second.claims.auth_time).toBe(first.claims.auth_time)
}

/** A second authorization that must show the login page again; auth_time must then be later. */
async function reauthenticates(suite: Suite, overrides: Record<string, string | null>, wait: number) {
  const first = await suite.flow()
  suite.clock.advance(wait)
  const sent = await suite.request(overrides)
  const outcome = await suite.navigate(sent, { login: false })
  if ('params' in outcome) throw new Error('the end-user was not asked to sign in again')
  expect(outcome.page.html).toMatch(/name="password"/)
  const params = await suite.authorize(sent)
  const second = await suite.redeem(params, sent)
  expect(second.claims.auth_time).toBeGreaterThan(first.claims.auth_time as number)
  expect(second.claims.sub).toBe(first.claims.sub)
  return second
}

export const BASIC_MODULES: Record<string, Module> = {
  'oidcc-server': async (suite) => {
    await happyFlow(suite)
  },
  'oidcc-response-type-missing': async (suite) => {
    const sent = await suite.request({ response_type: null })
    const params = await suite.authorize(sent, { login: false })
    expect(['invalid_request', 'unsupported_response_type']).toContain(params.get('error'))
    expect(params.get('state')).toBe(sent.state)
    expect(params.get('iss')).toBe(ISSUER)
    expect(params.get('code')).toBeNull()
  },
  'oidcc-idtoken-signature': async (suite) => {
    const { tokens } = await suite.flow()
    const header = JSON.parse(Buffer.from((tokens.id_token as string).split('.')[0] as string, 'base64url').toString())
    expect(header.alg).toBe('RS256')
    expect(header.kid).toEqual(expect.any(String))
  },
  'oidcc-idtoken-unsigned': async (suite) => {
    // Skipped by the suite when alg none is not offered (Gatehouse never signs ID tokens with none).
    expect(suite.as.id_token_signing_alg_values_supported).not.toContain('none')
  },
  'oidcc-userinfo-get': async (suite) => {
    const { tokens, claims } = await suite.flow()
    const response = await suite.userinfo(tokens.access_token, 'get')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect((await response.json()).sub).toBe(claims.sub)
  },
  'oidcc-userinfo-post-header': async (suite) => {
    const { tokens, claims } = await suite.flow()
    const response = await suite.userinfo(tokens.access_token, 'post-header')
    expect(response.status).toBe(200)
    expect((await response.json()).sub).toBe(claims.sub)
  },
  'oidcc-userinfo-post-body': async (suite) => {
    const { tokens, claims } = await suite.flow()
    const response = await suite.userinfo(tokens.access_token, 'post-body')
    expect(response.status).toBe(200)
    expect((await response.json()).sub).toBe(claims.sub)
  },
  'oidcc-ensure-request-without-nonce-succeeds-for-code-flow': async (suite) => {
    const result = await suite.flow({ nonce: null })
    expect(result.claims.nonce).toBeUndefined()
  },
  'oidcc-scope-profile': (suite) => scopeModule(suite, 'openid profile', ['name', 'given_name', 'family_name']),
  'oidcc-scope-email': (suite) => scopeModule(suite, 'openid email', ['email', 'email_verified']),
  'oidcc-scope-address': (suite) => scopeModule(suite, 'openid address', ['address']),
  'oidcc-scope-phone': (suite) => scopeModule(suite, 'openid phone', ['phone_number', 'phone_number_verified']),
  'oidcc-scope-all': (suite) =>
    scopeModule(suite, 'openid profile email address phone', ['name', 'email', 'address', 'phone_number']),
  'oidcc-alternate-happy-flow': async (suite) => {
    // Scopes in another order, parameters in another order: must succeed.
    const sent = await suite.request({ scope: 'email openid profile' })
    const reordered = new URL(sent.url.origin + sent.url.pathname)
    for (const [name, value] of [...sent.url.searchParams].reverse()) reordered.searchParams.append(name, value)
    const params = await suite.authorize({ ...sent, url: reordered })
    const { tokens, claims } = await suite.redeem(params, sent)
    expectServerBasics(params, tokens)
    expect((await suite.userinfoClaims(tokens, claims.sub)).email).toBe(SUITE_USER.email)
  },
  'oidcc-display-page': async (suite) => {
    await happyFlow(suite, { display: 'page' })
  },
  'oidcc-display-popup': async (suite) => {
    await happyFlow(suite, { display: 'popup' })
  },
  'oidcc-prompt-login': async (suite) => {
    await reauthenticates(suite, { prompt: 'login' }, 2)
  },
  'oidcc-prompt-none-not-logged-in': async (suite) => {
    const state = 'x'.repeat(128)
    const sent = await suite.request({ prompt: 'none', state })
    const params = await suite.authorize(sent, { login: false })
    expect(['login_required', 'interaction_required', 'account_selection_required', 'consent_required']).toContain(
      params.get('error'),
    )
    expect(params.get('state')).toBe(state)
    expect(params.get('iss')).toBe(ISSUER)
    expect(params.get('code')).toBeNull()
  },
  'oidcc-prompt-none-logged-in': (suite) => withoutUi(suite, () => ({})),
  'oidcc-max-age-1': async (suite) => {
    const second = await reauthenticates(suite, { max_age: '1' }, 2)
    expect(second.claims.auth_time).toBe(suite.clock.now())
  },
  'oidcc-max-age-10000': async (suite) => {
    const first = await suite.flow({ max_age: '15000' })
    suite.clock.advance(5)
    const sent = await suite.request({ max_age: '10000' })
    const second = await suite.redeem(await suite.authorize(sent, { login: false }), sent)
    expect(first.claims.auth_time).toEqual(expect.any(Number))
    expect(second.claims.auth_time).toBe(first.claims.auth_time)
    expect(second.claims.sub).toBe(first.claims.sub)
  },
  'oidcc-ensure-request-with-unknown-parameter-succeeds': async (suite) => {
    await happyFlow(suite, { extra: 'foobar' })
  },
  'oidcc-id-token-hint': (suite) => withoutUi(suite, (first) => ({ id_token_hint: first.tokens.id_token as string })),
  'oidcc-login-hint': async (suite) => {
    const sent = await suite.request({ login_hint: `buffy@${new URL(ISSUER).hostname}` })
    const outcome = await suite.navigate(sent, { login: false })
    if ('params' in outcome) throw new Error('no login page')
    expect(outcome.page.status).toBe(200)
    const params = await suite.authorize(sent)
    expectServerBasics(params, (await suite.redeem(params, sent)).tokens)
  },
  'oidcc-ui-locales': async (suite) => {
    await happyFlow(suite, { ui_locales: 'se' })
  },
  'oidcc-claims-locales': async (suite) => {
    await happyFlow(suite, { claims_locales: 'se' })
  },
  'oidcc-ensure-request-with-acr-values-succeeds': async (suite) => {
    const { claims } = await happyFlow(suite, { acr_values: (suite.as.acr_values_supported ?? ['1', '2']).join(' ') })
    // ValidateIdTokenACRClaimAgainstAcrValuesRequest is a WARNING: the acr, when present, is a string.
    if (claims.acr !== undefined) expect(typeof claims.acr).toBe('string')
  },
  'oidcc-codereuse': async (suite) => {
    const sent = await suite.request()
    const params = await suite.authorize(sent)
    await suite.redeem(params, sent)
    const again = await suite.tokenRequest(params, sent)
    expect(again.status).toBe(400)
    expect(again.headers.get('content-type')).toMatch(/^application\/json/)
    expect((await again.json()).error).toBe('invalid_grant')
  },
  'oidcc-codereuse-30seconds': async (suite) => {
    const sent = await suite.request()
    const params = await suite.authorize(sent)
    const { tokens } = await suite.redeem(params, sent)
    suite.clock.advance(30)
    const again = await suite.tokenRequest(params, sent)
    expect(again.status).toBe(400)
    expect((await again.json()).error).toBe('invalid_grant')
    // The first access token is revoked with the code's grant (a WARNING in the suite).
    const info = await suite.userinfo(tokens.access_token)
    expect(info.status).toBeGreaterThanOrEqual(400)
    expect(info.status).toBeLessThan(500)
  },
  'oidcc-ensure-registered-redirect-uri': async (suite) => {
    const bad = `${REDIRECT_URI}/${crypto.randomUUID()}`
    const sent = await suite.request({ redirect_uri: bad })
    const first = await suite.browser.navigate(sent.url.href)
    // An error page on the OP: never a redirect or a form post to either URI.
    expect(first.callback).toBeUndefined()
    expect(first.page?.status).toBe(400)
    expect(first.page?.html).not.toContain('<form method="post" action="https://localhost')
  },
  'oidcc-ensure-post-request-succeeds': async (suite) => {
    const sent = await suite.request()
    const params = await suite.authorize(sent, { post: true })
    expectServerBasics(params, (await suite.redeem(params, sent)).tokens)
  },
  'oidcc-server-client-secret-post': async (suite) => {
    await happyFlow(suite)
  },
  'oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported': async (suite) => {
    // Skipped by the suite unless request_object_signing_alg_values_supported has none; refused anyway.
    expect(suite.as.request_object_signing_alg_values_supported ?? []).not.toContain('none')
    expect(suite.as.request_uri_parameter_supported).toBe(false)
    const sent = await suite.request({ request_uri: 'https://rp.example.test/request.jwt' })
    const params = await suite.authorize(sent, { login: false })
    expect(params.get('error')).toBe('request_uri_not_supported')
    expect(params.get('state')).toBe(sent.state)
  },
  'oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported': async (suite) => {
    const state = oauth.generateRandomState()
    const request = unsignedRequestObject({
      state,
      nonce: oauth.generateRandomNonce(),
      client_id: suite.client.client_id,
    })
    const sent = await suite.request({ request, state: null, nonce: null })
    const params = await suite.authorize(sent, { login: false })
    // Rejected as unsupported (never ignored: the state only in it would then be lost).
    expect(params.get('error')).toBe('request_not_supported')
    expect(params.get('code')).toBeNull()
  },
  'oidcc-claims-essential': async (suite) => {
    const claims = JSON.stringify({ userinfo: { name: { essential: true } } })
    const { info, claims: idToken } = await happyFlow(suite, { claims })
    expect(info.name).toBe(SUITE_USER.name) // EnsureUserInfoContainsName
    expect(idToken.name).toBeUndefined() // EnsureIdTokenDoesNotContainName
  },
  'oidcc-ensure-request-object-with-redirect-uri': async (suite) => {
    // The request object names the valid redirect_uri, the query an invalid one: the OP must use
    // the request object's or show an error page; never request_not_supported to the registered URI.
    const request = unsignedRequestObject({ redirect_uri: REDIRECT_URI, client_id: suite.client.client_id })
    const sent = await suite.request({ request, redirect_uri: `${REDIRECT_URI}/invalid` })
    const first = await suite.browser.navigate(sent.url.href)
    expect(first.callback).toBeUndefined()
    expect(first.page?.status).toBe(400)
    expect(first.page?.html).not.toContain('<form method="post" action="https://localhost')
  },
  'oidcc-refresh-token': async (suite) => {
    const sent = await suite.request({ scope: 'openid offline_access', prompt: 'consent' })
    const params = await suite.authorize(sent)
    const first = await suite.redeem(params, sent)
    expect(first.tokens.refresh_token).toBeTruthy()
    const response = await oauth.refreshTokenGrantRequest(
      suite.as,
      suite.client,
      suite.auth,
      first.tokens.refresh_token as string,
      { ...suite.opts, additionalParameters: { scope: 'openid offline_access' } },
    )
    expect(response.headers.get('cache-control')).toContain('no-store')
    const refreshed = await oauth.processRefreshTokenResponse(suite.as, suite.client, response)
    expect(refreshed.token_type.toLowerCase()).toBe('bearer')
    const claims = oauth.getValidatedIdTokenClaims(refreshed)
    expect(claims?.sub).toBe(first.claims.sub)
    expect(claims?.auth_time).toBe(first.claims.auth_time)
    expect(claims?.azp ?? claims?.aud).toEqual(first.claims.azp ?? first.claims.aud)
    // Client 2's refresh token used by client 1 → invalid_grant.
    const two = suite.client2
    const sent2 = await suite.request({ scope: 'openid offline_access' }, two)
    const other = await suite.redeem(await suite.authorize(sent2), sent2, two)
    const cross = await oauth.refreshTokenGrantRequest(
      suite.as,
      suite.client,
      suite.auth,
      other.tokens.refresh_token as string,
      suite.opts,
    )
    expect(cross.status).toBe(400)
    expect((await cross.json()).error).toBe('invalid_grant')
  },
  'oidcc-ensure-request-with-valid-pkce-succeeds': async (suite) => {
    const result = await suite.flow({ code_challenge: 'S256' })
    expectServerBasics(result.params, result.tokens)
  },
}

/** The client authentication a module runs with (the plan switches to client_secret_post for one). */
export function clientOf(module: string): SuiteClient {
  return module === 'oidcc-server-client-secret-post' ? CLIENT_POST : CLIENT
}

/** Runs one module of the Basic plan in a response mode (`form_post`: the Form Post Basic plan). */
export async function runBasicModule(module: string, responseMode: ResponseModeVariant): Promise<void> {
  const run = BASIC_MODULES[module]
  if (!run) throw new Error(`unknown module ${module}`)
  await run(await createDriver({ responseMode, client: clientOf(module) }))
}

/** Every module name of the Basic plan, in the plan's order. */
export const BASIC_MODULE_NAMES: readonly string[] = Object.keys(BASIC_MODULES)
