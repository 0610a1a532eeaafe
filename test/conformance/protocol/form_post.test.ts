/**
 * #30 `response_mode=form_post` (OAuth 2.0 Form Post Response Mode §2): the authorization response,
 * success or error (prompt=none too, and through PAR), is a 200 HTML page whose form POSTs code,
 * state and iss (or the error fields) as hidden, HTML-escaped inputs to the redirect_uri,
 * submitted by the one script the CSP admits (its nonce) or a `<noscript>` button, never cached.
 * `query` keeps working; an unknown mode is invalid_request (AUTHZ-18), by query. Under the
 * `fapi2-security` profile form_post is refused and not advertised.
 */
import type { Server } from 'node:http'
import { exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import * as client from 'openid-client'
import { afterEach, describe, expect, it } from 'vitest'
import { serveNode } from '../../../adapters/node.ts'
import { createTokenService } from '../../../src/index.ts'
import { Browser, type Page } from '../../helpers/browser.ts'
import { authorizationUrl, setup, webAuth, webClient } from '../../helpers/flow.ts'
import { parSetup, push, requestParams, requestUriUrl } from '../../helpers/par.ts'
import { CLIENTS, ISSUER, RU, USERS, clock } from '../../helpers/service.ts'
import { freePort } from '../../runtime/server.ts'
import { formPostParams } from '../oidcc/suite.ts'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** Signs in on the page the authorization request shows; the page that follows. */
async function signInPage(browser: Browser, url: URL): Promise<Page> {
  const first = await browser.navigate(url.href)
  if (!first.page) throw new Error('no sign-in page')
  const after = await browser.signIn(first.page, 'alice', 'alice-password')
  if (!after.page) throw new Error(`no form post page, redirected to ${after.callback}`)
  return after.page
}

describe('#30 response_mode=form_post', () => {
  it('#30 AUTHZ-01: the code response is a POST form with code, state, iss; escaped, CSP nonce, noscript, no-store', async () => {
    const ctx = await setup()
    const state = `s"<script>alert(1)</script>&'${oauth.generateRandomState()}`
    const request = await authorizationUrl(ctx.as, { state, extra: { response_mode: 'form_post' } })
    const page = await signInPage(ctx.browser, request.url)
    expect(page.html).not.toContain('<script>alert(1)</script>')
    expect(page.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(page.response.headers.get('referrer-policy')).toBe('no-referrer')
    const params = formPostParams(page, RU)
    if (!params) throw new Error(`not a form post page:\n${page.html}`)
    expect([...params.keys()].sort()).toEqual(['code', 'iss', 'state'])
    expect(params.get('iss')).toBe(ISSUER)
    // oauth4webapi takes form_post parameters as URLSearchParams: state and iss are checked.
    const validated = oauth.validateAuthResponse(ctx.as, webClient, params, state)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      validated,
      RU,
      request.verifier,
      ctx.opts,
    )
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: request.nonce as string,
    })
    expect(oauth.getValidatedIdTokenClaims(tokens)?.sub).toBe('user-1')
  })

  it('#30 the CSP nonce is fresh on every page and no other script or source is allowed', async () => {
    const ctx = await setup()
    const nonces = new Set<string>()
    for (let i = 0; i < 2; i++) {
      const request = await authorizationUrl(ctx.as, { extra: { response_mode: 'form_post' } })
      const outcome = await ctx.browser.navigate(request.url.href) // signed in after the first round
      const page = outcome.page?.html.includes('password') ? await signInPage(ctx.browser, request.url) : outcome.page
      const csp = page?.response.headers.get('content-security-policy') ?? ''
      expect(csp).toMatch(
        /^default-src 'none'; script-src 'nonce-[A-Za-z0-9_-]+'; base-uri 'none'; frame-ancestors 'none'$/,
      )
      nonces.add(csp)
    }
    expect(nonces.size).toBe(2)
  })

  it('#30 errors go back by form post too: invalid_scope with state and iss, no code', async () => {
    const ctx = await setup()
    const request = await authorizationUrl(ctx.as, { scope: 'openid nope', extra: { response_mode: 'form_post' } })
    const { page, callback } = await ctx.browser.navigate(request.url.href)
    expect(callback).toBeUndefined()
    const params = formPostParams(page as Page, RU)
    expect(params?.get('error')).toBe('invalid_scope')
    expect(params?.get('state')).toBe(request.state)
    expect(params?.get('iss')).toBe(ISSUER)
    expect(params?.get('code')).toBeNull()
    expect(() =>
      oauth.validateAuthResponse(ctx.as, webClient, params as URLSearchParams, request.state as string),
    ).toThrow(oauth.AuthorizationResponseError)
  })

  it('#30 AUTHZ-23: prompt=none without a session → login_required by form post', async () => {
    const ctx = await setup()
    const request = await authorizationUrl(ctx.as, { extra: { response_mode: 'form_post', prompt: 'none' } })
    const { page } = await ctx.browser.navigate(request.url.href)
    const params = formPostParams(page as Page, RU)
    expect(params?.get('error')).toBe('login_required')
    expect(params?.get('state')).toBe(request.state)
  })

  it('#30 a denied consent (access_denied) goes back by form post', async () => {
    const ctx = await setup()
    const url = new URL(ctx.as.authorization_endpoint as string)
    const consentRu = 'https://consent.example.test/cb'
    for (const [k, v] of Object.entries({
      client_id: 'consent',
      redirect_uri: consentRu,
      response_type: 'code',
      scope: 'openid email',
      state: 'st',
      response_mode: 'form_post',
    }))
      url.searchParams.set(k, v)
    const first = await ctx.browser.navigate(url.href)
    const consent = await ctx.browser.signIn(first.page as Page, 'alice', 'alice-password')
    const denied = await ctx.browser.submit(consent.page as Page, { decision: 'deny' })
    const params = formPostParams(denied.page as Page, consentRu)
    expect(params?.get('error')).toBe('access_denied')
    expect(params?.get('state')).toBe('st')
  })

  it('#30 through PAR (RFC 9126): the pushed response_mode=form_post is used', async () => {
    const ctx = await parSetup()
    const { params, state, nonce, verifier } = await requestParams({ extra: { response_mode: 'form_post' } })
    const { request_uri } = await push(ctx, params)
    const page = await signInPage(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    const response = formPostParams(page, RU) as URLSearchParams
    const validated = oauth.validateAuthResponse(ctx.as, webClient, response, state)
    const tokens = await oauth.processAuthorizationCodeResponse(
      ctx.as,
      webClient,
      await oauth.authorizationCodeGrantRequest(ctx.as, webClient, webAuth, validated, RU, verifier, ctx.opts),
      { expectedNonce: nonce },
    )
    expect(tokens.access_token).toBeTruthy()
  })

  it('#30 AUTHZ-18: response_mode=query still redirects; fragment or an unknown mode is invalid_request by query', async () => {
    const ctx = await setup()
    await ctx.browser
      .navigate((await authorizationUrl(ctx.as)).url.href)
      .then((r) => ctx.browser.signIn(r.page as Page, 'alice', 'alice-password'))
    const query = await ctx.browser.request(
      (await authorizationUrl(ctx.as, { extra: { response_mode: 'query' } })).url.href,
    )
    expect(query.status).toBe(303)
    expect(new URL(query.headers.get('location') as string).searchParams.get('code')).toBeTruthy()
    for (const mode of ['fragment', 'jwt', 'FORM_POST']) {
      const request = await authorizationUrl(ctx.as, { extra: { response_mode: mode } })
      const response = await ctx.browser.request(request.url.href)
      expect(response.status, mode).toBe(303)
      const location = new URL(response.headers.get('location') as string)
      expect(location.searchParams.get('error')).toBe('invalid_request')
      expect(location.searchParams.get('state')).toBe(request.state)
    }
  })

  it('#30 DISC-13: both metadata documents list form_post in response_modes_supported', async () => {
    const ctx = await setup()
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const doc = await (await ctx.service.fetch(new Request(`${ISSUER}${path}`))).json()
      expect(doc.response_modes_supported, path).toEqual(['query', 'form_post'])
    }
  })

  it('#30 openid-client over real HTTP: authorizationCodeGrant takes the form post (a POST Request)', async () => {
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    const service = createTokenService({
      issuer,
      now: clock(Math.floor(Date.now() / 1000)).now,
      users: USERS,
      secretHashIterations: 1000,
      logger: { warn() {}, error() {} },
    })
    await service.clients.ensure(CLIENTS.web as NonNullable<(typeof CLIENTS)['web']>)
    await service.ready()
    const server: Server = await serveNode(service.fetch, { port, hostname: '127.0.0.1' })
    closers.push(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await service.close()
    })
    const config = await client.discovery(new URL(issuer), 'web', undefined, client.ClientSecretBasic('web-secret'), {
      execute: [client.allowInsecureRequests],
    })
    expect(config.serverMetadata().response_modes_supported).toContain('form_post')
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: RU,
      scope: 'openid email',
      response_mode: 'form_post',
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    // A browser over real HTTP: the fetch is the global one.
    const browser = new Browser((request) => fetch(request))
    const first = await browser.navigate(url.href)
    const after = await browser.signIn(first.page as Page, 'alice', 'alice-password')
    const params = formPostParams(after.page as Page, RU) as URLSearchParams
    const post = new Request(RU, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: params,
    })
    const tokens = await client.authorizationCodeGrant(config, post, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    })
    expect(tokens.claims()?.sub).toBe('user-1')
  })
})

