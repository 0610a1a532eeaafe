/**
 * RFC 9126 §4 at the authorization endpoint: a request_uri is used once, by the client that pushed
 * it, before it expires; the pushed parameters are the request; and where pushing is required, a
 * request without one is refused by redirect (with iss, RFC 9207).
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { authorizationUrl, authorize, expectErrorRedirect } from '../../helpers/flow.ts'
import { type ParContext, parSetup, push, requestParams, requestUriUrl } from '../../helpers/par.ts'
import { ISSUER, RU } from '../../helpers/service.ts'

const web: oauth.Client = { client_id: 'web' }

/** The authorization endpoint's answer to `url`, redirects not followed. */
function go(ctx: ParContext, url: URL): Promise<Response> {
  return ctx.service.fetch(new Request(url, { redirect: 'manual' }))
}

/** An HTML error page naming `error`, never a redirect. */
async function expectErrorPage(response: Response, error: string): Promise<void> {
  expect(response.status).toBe(400)
  expect(response.headers.get('location')).toBeNull()
  expect(response.headers.get('content-type')).toMatch(/^text\/html/)
  expect(await response.text()).toContain(error)
}

async function pushed(ctx: ParContext, clientId = 'web') {
  const redirectUri = clientId === 'web2' ? 'https://rp2.example.test/cb' : RU
  const request = await requestParams({ clientId, redirectUri, scope: 'openid profile' })
  const auth = oauth.ClientSecretBasic(`${clientId}-secret`)
  const { request_uri } = await push(ctx, request.params, { client_id: clientId }, auth)
  return { ...request, requestUri: request_uri }
}

describe('RFC 9126 §4: a request_uri that cannot be used is an error page (no redirect is known to be safe)', () => {
  it('a second use → invalid_request_uri', async () => {
    const ctx = await parSetup()
    const { requestUri } = await pushed(ctx)
    const first = await go(ctx, requestUriUrl(ctx.as, 'web', requestUri))
    expect(first.status).toBe(303)
    await expectErrorPage(await go(ctx, requestUriUrl(ctx.as, 'web', requestUri)), 'invalid_request_uri')
  })

  it('expired (parTtl passed) → invalid_request_uri', async () => {
    const ctx = await parSetup({ parTtl: 10 })
    const { requestUri } = await pushed(ctx)
    ctx.clock.advance(10)
    await expectErrorPage(await go(ctx, requestUriUrl(ctx.as, 'web', requestUri)), 'invalid_request_uri')
  })

  it('used within parTtl → accepted', async () => {
    const ctx = await parSetup({ parTtl: 10 })
    const { requestUri } = await pushed(ctx)
    ctx.clock.advance(9)
    expect((await go(ctx, requestUriUrl(ctx.as, 'web', requestUri))).status).toBe(303)
  })

  it("RFC 9126 §2.2: another client's request_uri → invalid_request_uri", async () => {
    const ctx = await parSetup()
    const { requestUri } = await pushed(ctx, 'web2')
    await expectErrorPage(await go(ctx, requestUriUrl(ctx.as, 'web', requestUri)), 'invalid_request_uri')
  })

  it("#27 item 9: another client's attempt neither uses up nor reveals the request_uri; its owner still uses it", async () => {
    const ctx = await parSetup()
    const { requestUri, state } = await pushed(ctx, 'web2')
    const foreign = await go(ctx, requestUriUrl(ctx.as, 'web', requestUri))
    await expectErrorPage(foreign.clone(), 'invalid_request_uri')
    // The same page as for an unknown request_uri: nothing of the pushed request shows.
    const unknown = await go(ctx, requestUriUrl(ctx.as, 'web', `urn:ietf:params:oauth:request_uri:${'A'.repeat(43)}`))
    const strip = (html: string) => html.replace(/nonce-[A-Za-z0-9_-]+/g, '').replace(/nonce="[^"]+"/g, '')
    expect(strip(await foreign.text())).toBe(strip(await unknown.text()))
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web2', requestUri))
    expect(callback.origin + callback.pathname).toBe('https://rp2.example.test/cb')
    expect(callback.searchParams.has('code')).toBe(true)
    expect(callback.searchParams.get('state')).toBe(state)
  })

  it('an unknown or malformed request_uri → invalid_request_uri', async () => {
    const ctx = await parSetup()
    for (const requestUri of [
      `urn:ietf:params:oauth:request_uri:${'A'.repeat(43)}`,
      'urn:ietf:params:oauth:request_uri:short',
      'urn:ietf:params:oauth:request_uri:',
    ]) {
      await expectErrorPage(await go(ctx, requestUriUrl(ctx.as, 'web', requestUri)), 'invalid_request_uri')
    }
  })

  it('a request_uri without client_id, or of an unknown client → error page', async () => {
    const ctx = await parSetup()
    const { requestUri } = await pushed(ctx)
    const url = requestUriUrl(ctx.as, 'web', requestUri)
    url.searchParams.delete('client_id')
    await expectErrorPage(await go(ctx, url), 'invalid_request')
    await expectErrorPage(await go(ctx, requestUriUrl(ctx.as, 'nope', requestUri)), 'invalid_client')
    // Neither attempt used it up.
    expect((await go(ctx, requestUriUrl(ctx.as, 'web', requestUri))).status).toBe(303)
  })

  it('AUTHZ-31: a request_uri that is not a pushed one is still request_uri_not_supported', async () => {
    const ctx = await parSetup()
    const { url, state } = await authorizationUrl(ctx.as, { state: 's' })
    url.searchParams.set('request_uri', 'https://rp.example.test/request.jwt')
    const location = new URL((await go(ctx, url)).headers.get('location') as string)
    expect(location.searchParams.get('error')).toBe('request_uri_not_supported')
    expect(location.searchParams.get('state')).toBe(state)
  })
})

