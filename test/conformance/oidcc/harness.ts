/**
 * A service and a client set up as the OpenID conformance suite sets up its OP tests (#30): a
 * static confidential client (client_secret_basic, or client_secret_post for the modules that ask
 * for it) whose redirect URI is the suite's callback, an end-user who has every standard claim,
 * and the code flow the suite runs (scope openid, random state and nonce, no PKCE unless a module
 * asks), in the plan's response mode: `default` (query) or `form_post` (OIDCCFormPostBasicTestPlan
 * runs every module of the Basic plan with ResponseMode form_post, `AbstractFormPostTestPlan`).
 *
 * In form_post mode an authorization response that arrives as a query redirect fails the test,
 * as the suite's callback (a POST) would. Modules are from openid-certification/conformance-suite
 * at {@link SUITE_COMMIT}. Not named `suite.ts`: that is the Basic/Config/RP-logout helper's.
 */
import * as oauth from 'oauth4webapi'
import { expect } from 'vitest'
import type { TokenServiceOptions } from '../../../src/config.ts'
import { createTokenService } from '../../../src/index.ts'
import { Browser, type Page, unescapeHtml } from '../../helpers/browser.ts'
import { clock, discover, inProcess } from '../../helpers/service.ts'

/** The suite's source the modules were read from (`src/main/java/net/openid/conformance/openid/`). */
export const SUITE_COMMIT =
  'openid-certification/conformance-suite@12f2a4dac6462f8a4e95968bc7e478e02881e1a7 (2026-08-20)'
export const BASIC_PLAN = 'oidcc-basic-certification-test-plan'
export const FORMPOST_PLAN = 'oidcc-formpost-basic-certification-test-plan'

export const ISSUER = 'https://op.example.test'
/** The suite's callback URL for an alias (`https://<host>/test/a/<alias>/callback`). */
export const SUITE_HOST = 'https://localhost.emobix.co.uk:8443'
export const REDIRECT_URI = `${SUITE_HOST}/test/a/gatehouse/callback`

export type ResponseModeVariant = 'default' | 'form_post'
export type ClientAuthVariant = 'client_secret_basic' | 'client_secret_post'

/** The end-user the suite signs in as: every standard claim of the profile, email, address and phone scopes. */
export const SUITE_USER = {
  sub: 'suite-user-1',
  username: 'buffy',
  password: 'buffy-password',
  name: 'Buffy Summers',
  given_name: 'Buffy',
  family_name: 'Summers',
  nickname: 'Buff',
  website: 'https://sunnydale.example',
  gender: 'female',
  birthdate: '1981-01-19',
  zoneinfo: 'America/Los_Angeles',
  locale: 'en-US',
  updated_at: 1_700_000_000,
  email: 'buffy@sunnydale.example',
  email_verified: true,
  address: {
    formatted: '1630 Revello Drive\nSunnydale, CA 95037\nUSA',
    street_address: '1630 Revello Drive',
    locality: 'Sunnydale',
    region: 'CA',
    postal_code: '95037',
    country: 'USA',
  },
  phone_number: '+1 555 0100',
  phone_number_verified: false,
}

const PERMISSIONS = [
  'ept:authorization',
  'ept:token',
  'ept:logout',
  'ept:revocation',
  'gt:authorization_code',
  'gt:refresh_token',
  'rst:code',
  'scp:openid',
  'scp:profile',
  'scp:email',
  'scp:address',
  'scp:phone',
]

/** What one authorization request sent, and what the client keeps to check the response. */
export interface SentRequest {
  url: URL
  state: string | undefined
  nonce: string | undefined
  verifier: string | undefined
}

/** Where the browser ended: the client's callback (with how it got there) or a page of the OP. */
export type Outcome = { params: URLSearchParams; via: 'query' | 'form_post'; page?: Page } | { page: Page }

/**
 * The parameters of a Form Post Response Mode page aimed at `redirectUri` (OAuth 2.0 Form Post
 * Response Mode §2), checking what makes it one: 200 HTML, a POST form to the redirect URI whose
 * hidden inputs are the parameters, submitted by the one script the CSP admits (its nonce) or by
 * a `<noscript>` button, never cached. Undefined when the page is not such a form.
 */
