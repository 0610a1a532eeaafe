/**
 * Pushed authorization requests (RFC 9126) in tests: a service whose store the test can read, the
 * parameters of a push with PKCE, the push itself through oauth4webapi, and the authorization URL
 * that carries only client_id and request_uri.
 */
import * as oauth from 'oauth4webapi'
import { createMemoryStore } from '../../src/storage/memory.ts'
import { Browser } from './browser.ts'
import { RU, clock, discover, inProcess, makeService } from './service.ts'

export const PAR_URL = 'https://auth.example.test/connect/par'
export const REQUEST_URI = /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/

/** A service (memory store exposed), its metadata and a browser. */
export async function parSetup(options: Parameters<typeof makeService>[0] = {}) {
  const time = clock()
  const store = createMemoryStore({ now: time.now })
  const { service } = await makeService({ store, now: time.now, ...options })
  const as = await discover(service.fetch)
  const browser = new Browser(service.fetch)
  const opts = inProcess(service.fetch)
  return { service, clock: time, store, as, browser, opts }
}

export type ParContext = Awaited<ReturnType<typeof parSetup>>

/** The parameters of a code flow request with PKCE S256, and what the client keeps. */
export async function requestParams(
  options: { clientId?: string; redirectUri?: string; scope?: string; extra?: Record<string, string> } = {},
) {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const nonce = oauth.generateRandomNonce()
  const params = new URLSearchParams({
    client_id: options.clientId ?? 'web',
    response_type: 'code',
    redirect_uri: options.redirectUri ?? RU,
    scope: options.scope ?? 'openid profile email',
    state,
    nonce,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  })
  for (const [name, value] of Object.entries(options.extra ?? {})) params.set(name, value)
  return { params, verifier, state, nonce }
}

/** Pushes `params` through oauth4webapi; returns the parsed 201 response. */
export async function push(
  ctx: Pick<ParContext, 'as' | 'opts'>,
  params: URLSearchParams,
  client: oauth.Client = { client_id: 'web' },
  auth: oauth.ClientAuth = oauth.ClientSecretBasic('web-secret'),
  options: oauth.PushedAuthorizationRequestOptions = {},
): Promise<oauth.PushedAuthorizationResponse> {
  const response = await oauth.pushedAuthorizationRequest(ctx.as, client, auth, params, { ...ctx.opts, ...options })
  return oauth.processPushedAuthorizationResponse(ctx.as, client, response)
}

/** RFC 9126 §4: the authorization request names only the client and the request_uri. */
export function requestUriUrl(as: oauth.AuthorizationServer, clientId: string, requestUri: string): URL {
  const url = new URL(as.authorization_endpoint as string)
  url.searchParams.set('client_id', clientId)
  url.searchParams.set('request_uri', requestUri)
  return url
}

/** The stored code of a callback (the store keeps codes under their SHA-256). */
export async function storedCode(ctx: Pick<ParContext, 'store'>, callback: URL) {
  const code = callback.searchParams.get('code') as string
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(code))
  const id = Buffer.from(digest).toString('base64url')
  return ctx.store.codes.get(id)
}
