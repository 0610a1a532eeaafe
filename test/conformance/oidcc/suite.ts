/**
 * #30: the one harness of the OpenID Foundation conformance modules re-implemented in this folder
 * (Basic OP, Config OP, Form Post Basic OP, RP-Initiated Logout OP; module lists and suite version
 * in PLANS.md). It plays the suite's part: static clients registered as the suite's configuration
 * asks (redirect URI `https://localhost.emobix.co.uk:8443/test/a/<alias>/callback`, post-logout
 * redirect URI `…/post_logout_redirect`), a browser that signs in on the built-in page, and the
 * checks that every module's normal flow runs (AbstractOIDCCServerTest: CheckServerConfiguration,
 * JWKS validation, the callback checks, the token response checks, PerformStandardIdTokenChecks,
 * the UserInfo call). oauth4webapi is the client. Every request goes over HTTP: the service is
 * served on a loopback port by the Node adapter (the test's clock still drives it), and requests to
 * the issuer's origin are sent there with the issuer's Host.
 *
 * {@link createDriver} runs the Basic plan's modules (`basic_modules.ts`) in the plan's response
 * mode: `default` (query) or `form_post` (OIDCCFormPostBasicTestPlan runs every Basic module with
 * ResponseMode form_post); in form_post mode a query redirect fails the test, as the suite's
 * callback (a POST) would.
 *
 * The Back-Channel Logout plan's fixtures (below {@link WEB_BC}): an in-process receiver standing
 * in for the clients' `backchannel_logout_uri`s (records each POST; answers per URL with a scripted
 * sequence of statuses, a hang until the sender's time-out, or a network failure), a service whose
 * `web` and `web2` clients registered URIs on it, and the logged-in browser of an end-user who used
 * both (test/conformance/logout/backchannel_logout.test.ts uses them too).
 */
import {
  type JWK,
  type JWTPayload,
  type ProtectedHeaderParameters,
  createLocalJWKSet,
  decodeProtectedHeader,
  jwtVerify,
} from 'jose'
import * as oauth from 'oauth4webapi'
import type { AddressInfo } from 'node:net'
import { expect, onTestFinished } from 'vitest'
import { serveNode } from '../../../adapters/node.ts'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import type { GatehouseEvent, TokenServiceOptions } from '../../../src/index.ts'
import { Browser, type Page, unescapeHtml } from '../../helpers/browser.ts'
import { setup, signIn } from '../../helpers/flow.ts'
import { ISSUER, PLRU, USERS, inProcess, makeService } from '../../helpers/service.ts'

export { ISSUER }

/** The suite version the module list and the assertions were taken from. */
export const SUITE_VERSION = 'openid-certification/conformance-suite 12f2a4da (release-v5.2.3-84-g12f2a4dac)'
export const BASIC_PLAN = 'oidcc-basic-certification-test-plan'
export const FORMPOST_PLAN = 'oidcc-formpost-basic-certification-test-plan'

/** Where the suite runs, and the alias of the test plan (both in the suite's configuration). */
export const SUITE_ORIGIN = 'https://localhost.emobix.co.uk:8443'
export const ALIAS = 'gatehouse'
export const BASE_URL = `${SUITE_ORIGIN}/test/a/${ALIAS}`
/** CreateRedirectUri: the suite's callback for this alias. */
export const REDIRECT_URI = `${BASE_URL}/callback`
/** CreatePostLogoutRedirectUri: what a static client registers for the logout plan. */
export const POST_LOGOUT_REDIRECT_URI = `${BASE_URL}/post_logout_redirect`

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

/**
 * The static clients of the suite's configuration: `client` (client_secret_basic), `client2`
 * (AbstractOIDCCMultipleClient's second client) and `client_secret_post` (the one
 * oidcc-server-client-secret-post takes; most servers pin one method per client, Gatehouse too).
 */
export const SUITE_CLIENTS = {
  client: {
    clientId: 'oidcc-client',
    clientSecret: 'oidcc-client-secret-0123456789abcdef',
    displayName: 'OpenID conformance suite',
    permissions: PERMISSIONS,
    redirectUris: [REDIRECT_URI],
    postLogoutRedirectUris: [POST_LOGOUT_REDIRECT_URI],
    tokenEndpointAuthMethod: 'client_secret_basic',
  },
  client2: {
    clientId: 'oidcc-client2',
    clientSecret: 'oidcc-client2-secret-0123456789abcdef',
    displayName: 'OpenID conformance suite (second client)',
    permissions: PERMISSIONS,
    redirectUris: [REDIRECT_URI],
    postLogoutRedirectUris: [POST_LOGOUT_REDIRECT_URI],
    tokenEndpointAuthMethod: 'client_secret_basic',
  },
  client_secret_post: {
    clientId: 'oidcc-client-post',
    clientSecret: 'oidcc-client-post-secret-0123456789abcdef',
    displayName: 'OpenID conformance suite (client_secret_post)',
    permissions: PERMISSIONS,
    redirectUris: [REDIRECT_URI],
    postLogoutRedirectUris: [POST_LOGOUT_REDIRECT_URI],
    tokenEndpointAuthMethod: 'client_secret_post',
  },
} satisfies Record<string, ClientRegistration>

