/**
 * @module fuzz/fixtures
 * A service with real tokens, cookies and interactions to mix into fuzzed requests, and the
 * invariants every response must keep: no 5xx, API errors as RFC 6749 §5.2 JSON, browser pages
 * as escaped HTML, and redirects only to registered redirect URIs or the service's own pages.
 */
import { ensureDeviceClients, startDevice } from '../helpers/device.ts'
import { expect, onTestFinished } from 'vitest'
import { STORES, type StoreKind } from '../helpers/stores.ts'
import { Browser } from '../helpers/browser.ts'
import { authorizationUrl, setup, signIn } from '../helpers/flow.ts'
import { CLIENTS, ISSUER, basic, clock, form } from '../helpers/service.ts'
import type * as oauth from 'oauth4webapi'
import { RAW_MARKER, type RequestSpec, toRequest } from './arbitraries.ts'

export { ISSUER }

export const INTERACTION_URL = `${ISSUER}/connect/interaction`

/** Every error code the service sends (src/errors.ts). */
const ERROR_CODES = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'access_denied',
  'unsupported_response_type',
  'login_required',
  'consent_required',
  'interaction_required',
  'account_selection_required',
  'request_not_supported',
  'request_uri_not_supported',
  'invalid_token',
  'insufficient_scope',
  'unsupported_token_type',
  'invalid_target',
  'temporarily_unavailable',
  // RFC 8628 §3.5 (device authorization grant)
  'authorization_pending',
  'slow_down',
  'expired_token',
  // RFC 9126 (PAR) and RFC 9449 (DPoP)
  'invalid_request_uri',
  'invalid_dpop_proof',
  'use_dpop_nonce',
  // #27 item 13: 404 for a path with no endpoint (no OAuth request, so no RFC 6749 code)
  'not_found',
])

/** RFC 6749 §5.2: error_description characters. */
const NQSCHAR = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** Registered redirect URIs and post-logout URIs by client id. */
export function redirectUrisOf(clientId: string): readonly string[] {
  const client = Object.values(CLIENTS).find((c) => c.clientId === clientId)
  return client?.redirectUris ?? []
}
export function postLogoutUrisOf(clientId: string): readonly string[] {
  const client = Object.values(CLIENTS).find((c) => c.clientId === clientId)
  return client?.postLogoutRedirectUris ?? []
}

export const ALL_REDIRECT_URIS = Object.values(CLIENTS).flatMap((c) => c.redirectUris ?? [])
export const ALL_POST_LOGOUT_URIS = Object.values(CLIENTS).flatMap((c) => c.postLogoutRedirectUris ?? [])

export type Service = Awaited<ReturnType<typeof setup>>['service']

/**
 * The fuzz runs of a property on a store: all of them on memory, a quarter (at least 25) on
 * PostgreSQL and Redis, whose round trips cost more and whose parsing is the same code.
 */
export function runsOn(kind: StoreKind, runs: number): number {
  return kind.name === 'memory' ? runs : Math.max(25, Math.ceil(runs / 4))
}

/**
 * A service with a signed-in browser and real tokens of several kinds, on the store `kind`
 * (memory by default; the store is closed and emptied when the running test ends).
 */
export async function fuzzSetup(kind: StoreKind = STORES[0] as StoreKind) {
  const time = clock(Math.floor(Date.now() / 1000))
  const opened = await kind.create(time.now)
  onTestFinished(() => opened.dispose())
  const ctx = await setup({ store: opened.store, now: time.now })
  const { result } = await signIn(ctx)
  // #29: the device clients, and a pending device authorization of `cli`
  await ensureDeviceClients(ctx)
  const device = await startDevice(ctx, { scope: 'openid api1' })
  // the service's signing keys and a client_credentials token for `service`
  const jwks = (await ctx.service.keys.jwks()) as { keys: Array<{ kid: string }> }
  const cc = await ctx.service.fetch(
    form(
      `${ISSUER}/connect/token`,
      { grant_type: 'client_credentials', scope: 'api1' },
      { authorization: basic('service', 'service-secret') },
    ),
  )
  const ccToken = ((await cc.json()) as { access_token: string }).access_token
  const cookies = [...ctx.browser.cookies]
  return {
    ...ctx,
    clock: time,
    kids: jwks.keys.map((k) => k.kid),
    accessToken: result.access_token,
    refreshToken: result.refresh_token as string,
    idToken: result.id_token as string,
    ccToken,
    deviceCode: device.device_code,
    /** `name=value` of each cookie of the signed-in browser, and all of them in one header. */
    cookies: [...cookies.map(([n, v]) => `${n}=${v}`), ctx.browser.cookieHeader()],
    /** Valid Authorization headers of confidential clients. */
    credentials: [basic('web', 'web-secret'), basic('service', 'service-secret'), basic('api1', 'api1-secret')],
  }
}

