/**
 * Back-Channel Logout fixtures (#30): an in-process receiver standing in for the clients'
 * `backchannel_logout_uri`s (records each POST; answers per URL with a scripted sequence of
 * statuses, a hang until the sender's time-out, or a network failure), a service whose `web` and
 * `web2` clients registered URIs on it, and the logged-in browser of an end-user who used both.
 */
import {
  type JWTPayload,
  type ProtectedHeaderParameters,
  createLocalJWKSet,
  decodeProtectedHeader,
  jwtVerify,
} from 'jose'
import * as oauth from 'oauth4webapi'
import { expect } from 'vitest'
import type { GatehouseEvent, TokenServiceOptions } from '../../../src/index.ts'
import { setup, signIn } from '../../helpers/flow.ts'
import { PLRU } from '../../helpers/service.ts'

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