/** A client as the suite holds it: oauth4webapi's view and its authentication. */
export interface SuiteClient {
  method: 'client_secret_basic' | 'client_secret_post'
  client: oauth.Client
  auth: oauth.ClientAuth
  secret: string
}

function suiteClient(registration: ClientRegistration): SuiteClient {
  const secret = registration.clientSecret as string
  const method = registration.tokenEndpointAuthMethod as SuiteClient['method']
  return {
    method,
    client: { client_id: registration.clientId },
    auth: method === 'client_secret_post' ? oauth.ClientSecretPost(secret) : oauth.ClientSecretBasic(secret),
    secret,
  }
}

/** The Basic plan's client authentication variants: every Basic module runs with both. */
export const CLIENT_AUTH_VARIANTS: SuiteClient[] = [
  suiteClient(SUITE_CLIENTS.client),
  suiteClient(SUITE_CLIENTS.client_secret_post),
]
export const CLIENT = suiteClient(SUITE_CLIENTS.client)
export const CLIENT2 = suiteClient(SUITE_CLIENTS.client2)
export const CLIENT_POST = suiteClient(SUITE_CLIENTS.client_secret_post)

/** The end-user the tester signs in as. */
export const USER = USERS[0] as { sub: string; username: string; password: string }

/**
 * The end-user of the Basic modules' scope and claims checks: every standard claim of the
 * profile, email, address and phone scopes. Registered beside {@link USER}.
 */
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

export type Suite = Awaited<ReturnType<typeof createSuite>>

/**
 * The service with the suite's clients, its discovered metadata (CheckServerConfiguration and
 * the JWKS checks done, as in every module's configure step) and a fresh browser.
 */
export async function createSuite() {
  const { service, clock } = await makeService({ users: [...USERS, SUITE_USER] })
  for (const registration of Object.values(SUITE_CLIENTS)) await service.clients.ensure(registration)
  const fetch = await overHttp(service.fetch)
  const opts = inProcess(fetch)
  const issuer = new URL(ISSUER)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, opts))
  checkServerConfiguration(as)
  const jwks = await fetchServerKeys(as, fetch)
  return { service, clock, fetch, opts, as, jwks, browser: newBrowser(fetch) }
}

/** The process's own fetch, kept before any test replaces the global one. */
const socketFetch = globalThis.fetch

/**
 * Serves `handler` on 127.0.0.1 (closed when the test ends) and returns a fetch that sends the
 * issuer's requests there over a real socket, keeping the URL's host as the Host header.
 */