/** Starts a real interaction (for `web` unless told) in a fresh browser: its uid, csrf and browser cookie. */
export async function startInteraction(
  service: Service,
  extra: Record<string, string> = {},
  options: { clientId?: string; redirectUri?: string; scope?: string } = {},
): Promise<{ uid: string; csrf: string; cookie: string; browser: Browser; html: string; url: URL }> {
  const as = { issuer: ISSUER, authorization_endpoint: `${ISSUER}/connect/authorize` } as oauth.AuthorizationServer
  const { url } = await authorizationUrl(as, { ...options, extra })
  const browser = new Browser(service.fetch)
  const first = await browser.navigate(url.href)
  if (first.page?.status !== 200) throw new Error(`no sign-in page: ${first.page?.status} ${first.callback}`)
  const html = first.page.html
  const uid = /name="uid" value="([^"]+)"/.exec(html)?.[1]
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1]
  if (!uid || !csrf) throw new Error('no uid or csrf on the sign-in page')
  return { uid, csrf, cookie: browser.cookieHeader(), browser, html, url }
}

/** Sends a spec to the handler; a rejected promise fails the property. */
export async function send(
  service: Service,
  spec: RequestSpec,
): Promise<{ request: Request; response: Response; body: string }> {
  const request = toRequest(ISSUER, spec)
  const response = await service.fetch(request)
  expect(response).toBeInstanceOf(Response)
  const body = await response.text()
  return { request, response, body }
}

function mediaType(response: Response): string {
  return (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
}

/** API endpoints: no 5xx, no redirects; every 4xx is JSON with a known string `error`. */
export function checkApi(response: Response, body: string, method: string): void {
  expect(response.status, body).toBeLessThan(500)
  expect(response.status).toBeGreaterThanOrEqual(200)
  expect(response.status < 300 || response.status >= 400, 'API endpoints never redirect').toBe(true)
  if (response.status >= 400) {
    expect(mediaType(response)).toBe('application/json')
    if (method === 'HEAD' && body === '') return
    const json = JSON.parse(body) as { error?: unknown; error_description?: unknown }
    expect(typeof json.error).toBe('string')
    expect(ERROR_CODES.has(json.error as string), `unknown error ${String(json.error)}`).toBe(true)
    if (json.error_description !== undefined) {
      expect(typeof json.error_description).toBe('string')
      expect(json.error_description as string).toMatch(NQSCHAR)
    }
    if (response.status === 401) expect(response.headers.get('www-authenticate')).toMatch(/^(Basic|Bearer|DPoP) /)
    if (response.status === 405) expect(response.headers.get('allow')).toMatch(/^[A-Z]+(, [A-Z]+)*$/)
  }
}

/** Where a browser endpoint may redirect for one request. */
export interface RedirectPolicy {
  /** Redirect URIs (exact strings) the response may go to, with a query appended. */
  redirectUris: readonly string[]
  /** Whether the built-in interaction page is a valid target. */
  interaction?: boolean
}

/** The part of a Location before its query. */
function base(location: string): string {
  const q = location.indexOf('?')
  return q < 0 ? location : location.slice(0, q)
}

/**
 * Browser endpoints: no 5xx; HTML pages or 3xx; pages never contain the marker unescaped;
 * a Location only to an allowed redirect URI (with `iss` and code or error) or the interaction page.
 */
export function checkBrowser(response: Response, body: string, policy: RedirectPolicy): void {
  expect(response.status, body.slice(0, 2000)).toBeLessThan(500)
  expect(response.status).toBeGreaterThanOrEqual(200)
  if (response.status >= 300 && response.status < 400) {
    expect(response.status).toBe(303)
    const location = response.headers.get('location')
    expect(location).toBeTypeOf('string')
    checkLocation(location as string, policy)
    return
  }
  expect(response.headers.get('location')).toBeNull()
  expect(mediaType(response)).toBe('text/html')
  expect(response.headers.get('content-security-policy')).toContain("default-src 'none'")
  expect(body).not.toMatch(RAW_MARKER)
}

export function checkLocation(location: string, policy: RedirectPolicy): void {
  if (policy.interaction && location.startsWith(`${INTERACTION_URL}?`)) {
    expect(location).toMatch(/^https:\/\/auth\.example\.test\/connect\/interaction\?uid=[A-Za-z0-9_-]+$/)
    return
  }
  const target = base(location)
  expect(policy.redirectUris, `redirect to ${location}`).toContain(target)
  // nothing but a query appended to the registered URI, with the values the service sets
  const url = new URL(location)
  expect(url.hash).toBe('')
  const params = url.searchParams
  if (params.has('code') || params.has('error')) expect(params.get('iss')).toBe(ISSUER)
}

/** Logout: a Location only to a registered post-logout URI of an allowed client, with state at most. */
export function checkLogoutLocation(location: string, allowed: readonly string[]): void {
  const target = base(location)
  expect(allowed, `logout redirect to ${location}`).toContain(target)
  const url = new URL(location)
  for (const name of url.searchParams.keys()) expect(name).toBe('state')
}