describe('#30 form_post under the fapi2-security profile', () => {
  async function fapiSetup() {
    const ctx = await parSetup({ profile: 'fapi2-security' })
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
    await ctx.service.clients.ensure({
      clientId: 'bank',
      permissions: CLIENTS.web?.permissions ?? [],
      redirectUris: [RU],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwks: { keys: [{ ...(await exportJWK(publicKey)), kty: 'EC', alg: 'ES256', kid: 'bank-1' }] },
    })
    const bank: oauth.Client = { client_id: 'bank', [oauth.clockSkew]: ctx.clock.now() - Math.floor(Date.now() / 1000) }
    return { ...ctx, bank, auth: oauth.PrivateKeyJwt({ key: privateKey, kid: 'bank-1' }) }
  }

  it('#30 FAPI 2.0: form_post is not advertised and a pushed form_post request is invalid_request', async () => {
    const ctx = await fapiSetup()
    expect(ctx.as.response_modes_supported).toEqual(['query'])
    const { params } = await requestParams({ clientId: 'bank', extra: { response_mode: 'form_post' } })
    const response = await oauth.pushedAuthorizationRequest(ctx.as, ctx.bank, ctx.auth, params, {
      ...ctx.opts,
      DPoP: oauth.DPoP(ctx.bank, await oauth.generateKeyPair('ES256')),
    })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_request' })
  })

  it('#30 FAPI 2.0: an error of a form_post request at the authorization endpoint is a query redirect', async () => {
    const ctx = await fapiSetup()
    const url = new URL(ctx.as.authorization_endpoint as string)
    url.searchParams.set('client_id', 'bank')
    url.searchParams.set('redirect_uri', RU)
    url.searchParams.set('response_type', 'code')
    url.searchParams.set('response_mode', 'form_post')
    url.searchParams.set('state', 'st')
    const response = await ctx.service.fetch(new Request(url))
    expect(response.status).toBe(303)
    const location = new URL(response.headers.get('location') as string)
    expect(location.searchParams.get('error')).toBeTruthy()
    expect(location.searchParams.get('state')).toBe('st')
  })
})
