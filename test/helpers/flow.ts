/**
 * The authorization code flow driven by oauth4webapi, signing in through the built-in page.
 */
import * as oauth from 'oauth4webapi'
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
