/**
 * Pushed authorization requests (RFC 9126): the push and its request_uri through the whole code
 * flow, with oauth4webapi and openid-client.
 */
import * as oauth from 'oauth4webapi'
import * as client from 'openid-client'
import { describe, expect, it } from 'vitest'
import { authorize } from '../../helpers/flow.ts'
import { PAR_URL, REQUEST_URI, parSetup, push, requestParams, requestUriUrl, storedCode } from '../../helpers/par.ts'
import { CLIENTS, ISSUER, RU, basic, form } from '../../helpers/service.ts'

const web: oauth.Client = { client_id: 'web' }
const webAuth = oauth.ClientSecretBasic('web-secret')

describe('RFC 9126 §2: the pushed authorization request endpoint', () => {
  it('RFC 9126 §2.2: 201 with a request_uri URN and expires_in, not cached', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams()
    const response = await ctx.service.fetch(
      form(PAR_URL, Object.fromEntries(params), { authorization: basic('web', 'web-secret') }),
    )
    expect(response.status).toBe(201)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const body = await response.json()
    expect(Object.keys(body).sort()).toEqual(['expires_in', 'request_uri'])
    expect(body.request_uri).toMatch(REQUEST_URI)
    expect(body.expires_in).toBe(60)
  })

  it('RFC 9126 §2.2: expires_in is parTtl', async () => {
    const ctx = await parSetup({ parTtl: 5 })
    const { params } = await requestParams()
    expect((await push(ctx, params)).expires_in).toBe(5)
  })

  it('discovery names the endpoint; pushing is not required by default', async () => {
    const ctx = await parSetup()
    expect(ctx.as.pushed_authorization_request_endpoint).toBe(PAR_URL)
    expect(ctx.as.require_pushed_authorization_requests).toBe(false)
  })
})

describe('RFC 9126 §4: the request_uri at the authorization endpoint, through the whole code flow', () => {
  it('oauth4webapi, client_secret_basic: push, sign in, redeem', async () => {
    const ctx = await parSetup()
    const { params, verifier, state, nonce } = await requestParams()
    const { request_uri } = await push(ctx, params, web, webAuth)
    // The request needs a sign-in: the interaction keeps the pushed request, taken on arrival.
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    expect(callback.origin + callback.pathname).toBe(RU)
    expect(callback.searchParams.get('iss')).toBe(ISSUER)
    const validated = oauth.validateAuthResponse(ctx.as, web, callback, state)
    const response = await oauth.authorizationCodeGrantRequest(ctx.as, web, webAuth, validated, RU, verifier, ctx.opts)
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, web, response, { expectedNonce: nonce })
    expect(result.scope).toBe('openid profile email')
    expect(oauth.getValidatedIdTokenClaims(result)).toMatchObject({ sub: 'user-1', nonce, aud: 'web' })
  })

  it('client_secret_post push, then a session that needs no sign-in', async () => {
    const ctx = await parSetup()
    const auth = oauth.ClientSecretPost('web-secret')
    const first = await requestParams()
    await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', (await push(ctx, first.params, web, auth)).request_uri))
    const { params, verifier, state, nonce } = await requestParams({ scope: 'openid' })
    const { request_uri } = await push(ctx, params, web, auth)
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri), undefined)
    const validated = oauth.validateAuthResponse(ctx.as, web, callback, state)
    const response = await oauth.authorizationCodeGrantRequest(ctx.as, web, auth, validated, RU, verifier, ctx.opts)
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, web, response, { expectedNonce: nonce })
    expect(result.scope).toBe('openid')
  })

  it('RFC 9126 §2.1: a public client pushes with its client_id alone', async () => {
    const ctx = await parSetup()
    const spa: oauth.Client = { client_id: 'spa' }
    const redirectUri = 'https://spa.example.test/callback'
    const { params, verifier, state, nonce } = await requestParams({ clientId: 'spa', redirectUri })
    const { request_uri } = await push(ctx, params, spa, oauth.None())
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'spa', request_uri))
    const validated = oauth.validateAuthResponse(ctx.as, spa, callback, state)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      spa,
      oauth.None(),
      validated,
      redirectUri,
      verifier,
      ctx.opts,
    )
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, spa, response, { expectedNonce: nonce })
    expect(oauth.getValidatedIdTokenClaims(result)?.aud).toBe('spa')
  })

  it('openid-client v6: buildAuthorizationUrlWithPAR, then authorizationCodeGrant', async () => {
    const ctx = await parSetup()
    const fetchInProcess: client.CustomFetch = (url, options) =>
      ctx.service.fetch(new Request(url, options as RequestInit))
    const config = await client.discovery(
      new URL(ISSUER),
      'web',
      'web-secret',
      client.ClientSecretBasic('web-secret'),
      {
        [client.customFetch]: fetchInProcess,
      },
    )
    config[client.customFetch] = fetchInProcess
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const url = await client.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: RU,
      scope: 'openid email',
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    // RFC 9126 §4: only client_id and request_uri travel through the browser.
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri'])
    const callback = await authorize(ctx.browser, url)
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    })
    expect(tokens.scope).toBe('openid email')
    expect(tokens.claims()?.sub).toBe('user-1')
  })

  it('RFC 8707 §2: resource may repeat in a push; the code keeps every one', async () => {
    const MCP = 'https://mcp.example.com/mcp'
    const CAL = 'https://calendar.example.com/'
    const ctx = await parSetup({
      scopes: [
        { name: 'mcp:tools', audience: MCP },
        { name: 'calendar.read', audience: CAL },
      ],
    })
    await ctx.service.clients.update('web', {
      permissions: [...(CLIENTS.web?.permissions ?? []), 'scp:mcp:tools', 'scp:calendar.read'],
    })
    const { params } = await requestParams({ scope: 'mcp:tools calendar.read' })
    params.append('resource', MCP)
    params.append('resource', CAL)
    const { request_uri } = await push(ctx, params)
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    expect(await storedCode(ctx, callback)).toMatchObject({ resources: [MCP, CAL], scope: 'mcp:tools calendar.read' })
  })
})