describe('RFC 9126 §4: the pushed parameters are the request', () => {
  it('query parameters beside client_id and request_uri are ignored', async () => {
    const ctx = await parSetup()
    const { requestUri, state, verifier, nonce } = await pushed(ctx)
    const url = requestUriUrl(ctx.as, 'web', requestUri)
    url.searchParams.set('redirect_uri', 'https://rp.example.test/cb2')
    url.searchParams.set('scope', 'openid email api1')
    url.searchParams.set('state', 'from-the-query')
    url.searchParams.set('response_type', 'token')
    url.searchParams.set('prompt', 'none')
    url.searchParams.set('code_challenge_method', 'plain')
    const callback = await authorize(ctx.browser, url)
    expect(callback.origin + callback.pathname).toBe(RU)
    const params = oauth.validateAuthResponse(ctx.as, web, callback, state)
    const auth = oauth.ClientSecretBasic('web-secret')
    const response = await oauth.authorizationCodeGrantRequest(ctx.as, web, auth, params, RU, verifier, ctx.opts)
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, web, response, { expectedNonce: nonce })
    expect(result.scope).toBe('openid profile')
  })

  it('the pushed request survives sign-in and consent (taken once, on arrival)', async () => {
    const ctx = await parSetup()
    const redirectUri = 'https://consent.example.test/cb'
    const request = await requestParams({ clientId: 'consent', redirectUri, scope: 'openid email' })
    const consent: oauth.Client = { client_id: 'consent' }
    const auth = oauth.ClientSecretBasic('consent-secret')
    const { request_uri } = await push(ctx, request.params, consent, auth)
    const url = requestUriUrl(ctx.as, 'consent', request_uri)
    const first = await ctx.browser.navigate(url.href)
    // Used up at arrival: the interaction carries the request on, not the request_uri.
    await expectErrorPage(await go(ctx, url), 'invalid_request_uri')
    const signedIn = await ctx.browser.signIn(first.page as never, 'alice', 'alice-password')
    expect(signedIn.page?.html).toContain('data-scope="email"')
    const allowed = await ctx.browser.submit(signedIn.page as never, { decision: 'allow' })
    const callback = allowed.callback as URL
    const params = oauth.validateAuthResponse(ctx.as, consent, callback, request.state)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      consent,
      auth,
      params,
      redirectUri,
      request.verifier,
      ctx.opts,
    )
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, consent, response, {
      expectedNonce: request.nonce,
    })
    expect(result.scope).toBe('openid email')
  })

  it('an error in the pushed request that surfaces only at authorization goes back with its state and iss', async () => {
    const ctx = await parSetup()
    const request = await requestParams({ extra: { prompt: 'none' } })
    const { request_uri } = await push(ctx, request.params)
    const location = new URL(
      (await go(ctx, requestUriUrl(ctx.as, 'web', request_uri))).headers.get('location') as string,
    )
    expectErrorRedirect(location, RU, 'login_required', request.state)
  })
})

describe('RFC 9126 §4: requirePushedAuthorizationRequests', () => {
  /** An authorization request without request_uri is refused by redirect: invalid_request, state, iss. */
  async function expectPushRequired(ctx: ParContext, clientId: string, redirectUri: string): Promise<void> {
    const { url, state } = await authorizationUrl(ctx.as, { clientId, redirectUri, state: 'st' })
    const response = await go(ctx, url)
    expect(response.status).toBe(303)
    const location = new URL(response.headers.get('location') as string)
    expect(location.origin + location.pathname).toBe(redirectUri)
    expect(location.searchParams.get('error')).toBe('invalid_request')
    expect(location.searchParams.get('error_description')).toMatch(/pushed authorization requests are required/)
    expect(location.searchParams.get('state')).toBe(state)
    expect(location.searchParams.get('iss')).toBe(ISSUER)
    // AUTHZ-04: as oauth4webapi reads it.
    expect(() => oauth.validateAuthResponse(ctx.as, { client_id: clientId }, location, state)).toThrow(
      expect.objectContaining({ error: 'invalid_request' }),
    )
  }

  it('globally: discovery says so, every client must push, pushed requests work', async () => {
    const ctx = await parSetup({ requirePushedAuthorizationRequests: true })
    expect(ctx.as.require_pushed_authorization_requests).toBe(true)
    await expectPushRequired(ctx, 'web', RU)
    await expectPushRequired(ctx, 'spa', 'https://spa.example.test/callback')
    const { requestUri } = await pushed(ctx)
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', requestUri))
    expect(callback.searchParams.has('code')).toBe(true)
  })

  it('per client: only that client must push; discovery stays false', async () => {
    const ctx = await parSetup()
    await ctx.service.clients.update('web2', { requirePushedAuthorizationRequests: true })
    expect(ctx.as.require_pushed_authorization_requests).toBe(false)
    await expectPushRequired(ctx, 'web2', 'https://rp2.example.test/cb')
    const other = await authorizationUrl(ctx.as)
    expect(new URL((await go(ctx, other.url)).headers.get('location') as string).pathname).toBe('/connect/interaction')
    const { requestUri } = await pushed(ctx, 'web2')
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web2', requestUri))
    expect(callback.searchParams.has('code')).toBe(true)
  })
})