async function overHttp(
  handler: (request: Request, info?: { address?: string }) => Promise<Response>,
): Promise<(request: Request) => Promise<Response>> {
  const server = await serveNode(handler, { port: 0, hostname: '127.0.0.1' })
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const { port } = server.address() as AddressInfo
  const issuer = new URL(ISSUER)
  return async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    if (url.origin !== issuer.origin) throw new Error(`not a URL of the OP: ${url.href}`)
    const headers = new Headers(request.headers)
    headers.set('host', url.host)
    const hasBody = request.method !== 'GET' && request.method !== 'HEAD'
    return socketFetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`, {
      method: request.method,
      headers,
      redirect: 'manual',
      ...(hasBody ? { body: await request.arrayBuffer() } : {}),
    })
  }
}

/** A browser whose cookies are its own; URLs of the suite are where it stops. */
export function newBrowser(fetch: (request: Request) => Promise<Response>): Browser {
  return new Browser(fetch, [SUITE_ORIGIN])
}

/** CheckServerConfiguration: the endpoints and the issuer a module needs are there. */
export function checkServerConfiguration(as: oauth.AuthorizationServer): void {
  for (const name of ['authorization_endpoint', 'token_endpoint', 'issuer', 'jwks_uri'] as const) {
    expect(typeof as[name], name).toBe('string')
  }
}

/**
 * FetchServerKeys + ValidateJwksSequence + CheckForKeyIdInServerJWKs +
 * CheckDistinctKeyIdValueInServerJWKs: a JSON key set of public keys, each with a distinct kid.
 */
export async function fetchServerKeys(
  as: oauth.AuthorizationServer,
  fetch: (request: Request) => Promise<Response>,
): Promise<{ keys: JWK[] }> {
  const response = await fetch(new Request(as.jwks_uri as string))
  expect(response.status).toBe(200)
  const jwks = (await response.json()) as { keys: JWK[] }
  expect(Array.isArray(jwks.keys)).toBe(true)
  expect(jwks.keys.length).toBeGreaterThan(0)
  const kids = jwks.keys.map((key) => key.kid)
  for (const kid of kids) expect(typeof kid).toBe('string')
  expect(new Set(kids).size).toBe(kids.length)
  for (const key of jwks.keys) {
    // RFC 7517 §1.1 / ValidateJwksSequence: no private members in a published set.
    for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'])
      expect(key, `${key.kid}.${secret}`).not.toHaveProperty(secret)
  }
  return jwks
}

/** An authorization request as the suite builds it (CreateAuthorizationEndpointRequestFromClientInformation). */
export interface SuiteRequest {
  url: URL
  state: string | undefined
  nonce: string | undefined
  verifier: string | undefined
  params: URLSearchParams
}

export interface RequestOptions {
  client?: SuiteClient
  scope?: string
  /** State length (the logout modules use 128); null: no state. */
  stateLength?: number | null
  /** Nonce length; null: no nonce (oidcc-ensure-request-without-nonce-succeeds-for-code-flow). */
  nonceLength?: number | null
  /** Adds an S256 challenge (only oidcc-ensure-request-with-valid-pkce-succeeds does). */
  pkce?: boolean
  redirectUri?: string
  extra?: Record<string, string>
  /** Leaves these parameters out (oidcc-response-type-missing). */
  omit?: string[]
}

/** CreateRandomStateValue / CreateRandomNonceValue: random URL-safe strings. */
export function randomString(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  const bytes = crypto.getRandomValues(new Uint8Array(length))
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('')
}

/** The authorization request of a module: response_type=code, scope=openid, state and nonce. */
export async function buildRequest(as: oauth.AuthorizationServer, options: RequestOptions = {}): Promise<SuiteRequest> {
  const client = options.client ?? CLIENT
  const params = new URLSearchParams()
  params.set('client_id', client.client.client_id)
  params.set('redirect_uri', options.redirectUri ?? REDIRECT_URI)
  params.set('scope', options.scope ?? 'openid')
  const state = options.stateLength === null ? undefined : randomString(options.stateLength ?? 10)
  const nonce = options.nonceLength === null ? undefined : randomString(options.nonceLength ?? 10)
  if (state !== undefined) params.set('state', state)
  if (nonce !== undefined) params.set('nonce', nonce)
  params.set('response_type', 'code')
  let verifier: string | undefined
  if (options.pkce) {
    verifier = oauth.generateRandomCodeVerifier()
    params.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier))
    params.set('code_challenge_method', 'S256')
  }
  for (const [name, value] of Object.entries(options.extra ?? {})) params.set(name, value)
  for (const name of options.omit ?? []) params.delete(name)
  const url = new URL(as.authorization_endpoint as string)
  url.search = params.toString()
  return { url, state, nonce, verifier, params }
}

/** Follows the request in the browser, signing in if the page asks; returns the callback. */
export async function runAuthorization(
  browser: Browser,
  url: URL | { url: string; init: RequestInit },
  options: { expectLogin?: boolean } = {},
): Promise<{ callback: URL; loginShown: boolean }> {
  const first = url instanceof URL ? await browser.navigate(url.href) : await browser.navigate(url.url, url.init)
  if (first.callback) {
    if (options.expectLogin === true) throw new Error('the sign-in page was expected but the OP redirected at once')
    return { callback: first.callback, loginShown: false }
  }
  const page = first.page as Page
  if (options.expectLogin === false) throw new Error(`no UI was expected, got a page (${page.status}):\n${page.html}`)
  expect(page.status).toBe(200)
  expect(page.html).toContain('name="password"')
  const after = await browser.signIn(page, USER.username, USER.password)
  if (!after.callback) throw new Error(`no redirect after sign-in:\n${after.page?.html}`)
  return { callback: after.callback, loginShown: true }
}

/**
 * The callback checks (processCallback, onAuthorizationCallbackResponse): the response is in the
 * query (RejectAuthCodeInUrlQuery does not apply), `iss` equals the issuer
 * (ValidateIssIfPresentInAuthorizationResponse), `state` is echoed, the code is ≥ 128 bits long
 * and ≥ 96 bits of Shannon entropy (EnsureMinimumAuthorizationCodeLength/Entropy).
 */
export function checkCodeCallback(
  suite: Suite,
  callback: URL,
  request: SuiteRequest,
  client = CLIENT,
): URLSearchParams {
  expect(callback.origin + callback.pathname).toBe(request.params.get('redirect_uri'))
  expect(callback.hash).toBe('')
  const params = oauth.validateAuthResponse(suite.as, client.client, callback, request.state ?? oauth.expectNoState)
  expect(callback.searchParams.get('iss')).toBe(suite.as.issuer)
  const code = params.get('code') as string
  expect(new TextEncoder().encode(code).length * 8).toBeGreaterThanOrEqual(128)
  expect(shannonEntropy(code)).toBeGreaterThan(96)
  return params
}

/**
 * An error callback (performGenericAuthorizationEndpointErrorResponseValidation): state intact,
 * correct iss, an error, no code, only the parameters Core §3.1.2.6 names, and an
 * error_description of the characters RFC 6749 §4.1.2.1 allows. Returns the error.
 */
export function checkErrorCallback(suite: Suite, callback: URL, request: SuiteRequest): string {
  const q = callback.searchParams
  expect(callback.origin + callback.pathname).toBe(request.params.get('redirect_uri'))
  expect(q.get('state') ?? undefined).toBe(request.state)
  expect(q.get('iss')).toBe(suite.as.issuer)
  expect(q.has('code')).toBe(false)
  const error = q.get('error')
  expect(error).toMatch(/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/)
  for (const name of q.keys())
    expect(['error', 'error_description', 'error_uri', 'state', 'session_state', 'iss']).toContain(name)
  const description = q.get('error_description')
  if (description !== null) expect(description).toMatch(/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/)
  return error as string
}

/** The Shannon entropy of a string in bits (AbstractEnsureMinimumEntropy). */
export function shannonEntropy(value: string): number {
  const counts = new Map<string, number>()
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1)
  let bitsPerChar = 0
  for (const n of counts.values()) {
    const p = n / value.length
    bitsPerChar -= p * Math.log2(p)
  }
  return bitsPerChar * value.length
}

/** Sends the token request for a code (CreateTokenEndpointRequestForAuthorizationCodeGrant). */
export function redeem(
  suite: Suite,
  params: URLSearchParams,
  request: SuiteRequest,
  client = CLIENT,
): Promise<Response> {
  return oauth.authorizationCodeGrantRequest(
    suite.as,
    client.client,
    client.auth,
    params,
    request.params.get('redirect_uri') as string,
    request.verifier ?? oauth.nopkce,
    suite.opts,
  )
}

export interface TokenResult {
  response: oauth.TokenEndpointResponse
  idToken: JWTPayload & { sub: string; auth_time?: number }
  idTokenRaw: string
  header: ReturnType<typeof decodeProtectedHeader>
}

/**
 * requestAuthorizationCode: 200 (CheckTokenEndpointHttpStatus200), an access token, a valid
 * expires_in (ValidateExpiresIn: positive, under a year), an ID token passing the standard checks.
 */
export async function checkTokenResponse(
  suite: Suite,
  response: Response,
  request: SuiteRequest,
  client = CLIENT,
): Promise<TokenResult> {
  expect(response.status).toBe(200)
  expect(response.headers.get('cache-control')).toContain('no-store')
  const raw = (await response.clone().json()) as Record<string, unknown>
  expect(typeof raw.access_token).toBe('string')
  expect(typeof raw.expires_in).toBe('number')
  expect(raw.expires_in).toBeGreaterThan(0)
  expect(raw.expires_in).toBeLessThanOrEqual(31_536_000)
  const result = await oauth.processAuthorizationCodeResponse(suite.as, client.client, response, {
    expectedNonce: request.nonce ?? oauth.expectNoNonce,
    requireIdToken: true,
  })
  const idTokenRaw = result.id_token as string
  const idToken = await checkIdToken(suite, idTokenRaw, {
    client,
    nonce: request.nonce,
    accessToken: result.access_token,
  })
  return { response: result, idToken, idTokenRaw, header: decodeProtectedHeader(idTokenRaw) }
}

async function leftHalfHash(value: string, alg: string): Promise<string> {
  const hash = alg.endsWith('384') ? 'SHA-384' : alg.endsWith('512') ? 'SHA-512' : 'SHA-256'
  const digest = new Uint8Array(await crypto.subtle.digest(hash, new TextEncoder().encode(value)))
  return btoa(String.fromCharCode(...digest.slice(0, digest.length / 2)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
}

/**
 * PerformStandardIdTokenChecks: ValidateIdToken (iss, aud, azp with several audiences, exp in the
 * future, iat within 5 minutes, a sane auth_time), ValidateIdTokenStandardClaims (types),
 * ValidateIdTokenNonce (`nonce: null` skips it), ValidateIdTokenSignature (against the published JWKS), CheckForSubjectInIdToken
 * (≤ 255 ASCII), and at_hash / c_hash correct if present (oidcc-server).
 */
export async function checkIdToken(
  suite: Suite,
  token: string,
  options: { client?: SuiteClient; nonce?: string | null | undefined; accessToken?: string; code?: string } = {},
): Promise<TokenResult['idToken']> {
  const client = options.client ?? CLIENT
  const header = decodeProtectedHeader(token)
  const { payload } = await jwtVerify(token, createLocalJWKSet(suite.jwks), {
    issuer: suite.as.issuer,
    audience: client.client.client_id,
    currentDate: new Date(suite.clock.now() * 1000),
  })
  const now = suite.clock.now()
  expect(typeof payload.sub).toBe('string')
  expect(payload.sub as string).toMatch(/^[\x20-\x7e]{1,255}$/)
  expect(payload.exp as number).toBeGreaterThan(now)
  expect(Math.abs((payload.iat as number) - now)).toBeLessThanOrEqual(300)
  if (Array.isArray(payload.aud) && payload.aud.length > 1) expect(payload.azp).toBe(client.client.client_id)
  if (payload.azp !== undefined) expect(payload.azp).toBe(client.client.client_id)
  if (payload.auth_time !== undefined) {
    expect(typeof payload.auth_time).toBe('number')
    expect(payload.auth_time as number).toBeLessThanOrEqual(now + 300)
    expect(payload.auth_time as number).toBeGreaterThan(now - 365 * 86400)
  }
  // null: not checked (a refreshed ID token, OIDC Core §12.2, which the suite does not check for it).
  if (typeof options.nonce === 'string') expect(payload.nonce).toBe(options.nonce)
  else if (options.nonce === undefined) expect(payload).not.toHaveProperty('nonce')
  if (payload.acr !== undefined) expect(typeof payload.acr).toBe('string')
  checkStandardClaimTypes(payload)
  if (payload.at_hash !== undefined && options.accessToken !== undefined) {
    expect(payload.at_hash).toBe(await leftHalfHash(options.accessToken, header.alg as string))
  }
  if (payload.c_hash !== undefined && options.code !== undefined) {
    expect(payload.c_hash).toBe(await leftHalfHash(options.code, header.alg as string))
  }
  return payload as TokenResult['idToken']
}

const STRING_CLAIMS = [
  'name',
  'given_name',
  'family_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'email',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'phone_number',
]

/** ValidateIdTokenStandardClaims / ValidateUserInfoStandardClaims: OIDC Core §5.1 types. */
export function checkStandardClaimTypes(claims: Record<string, unknown>): void {
  for (const name of STRING_CLAIMS) if (name in claims) expect(typeof claims[name], name).toBe('string')
  for (const name of ['email_verified', 'phone_number_verified'])
    if (name in claims) expect(typeof claims[name], name).toBe('boolean')
  if ('address' in claims) {
    expect(typeof claims.address).toBe('object')
    for (const value of Object.values(claims.address as object)) expect(typeof value).toBe('string')
  }
  // EnsureIdTokenUpdatedAtValid / EnsureUserInfoUpdatedAtValid
  if ('updated_at' in claims) expect(Number.isInteger(claims.updated_at), 'updated_at').toBe(true)
}

/**
 * The UserInfo call of every module (CallProtectedResource → 200) and AbstractOIDCCUserInfoTest:
 * JSON content type, `sub` equal to the ID token's, standard claims well typed.
 */
export async function checkUserinfo(
  suite: Suite,
  accessToken: string,
  sub: string,
  how: 'get' | 'post-header' | 'post-body' = 'get',
): Promise<Record<string, unknown>> {
  const url = suite.as.userinfo_endpoint as string
  let response: Response
  if (how === 'get') {
    response = await oauth.userInfoRequest(suite.as, CLIENT.client, accessToken, suite.opts)
  } else if (how === 'post-header') {
    // CallUserInfoEndpoint with the POST method: the header, an empty form body.
    response = await suite.fetch(
      new Request(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: '',
      }),
    )
  } else {
    // CallUserInfoEndpointWithBearerTokenInBody (RFC 6750 §2.2).
    response = await suite.fetch(
      new Request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ access_token: accessToken }),
      }),
    )
  }
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toMatch(/^application\/json\b/)
  const claims = (await oauth.processUserInfoResponse(suite.as, CLIENT.client, sub, response)) as Record<
    string,
    unknown
  >
  expect(claims.sub).toBe(sub)
  checkStandardClaimTypes(claims)
  return claims
}

/**
 * A module's normal flow (AbstractOIDCCServerTest.performAuthorizationFlow and
 * performPostAuthorizationFlow): authorize, sign in if asked, the callback checks, the token
 * request, the ID token checks, UserInfo. Returns everything a module checks further.
 */
export async function codeFlow(suite: Suite, options: RequestOptions & { expectLogin?: boolean } = {}) {
  const client = options.client ?? CLIENT
  const request = await buildRequest(suite.as, options)
  const { callback, loginShown } = await runAuthorization(suite.browser, request.url, options)
  const params = checkCodeCallback(suite, callback, request, client)
  const tokenResponse = await redeem(suite, params, request, client)
  const tokens = await checkTokenResponse(suite, tokenResponse, request, client)
  const userinfo = await checkUserinfo(suite, tokens.response.access_token, tokens.idToken.sub)
  return { request, callback, params, code: params.get('code') as string, loginShown, ...tokens, userinfo }
}

/** A second authorization with prompt=none in the same browser: the error callback expected. */
export async function promptNoneMustFail(suite: Suite, client = CLIENT): Promise<string> {
  const request = await buildRequest(suite.as, { client, stateLength: 128, extra: { prompt: 'none' } })
  const result = await suite.browser.navigate(request.url.href)
  expect(result.page, 'prompt=none must not show a page').toBeUndefined()
  const error = checkErrorCallback(suite, result.callback as URL, request)
  // CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface
  expect(['interaction_required', 'login_required', 'account_selection_required', 'consent_required']).toContain(error)
  return error
}

/**
 * ConvertAuthorizationEndpointRequestToRequestObject + SerializeRequestObjectWithNullAlgorithm:
 * every parameter of the request as claims of an unsigned (`alg: none`) JWT.
 */
export function unsignedRequestObject(claims: Record<string, unknown>): string {
  const b64url = (value: unknown): string =>
    btoa(JSON.stringify(value)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  return `${b64url({ alg: 'none' })}.${b64url(claims)}.`
}

/**
 * AbstractBuildRequestObjectRedirectToAuthorizationEndpoint: the query keeps response_type,
 * client_id, scope and redirect_uri (OIDC Core §6.1 requires them outside the object) plus any
 * parameter whose value differs from the object's; state and nonce are only in the object.
 */
export function requestObjectUrl(
  as: oauth.AuthorizationServer,
  query: URLSearchParams,
  objectClaims: Record<string, string>,
  by: { request: string } | { request_uri: string },
): URL {
  const url = new URL(as.authorization_endpoint as string)
  const params = new URLSearchParams(Object.entries(by))
  for (const [name, value] of query) {
    if (['response_type', 'client_id', 'scope', 'redirect_uri'].includes(name) || objectClaims[name] !== value) {
      params.set(name, value)
    }
  }
  url.search = params.toString()
  return url
}

/** What the browser got from the end_session_endpoint. */
export type LogoutResult = Awaited<ReturnType<Browser['navigate']>>

/**
 * AbstractOIDCCRpInitiatedLogout: a normal code flow (128-character state), then
 * CreateEndSessionEndpointRequest with `id_token_hint`, `post_logout_redirect_uri` and a random
 * `state` (no client_id), changed by the module (`customise`), sent by the browser as a GET.
 */
export async function loginThenLogout(
  suite: Suite,
  customise: (request: Map<string, string>, idToken: string) => void | Promise<void> = () => {},
) {
  const flow = await codeFlow(suite, { stateLength: 128 })
  const request = new Map<string, string>([
    ['id_token_hint', flow.idTokenRaw],
    ['post_logout_redirect_uri', POST_LOGOUT_REDIRECT_URI],
    ['state', randomString(10)],
  ])
  await customise(request, flow.idTokenRaw)
  const url = new URL(suite.as.end_session_endpoint as string)
  url.search = new URLSearchParams([...request]).toString()
  const result = await suite.browser.navigate(url.href)
  return { flow, request, result }
}

/**
 * The modules that must not be redirected: the browser stays on an OP page (an error, or a
 * confirmation the tester screenshots) and never reaches a URL of the suite.
 */
export function expectNoRedirect(result: LogoutResult): Page {
  expect(result.callback, 'the OP redirected to the suite').toBeUndefined()
  const page = result.page as Page
  expect(page.response.headers.get('location')).toBeNull()
  expect(page.response.headers.get('content-type')).toMatch(/^text\/html\b/)
  return page
}

/** The end-user confirms on the logout page; the signed-out page follows, with no redirect. */
export async function confirmLogout(suite: Suite, page: Page): Promise<Page> {
  expect(page.status).toBe(200)
  const after = await suite.browser.submit(page, { decision: 'yes' })
  return expectNoRedirect(after)
}

/** The signed-out page ("you are logged out", ExpectSuccessfulLogoutPage). */
export function expectSignedOutPage(page: Page): void {
  expect(page.status).toBe(200)
  expect(page.html).toMatch(/signed out/i)
}

/** The Basic plan's response mode variants: `form_post` is the Form Post Basic plan. */
export type ResponseModeVariant = 'default' | 'form_post'

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

/** Where the browser ended: the client's callback (with how it got there) or a page of the OP. */
export type Outcome = { params: URLSearchParams; via: 'query' | 'form_post'; page?: Page } | { page: Page }

/**
 * A module run of the Basic plan (basic_modules.ts) on {@link createSuite}: the plan's client
 * (`client_secret_basic`, or the `client_secret_post` client for oidcc-server-client-secret-post)
 * in the plan's response mode, signing in as {@link SUITE_USER}. Overrides of the authorization
 * request: a value sets a parameter, null removes one, `code_challenge: 'S256'` adds PKCE.
 */
export async function createDriver(variant: { responseMode?: ResponseModeVariant; client?: SuiteClient } = {}) {
  const responseMode = variant.responseMode ?? 'default'
  const suite = await createSuite()
  const { as, opts } = suite
  const main = variant.client ?? CLIENT

  /** The suite's authorization request (buildRequest) with `overrides`. */
  async function request(overrides: Record<string, string | null> = {}, client = main): Promise<SuiteRequest> {
    const extra: Record<string, string> = responseMode === 'form_post' ? { response_mode: 'form_post' } : {}
    const omit: string[] = []
    for (const [name, value] of Object.entries(overrides)) {
      if (name === 'code_challenge') continue
      if (value === null) omit.push(name)
      else extra[name] = value
    }
    const sent = await buildRequest(as, {
      client,
      stateLength: 43,
      nonceLength: 43,
      pkce: overrides.code_challenge === 'S256',
      extra,
      omit,
    })
    // What the client expects back is what the request carries (an override may set or drop it).
    return { ...sent, state: sent.params.get('state') ?? undefined, nonce: sent.params.get('nonce') ?? undefined }
  }

  /** Where a navigation ended: a callback (query redirect or form post page) or a page. */
  function outcomeOf(result: { page?: Page; callback?: URL }): Outcome {
    if (result.callback) {
      expect(`${result.callback.origin}${result.callback.pathname}`).toBe(REDIRECT_URI)
      return { params: result.callback.searchParams, via: 'query' }
    }
    const page = result.page as Page
    const params = formPostParams(page, REDIRECT_URI)
    return params ? { params, via: 'form_post', page } : { page }
  }

  /** Sends the browser to `url` (GET, or a POST form), signing in if the login page shows. */
  async function navigate(target: URL | { url: URL }, options: { login?: boolean; post?: boolean } = {}) {
    const url = target instanceof URL ? target : target.url
    const init: RequestInit = options.post
      ? { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: url.searchParams }
      : {}
    const first = await suite.browser.navigate(options.post ? `${url.origin}${url.pathname}` : url.href, init)
    const outcome = outcomeOf(first)
    if ('params' in outcome || options.login === false || !/name="password"/.test(outcome.page.html)) return outcome
    return outcomeOf(await suite.browser.signIn(outcome.page, SUITE_USER.username, SUITE_USER.password))
  }

  /** The callback parameters of an authorization, in the plan's response mode (else the test fails). */
  async function authorize(sent: SuiteRequest, options: { login?: boolean; post?: boolean } = {}) {
    const outcome = await navigate(sent, options)
    if (!('params' in outcome)) throw new Error(`no authorization response:\n${outcome.page.html.slice(0, 2000)}`)
    expect(outcome.via).toBe(responseMode === 'form_post' ? 'form_post' : 'query')
    return outcome.params
  }

  /** Validates the callback (state, iss) and redeems its code: the raw token response. */
  function tokenRequest(params: URLSearchParams, sent: SuiteRequest, who = main): Promise<Response> {
    const validated = oauth.validateAuthResponse(as, who.client, params, sent.state ?? oauth.expectNoState)
    return redeem(suite, validated, sent, who)
  }

  /** Redeems and checks the token response as a client would: the tokens and the ID token claims. */
  async function redeemCode(params: URLSearchParams, sent: SuiteRequest, who = main) {
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
    return { sent, params, ...(await redeemCode(params, sent)) }
  }

  /** UserInfo as the suite calls it: GET, POST with the header, or POST with the token in the body. */
  function userinfo(accessToken: string, how: 'get' | 'post-header' | 'post-body' = 'get'): Promise<Response> {
    const url = as.userinfo_endpoint as string
    if (how === 'get') return suite.fetch(new Request(url, { headers: { authorization: `Bearer ${accessToken}` } }))
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
    if (how === 'post-header') headers.authorization = `Bearer ${accessToken}`
    const body = how === 'post-body' ? new URLSearchParams({ access_token: accessToken }) : new URLSearchParams()
    return suite.fetch(new Request(url, { method: 'POST', headers, body }))
  }

  /** UserInfo checked by oauth4webapi (sub matches the ID token's): its claims. */
  async function userinfoClaims(tokens: oauth.TokenEndpointResponse, sub: string) {
    const response = await oauth.userInfoRequest(as, main.client, tokens.access_token, opts)
    return (await oauth.processUserInfoResponse(as, main.client, sub, response)) as oauth.UserInfoResponse &
      Record<string, unknown>
  }

  return {
    ...suite,
    client: main.client,
    auth: main.auth,
    client2: CLIENT2,
    responseMode,
    request,
    navigate,
    authorize,
    tokenRequest,
    redeem: redeemCode,
    flow,
    userinfo,
    userinfoClaims,
  }
}

export type Driver = Awaited<ReturnType<typeof createDriver>>

/** The suite's checks of the code and the token response (oidcc-server, `CheckForAccessTokenValue`, …). */
export function expectServerBasics(params: URLSearchParams, tokens: oauth.TokenEndpointResponse): void {
  expect(params.get('iss')).toBe(ISSUER)
  // EnsureMinimumAuthorizationCodeLength / Entropy: ≥ 128 bits (22 base64url characters).
  expect((params.get('code') ?? '').length).toBeGreaterThanOrEqual(22)
  expect(tokens.access_token).toBeTruthy()
  expect(tokens.expires_in).toBeGreaterThan(0)
  expect(tokens.expires_in).toBeLessThan(365 * 24 * 3600)
}

// Back-Channel Logout (oidcc-backchannel-rp-initiated-logout-certification-test-plan)

/** `web`'s back-channel logout URI. */
export const WEB_BC = 'https://rp.example.test/backchannel-logout'
/** `web2`'s (it registered `backchannelLogoutSessionRequired`). */
export const WEB2_BC = 'https://rp2.example.test/backchannel?tenant=a'
export const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

/** One POST the receiver got. */
export interface Delivery {
  url: string
  method: string
  contentType: string | null
  body: URLSearchParams
  redirect: RequestRedirect | undefined
}

/** What the receiver answers to one POST: a status, a hang (until aborted), or a network error. */
export type Behaviour = number | 'hang' | 'network'

export function createReceiver() {
  const deliveries: Delivery[] = []
  const scripts = new Map<string, Behaviour[]>()
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    deliveries.push({
      url,
      method: init.method ?? 'GET',
      contentType: new Headers(init.headers).get('content-type'),
      body: new URLSearchParams(String(init.body)),
      redirect: init.redirect,
    })
    const next = scripts.get(url)?.shift() ?? 200
    if (next === 'network') throw new TypeError('fetch failed')
    if (next === 'hang') {
      return new Promise<Response>((_, reject) => {
        init.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')))
      })
    }
    return new Response(next === 204 ? null : 'ok', { status: next })
  }
  return {
    deliveries,
    fetch,
    /** Scripts the answers to the next POSTs to `url` (afterwards: 200). */
    script(url: string, ...behaviours: Behaviour[]): void {
      scripts.set(url, behaviours)
    },
  }
}

/** Resolves once `check` holds (polling), failing after `ms`. */
export async function until(check: () => boolean, ms = 3000): Promise<void> {
  const start = Date.now()
  while (!check()) {
    if (Date.now() - start > ms) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A back-channel logout delivery's audit event. */
export type DeliveryEvent = Extract<GatehouseEvent, { type: 'logout.delivered' | 'logout.delivery_failed' }>

/** A service with `web` and `web2` on the receiver; fast retries. */
export async function backchannelSetup(options: Partial<TokenServiceOptions> = {}) {
  const receiver = createReceiver()
  const events: GatehouseEvent[] = []
  const ctx = await setup({
    backchannelLogout: { fetch: receiver.fetch, retryDelays: [0.01, 0.02], timeout: 0.3 },
    onEvent: (event) => {
      events.push(event)
    },
    ...options,
  })
  await ctx.service.clients.update('web', { backchannelLogoutUri: WEB_BC })
  await ctx.service.clients.update('web2', { backchannelLogoutUri: WEB2_BC, backchannelLogoutSessionRequired: true })
  const deliveryEvents = (): DeliveryEvent[] =>
    events.filter(
      (event): event is DeliveryEvent => event.type === 'logout.delivered' || event.type === 'logout.delivery_failed',
    )
  return { ...ctx, receiver, events, deliveryEvents }
}

export type BackchannelCtx = Awaited<ReturnType<typeof backchannelSetup>>

export const web2Client: oauth.Client = { client_id: 'web2' }
export const web2Auth = oauth.ClientSecretBasic('web2-secret')

/** alice signs in to `web`, then (single sign-on) to `web2`: both ID tokens. */
export async function signInToBoth(ctx: BackchannelCtx): Promise<{ web: string; web2: string }> {
  const first = await signIn(ctx)
  const second = await signIn(ctx, {
    client: web2Client,
    auth: web2Auth,
    redirectUri: 'https://rp2.example.test/cb',
    scope: 'openid profile',
  })
  return { web: first.result.id_token as string, web2: second.result.id_token as string }
}

/** RP-Initiated Logout with `web`'s ID token: the response (a redirect to its PLRU). */
export async function rpLogout(ctx: BackchannelCtx, idToken: string): Promise<Response> {
  const url = new URL(ctx.as.end_session_endpoint as string)
  url.searchParams.set('id_token_hint', idToken)
  url.searchParams.set('post_logout_redirect_uri', PLRU)
  url.searchParams.set('state', 'bye')
  const response = await ctx.browser.request(url.href)
  expect(response.status).toBe(303)
  expect(response.headers.get('location')).toBe(`${PLRU}?state=bye`)
  return response
}

/** A logout token verified against the service's published keys (jose), with its header. */
export async function verifiedLogoutToken(
  ctx: BackchannelCtx,
  token: string,
  clientId: string,
): Promise<{ header: ProtectedHeaderParameters; claims: JWTPayload }> {
  const keys = createLocalJWKSet((await ctx.service.keys.jwks()) as never)
  const { payload } = await jwtVerify(token, keys, {
    issuer: ctx.service.issuer,
    audience: clientId,
    typ: 'logout+jwt',
    currentDate: new Date(ctx.clock.now() * 1000),
  })
  return { header: decodeProtectedHeader(token), claims: payload }
}

/** Whether the browser still has a session (prompt=none gets a code). */
export async function isSignedIn(ctx: BackchannelCtx): Promise<boolean> {
  const url = new URL(ctx.as.authorization_endpoint as string)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: 'https://rp.example.test/cb',
    scope: 'openid',
    prompt: 'none',
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
  }).toString()
  const result = await ctx.browser.navigate(url.href)
  return result.callback?.searchParams.has('code') ?? false
}
