/**
 * The authorization code flow driven by oauth4webapi, signing in through the built-in page.
 */
import * as oauth from 'oauth4webapi'
import { expect } from 'vitest'
import { Browser } from './browser.ts'
import { CLIENTS, ISSUER, RU, discover, inProcess, makeService } from './service.ts'

export type Service = Awaited<ReturnType<typeof makeService>>['service']

export const webClient: oauth.Client = { client_id: 'web' }
export const webAuth = oauth.ClientSecretBasic('web-secret')

export interface AuthorizeOptions {
  clientId?: string
  redirectUri?: string
  scope?: string
  state?: string | null
  nonce?: string | null
  pkce?: boolean
  extra?: Record<string, string>
}

/** Builds an authorization request; returns the URL and what the client must remember. */
export async function authorizationUrl(as: oauth.AuthorizationServer, options: AuthorizeOptions = {}) {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = options.state === null ? undefined : (options.state ?? oauth.generateRandomState())
  const nonce = options.nonce === null ? undefined : (options.nonce ?? oauth.generateRandomNonce())
  const url = new URL(as.authorization_endpoint as string)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', options.clientId ?? 'web')
  url.searchParams.set('redirect_uri', options.redirectUri ?? RU)
  url.searchParams.set('scope', options.scope ?? 'openid profile email')
  if (state !== undefined) url.searchParams.set('state', state)
  if (nonce !== undefined) url.searchParams.set('nonce', nonce)
  if (options.pkce !== false) {
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier))
    url.searchParams.set('code_challenge_method', 'S256')
  }
  for (const [name, value] of Object.entries(options.extra ?? {})) url.searchParams.set(name, value)
  return { url, verifier, state, nonce }
}

/** A service, its discovered metadata and a browser. */
export async function setup(options: Parameters<typeof makeService>[0] = {}) {
  const { service, clock } = await makeService(options)
  const as = await discover(service.fetch)
  const browser = new Browser(service.fetch)
  const opts = inProcess(service.fetch)
  return { service, clock, as, browser, opts }
}

/**
 * An error response redirected to the client (RFC 6749 §4.1.2.1): at its redirect URI, with the
 * error, the request's `state` and the issuer as `iss` (RFC 9207).
 */
export function expectErrorRedirect(
  location: URL,
  redirectUri: string,
  error: string,
  state: string | undefined,
): void {
  expect(location.origin + location.pathname).toBe(redirectUri)
  expect(location.searchParams.get('error')).toBe(error)
  expect(location.searchParams.get('state')).toBe(state ?? null)
  expect(location.searchParams.get('iss')).toBe(ISSUER)
}

/** One instance of the service, as `setup` makes it. */
export type Instance = Awaited<ReturnType<typeof setup>>

/** A token response's status and JSON body. */
export interface TokenAnswer {
  status: number
  body: Record<string, unknown>
}

/**
 * Concurrent redemptions of one grant (a code, a device code) on instances sharing one store:
 * exactly one got tokens and the others `invalid_grant`, and the replays revoked what the winner
 * got, as every instance sees (its access token inactive, its refresh token refused).
 */
export async function expectOneWinnerRevoked(
  results: readonly TokenAnswer[],
  instances: readonly Instance[],
  client: oauth.Client,
  auth: oauth.ClientAuth,
  round: number,
): Promise<void> {
  const winners = results.filter((result) => result.status === 200)
  expect(winners, `round ${round}: ${results.map((r) => r.status).join(' ')}`).toHaveLength(1)
  for (const loser of results.filter((result) => result.status !== 200)) {
    expect(loser.status).toBe(400)
    expect(loser.body.error).toBe('invalid_grant')
  }
  const won = winners[0]?.body as { access_token: string; refresh_token: string }
  expect(won.refresh_token).toBeTypeOf('string')
  for (const instance of instances) {
    const introspected = await oauth.introspectionRequest(instance.as, client, auth, won.access_token, instance.opts)
    expect(await introspected.json()).toEqual({ active: false })
    const refreshed = await oauth.refreshTokenGrantRequest(instance.as, client, auth, won.refresh_token, instance.opts)
    expect(refreshed.status).toBe(400)
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' })
  }
}

/** Runs authorize → sign in (if asked) → callback; returns the callback URL. */
export async function authorize(
  browser: Browser,
  url: URL,
  credentials: { username: string; password: string } | undefined = { username: 'alice', password: 'alice-password' },
): Promise<URL> {
  const first = await browser.navigate(url.href)
  if (first.callback) return first.callback
  if (!first.page) throw new Error('no page')
  if (!credentials) throw new Error(`sign-in page shown unexpectedly (status ${first.page.status})`)
  const after = await browser.signIn(first.page, credentials.username, credentials.password)
  if (!after.callback) throw new Error(`no redirect after sign-in:\n${after.page?.html}`)
  return after.callback
}

/** What a client redeeming a code sends: its identity, authentication and redirect URI. */
export interface RedeemOptions {
  client?: oauth.Client
  auth?: oauth.ClientAuth
  redirectUri?: string
  pkce?: boolean
}

/**
 * Validates the callback of `request` and sends the token request for its code (oauth4webapi),
 * as `web` unless told: the token endpoint's raw response, to check or process.
 */
export async function redeemCallback(
  ctx: { as: oauth.AuthorizationServer; opts: ReturnType<typeof inProcess> },
  callback: URL,
  request: { state?: string | undefined; verifier: string },
  options: RedeemOptions = {},
): Promise<{ params: URLSearchParams; response: Response }> {
  const client = options.client ?? webClient
  const params = oauth.validateAuthResponse(ctx.as, client, callback, request.state ?? oauth.expectNoState)
  const response = await oauth.authorizationCodeGrantRequest(
    ctx.as,
    client,
    options.auth ?? webAuth,
    params,
    options.redirectUri ?? RU,
    options.pkce === false ? oauth.nopkce : request.verifier,
    ctx.opts,
  )
  return { params, response }
}

/** The whole flow up to the token response, checked by oauth4webapi. */
export async function signIn(
  ctx: { as: oauth.AuthorizationServer; browser: Browser; opts: ReturnType<typeof inProcess> },
  options: AuthorizeOptions & {
    client?: oauth.Client
    auth?: oauth.ClientAuth
    credentials?: { username: string; password: string }
  } = {},
) {
  const client = options.client ?? webClient
  const request = await authorizationUrl(ctx.as, { clientId: client.client_id, ...options })
  const callback = await authorize(ctx.browser, request.url, options.credentials)
  const { params, response } = await redeemCallback(ctx, callback, request, options)
  const result = await oauth.processAuthorizationCodeResponse(ctx.as, client, response, {
    expectedNonce: request.nonce ?? oauth.expectNoNonce,
    requireIdToken: (options.scope ?? 'openid').split(' ').includes('openid'),
  })
  return { result, callback, request, params }
}

export { CLIENTS, ISSUER, RU }