export function formPostParams(page: Page, redirectUri: string): URLSearchParams | undefined {
  const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(page.html)
  if (!form || unescapeHtml(form[1] as string) !== redirectUri) return undefined
  expect(page.status).toBe(200)
  expect(page.response.headers.get('content-type')).toMatch(/^text\/html/)
  expect(page.response.headers.get('cache-control')).toContain('no-store')
  const csp = page.response.headers.get('content-security-policy') ?? ''
  const nonce = /script-src 'nonce-([A-Za-z0-9_-]+)'/.exec(csp)?.[1]
  expect(nonce, csp).toBeDefined()
  expect(csp).toContain("default-src 'none'")
  const scripts = [...page.html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
  expect(scripts).toHaveLength(1)
  expect(scripts[0]?.[1]).toBe(` nonce="${nonce}"`)
  expect(scripts[0]?.[2]).toBe('document.forms[0].submit()')
  expect(form[2]).toMatch(/<noscript><button type="submit">[^<]+<\/button><\/noscript>/)
  const params = new URLSearchParams()
  for (const m of (form[2] as string).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    params.append(unescapeHtml(m[1] as string), unescapeHtml(m[2] as string))
  }
  return params
}

/** A service with the suite's clients and user, discovered, with a browser: the plan's variant. */
export async function suiteSetup(
  variant: {
    responseMode?: ResponseModeVariant
    clientAuth?: ClientAuthVariant
    options?: Partial<TokenServiceOptions>
  } = {},
) {
  const responseMode = variant.responseMode ?? 'default'
  const time = clock()
  const service = createTokenService({
    issuer: ISSUER,
    now: time.now,
    users: [SUITE_USER],
    secretHashIterations: 1000,
    logger: { warn() {}, error() {} },
    ...variant.options,
  })
  const clientAuth = variant.clientAuth ?? 'client_secret_basic'
  for (const id of ['suite-client', 'suite-client2']) {
    await service.clients.ensure({
      clientId: id,
      clientSecret: `${id}-secret-0123456789abcdef`,
      displayName: id,
      permissions: PERMISSIONS,
      redirectUris: [REDIRECT_URI],
      postLogoutRedirectUris: [`${SUITE_HOST}/test/a/gatehouse/post_logout_redirect`],
      tokenEndpointAuthMethod: clientAuth,
    })
  }
  await service.ready()
  const as = await discover(service.fetch, ISSUER)
  const browser = new Browser(service.fetch, [SUITE_HOST])
  const opts = inProcess(service.fetch)
  const clientOf = (id: string): { client: oauth.Client; auth: oauth.ClientAuth } => ({
    client: { client_id: id },
    auth:
      clientAuth === 'client_secret_post'
        ? oauth.ClientSecretPost(`${id}-secret-0123456789abcdef`)
        : oauth.ClientSecretBasic(`${id}-secret-0123456789abcdef`),
  })
  const { client, auth } = clientOf('suite-client')

  /** The suite's authorization request, with `overrides` (null removes a parameter). */
  async function request(
    overrides: Record<string, string | null> = {},
    clientId = 'suite-client',
  ): Promise<SentRequest> {
    const url = new URL(as.authorization_endpoint as string)
    const base: Record<string, string> = {
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid',
      state: oauth.generateRandomState(),
      nonce: oauth.generateRandomNonce(),
    }
    if (responseMode === 'form_post') base.response_mode = 'form_post'
    let verifier: string | undefined
    // `code_challenge: 'S256'` asks for PKCE: a fresh verifier and its S256 challenge.
    if (overrides.code_challenge === 'S256') {
      verifier = oauth.generateRandomCodeVerifier()
      base.code_challenge = await oauth.calculatePKCECodeChallenge(verifier)
      base.code_challenge_method = 'S256'
    }
    const { code_challenge: _, ...rest } = overrides
    for (const [name, value] of Object.entries({ ...base, ...rest }))
      if (value !== null) url.searchParams.set(name, value)
    return {
      url,
      state: url.searchParams.get('state') ?? undefined,
      nonce: url.searchParams.get('nonce') ?? undefined,
      verifier,
    }
  }

  /** Where a navigation ended: a callback (query redirect or form post page) or a page. */
  function outcomeOf(result: { page?: Page; callback?: URL }): Outcome {
    if (result.callback) {
      const target = `${result.callback.origin}${result.callback.pathname}`
      expect(target).toBe(REDIRECT_URI)
      return { params: result.callback.searchParams, via: 'query' }
    }
    const page = result.page as Page
    const params = formPostParams(page, REDIRECT_URI)
    return params ? { params, via: 'form_post', page } : { page }
  }

  /** Sends the browser to `url` (GET, or a POST form), signing in if the login page shows. */
  async function navigate(
    target: URL | { url: URL },
    options: { login?: boolean; post?: boolean } = {},
  ): Promise<Outcome> {
    const url = target instanceof URL ? target : target.url
    const init: RequestInit = options.post
      ? { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: url.searchParams }
      : {}
    const first = await browser.navigate(options.post ? `${url.origin}${url.pathname}` : url.href, init)
    const outcome = outcomeOf(first)
    if ('params' in outcome || options.login === false || !/name="password"/.test(outcome.page.html)) return outcome
    return outcomeOf(await browser.signIn(outcome.page, SUITE_USER.username, SUITE_USER.password))
  }

  /** The callback parameters of an authorization, in the plan's response mode (else the test fails). */
  async function authorize(
    sent: SentRequest,
    options: { login?: boolean; post?: boolean } = {},
  ): Promise<URLSearchParams> {
    const outcome = await navigate(sent, options)
    if (!('params' in outcome)) throw new Error(`no authorization response:\n${outcome.page.html.slice(0, 2000)}`)
    expect(outcome.via).toBe(responseMode === 'form_post' ? 'form_post' : 'query')
    return outcome.params
  }

  /** Validates the callback (state, iss) and redeems its code: the raw token response. */
  async function tokenRequest(params: URLSearchParams, sent: SentRequest, who = { client, auth }): Promise<Response> {
    const validated = oauth.validateAuthResponse(as, who.client, params, sent.state ?? oauth.expectNoState)
    return oauth.authorizationCodeGrantRequest(
      as,
      who.client,
      who.auth,
      validated,
      REDIRECT_URI,
      sent.verifier ?? oauth.nopkce,
      opts,
    )
  }

  /** Redeems and checks the token response as a client would: the tokens and the ID token claims. */
  async function redeem(params: URLSearchParams, sent: SentRequest, who = { client, auth }) {
    const response = await tokenRequest(params, sent, who)
    const tokens = await oauth.processAuthorizationCodeResponse(as, who.client, response, {
      expectedNonce: sent.nonce ?? oauth.expectNoNonce,
      requireIdToken: true,
    })
    const claims = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken & Record<string, unknown>
    return { tokens, claims }
  }

  /** The whole code flow: request (with overrides), sign-in when needed, callback, token response. */
  async function flow(
    overrides: Record<string, string | null> = {},
    options: { login?: boolean; post?: boolean } = {},
  ) {
    const sent = await request(overrides)
    const params = await authorize(sent, options)
    return { sent, params, ...(await redeem(params, sent)) }
  }

  /** UserInfo as the suite calls it: GET, POST with the header, or POST with the token in the body. */
  async function userinfo(accessToken: string, how: 'get' | 'post-header' | 'post-body' = 'get'): Promise<Response> {
    const url = as.userinfo_endpoint as string
    if (how === 'get') return service.fetch(new Request(url, { headers: { authorization: `Bearer ${accessToken}` } }))
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
    if (how === 'post-header') headers.authorization = `Bearer ${accessToken}`
    const body = how === 'post-body' ? new URLSearchParams({ access_token: accessToken }) : new URLSearchParams()
    return service.fetch(new Request(url, { method: 'POST', headers, body }))
  }

  /** UserInfo checked by oauth4webapi (sub matches the ID token's): its claims. */
  async function userinfoClaims(tokens: oauth.TokenEndpointResponse, sub: string) {
    const response = await oauth.userInfoRequest(as, client, tokens.access_token, opts)
    return (await oauth.processUserInfoResponse(as, client, sub, response)) as oauth.UserInfoResponse &
      Record<string, unknown>
  }

  return {
    service,
    clock: time,
    as,
    browser,
    opts,
    client,
    auth,
    clientOf,
    responseMode,
    request,
    navigate,
    authorize,
    tokenRequest,
    redeem,
    flow,
    userinfo,
    userinfoClaims,
  }
}

export type Suite = Awaited<ReturnType<typeof suiteSetup>>

/** The suite's ValidateUserInfoStandardClaims / ValidateIdTokenStandardClaims: standard claims are typed. */
export function expectStandardClaimTypes(claims: Record<string, unknown>): void {
  const strings = ['sub', 'name', 'given_name', 'family_name', 'middle_name', 'nickname', 'preferred_username']
  for (const name of [...strings, 'profile', 'picture', 'website', 'email', 'gender', 'birthdate', 'zoneinfo']) {
    if (name in claims) expect(typeof claims[name], name).toBe('string')
  }
  for (const name of ['locale', 'phone_number']) if (name in claims) expect(typeof claims[name], name).toBe('string')
  for (const name of ['email_verified', 'phone_number_verified']) {
    if (name in claims) expect(typeof claims[name], name).toBe('boolean')
  }
  if ('updated_at' in claims) expect(Number.isInteger(claims.updated_at), 'updated_at').toBe(true)
  if ('address' in claims) {
    expect(typeof claims.address).toBe('object')
    for (const value of Object.values(claims.address as object)) expect(typeof value).toBe('string')
  }
}

/** The suite's checks of the code and the token response (oidcc-server, `CheckForAccessTokenValue`, …). */
export function expectServerBasics(params: URLSearchParams, tokens: oauth.TokenEndpointResponse): void {
  expect(params.get('iss')).toBe(ISSUER)
  // EnsureMinimumAuthorizationCodeLength / Entropy: ≥ 128 bits (22 base64url characters).
  expect((params.get('code') ?? '').length).toBeGreaterThanOrEqual(22)
  expect(tokens.access_token).toBeTruthy()
  expect(tokens.expires_in).toBeGreaterThan(0)
  expect(tokens.expires_in).toBeLessThan(365 * 24 * 3600)
}
