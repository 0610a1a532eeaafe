/**
 * The real-runtime matrix: each start script runs as its own process (Node through tsx, Bun, Deno,
 * and workerd through `npm run start:workers`) with a configuration file, and oauth4webapi drives
 * the same flows over real HTTP.
 */
import { createRemoteJWKSet, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CONFIG,
  CookieJar,
  PLRU,
  RU,
  type Running,
  RUNTIMES,
  freePort,
  launch,
  runnable,
  waitUntilServing,
  writeConfig,
} from './server.ts'
import { Browser, type Page, unescapeHtml } from '../helpers/browser.ts'

const options = { [oauth.allowInsecureRequests]: true }
const service: oauth.Client = { client_id: 'rt-service' }
const resourceServer: oauth.Client = { client_id: 'api1' }
const resourceServerAuth = oauth.ClientSecretBasic('api1-secret')
const web: oauth.Client = { client_id: 'rt-web' }
const webAuth = oauth.ClientSecretBasic('rt-web-secret')

describe.each(RUNTIMES)('$name', ({ command }) => {
  let config: ReturnType<typeof writeConfig> | undefined
  // #41: the host's receiver of CIBA requests (`ciba.notifyUrl`), on loopback.
  const notified: Array<Record<string, unknown>> = []
  const receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      notified.push(JSON.parse(body) as Record<string, unknown>)
      res.writeHead(204).end()
    })
  })
  let server: Running | undefined
  let issuer = ''
  let as: oauth.AuthorizationServer

  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const notifyUrl = `http://localhost:${(receiver.address() as AddressInfo).port}/ciba`
    config = writeConfig({ ...CONFIG, ciba: { notifyUrl } })
    const port = await freePort()
    issuer = `http://127.0.0.1:${port}`
    server = launch([...(await runnable(command)), '--config', config.path], {
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: issuer,
    })
    await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`)
  })

  afterAll(async () => {
    try {
      if (server) {
        const exit = await server.stop()
        expect(exit.code === 0 || exit.signal !== null, `exit ${JSON.stringify(exit)}\n${server.output().stderr}`).toBe(
          true,
        )
      }
    } finally {
      config?.remove()
      receiver.close()
    }
  })

  // On every runtime, workerd included: there global_fetch_strictly_public (as a deployment must
  // set) refuses the IP literal 127.0.0.1, while Miniflare still resolves `localhost` locally (in
  // production the flag refuses that too: docs/workers.md), so the receiver is named `localhost`.
  it('#41 CIBA: the agent asks, the user gets the link, signs in and approves on the page, the agent polls', async () => {
    const url = new URL(issuer)
    const as = await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options))
    const agent: oauth.Client = { client_id: 'rt-ciba' }
    const auth = oauth.ClientSecretBasic('rt-ciba-secret')
    const response = await oauth.backchannelAuthenticationRequest(
      as,
      agent,
      auth,
      { scope: 'openid', login_hint: 'alice', binding_message: 'Runtime check' },
      options,
    )
    const started = await oauth.processBackchannelAuthenticationResponse(as, agent, response)
    expect(started.interval).toBe(1)
    for (let i = 0; i < 50 && notified.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 100))
    const link = notified.at(-1)
    expect(link).toMatchObject({ sub: 'user-1', client_id: 'rt-ciba', binding_message: 'Runtime check' })
    const browser = new Browser((request) => fetch(request))
    const signIn = (await browser.navigate(String(link?.approval_uri))).page as Page
    expect(signIn.html, signIn.html).toContain('name="password"')
    const confirm = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
    expect(confirm.html, confirm.html).toContain('Runtime check')
    expect((await browser.submit(confirm, { decision: 'approve' })).page?.status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const polled = await oauth.backchannelAuthenticationGrantRequest(as, agent, auth, started.auth_req_id, options)
    const tokens = await oauth.processBackchannelAuthenticationGrantResponse(as, agent, polled)
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({ iss: issuer, sub: 'user-1', aud: 'rt-ciba' })
  })

  it('serves discovery for the configured issuer', async () => {
    const url = new URL(issuer)
    as = await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options))
    expect(as.issuer).toBe(issuer)
    expect(as.token_endpoint).toBe(`${issuer}/connect/token`)
    expect(as.jwks_uri).toBe(`${issuer}/.well-known/jwks.json`)
  })

  it('passes the peer address: allowedNetworks admits loopback, refuses others; failures are throttled', async () => {
    const grant = (clientId: string, secret: string) =>
      oauth.clientCredentialsGrantRequest(as, { client_id: clientId }, oauth.ClientSecretBasic(secret), {}, options)
    expect((await grant('rt-loopback', 'rt-loopback-secret')).status).toBe(200)
    const refused = await grant('rt-internal', 'rt-internal-secret')
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({ error: 'invalid_client' })
    // Ten wrong secrets for rt-loopback from this address: the next attempt is throttled (429 +
    // Retry-After), even with the right secret.
    for (let i = 0; i < 10; i++) expect((await grant('rt-loopback', `guess-${i}`)).status).toBe(401)
    const throttled = await grant('rt-loopback', 'rt-loopback-secret')
    expect(throttled.status).toBe(429)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it.each([
    ['client_secret_basic', oauth.ClientSecretBasic('rt-service-secret')],
    ['client_secret_post', oauth.ClientSecretPost('rt-service-secret')],
  ] as const)('client credentials with %s: an at+jwt that verifies against the JWKS', async (_, auth) => {
    const params = new URLSearchParams({ scope: 'api1' })
    const response = await oauth.clientCredentialsGrantRequest(as, service, auth, params, options)
    const result = await oauth.processClientCredentialsResponse(as, service, response)
    expect(result.token_type.toLowerCase()).toBe('bearer')
    expect(result.scope ?? 'api1').toBe('api1') // RFC 6749 §5.1: may be omitted when as requested
    const jwks = createRemoteJWKSet(new URL(as.jwks_uri as string))
    const { payload, protectedHeader } = await jwtVerify(result.access_token, jwks, {
      typ: 'at+jwt',
      issuer,
      audience: 'api1',
    })
    expect(protectedHeader.typ).toBe('at+jwt')
    expect(payload).toMatchObject({
      iss: issuer,
      aud: 'api1',
      client_id: 'rt-service',
      sub: 'rt-service',
      scope: 'api1',
    })
  })

  it('introspection: active with sub, client_id, scope, exp; garbage is inactive', async () => {
    const auth = oauth.ClientSecretBasic('rt-service-secret')
    const params = new URLSearchParams({ scope: 'api1' })
    const issued = await oauth.processClientCredentialsResponse(
      as,
      service,
      await oauth.clientCredentialsGrantRequest(as, service, auth, params, options),
    )
    const active = await oauth.processIntrospectionResponse(
      as,
      resourceServer,
      await oauth.introspectionRequest(as, resourceServer, resourceServerAuth, issued.access_token, options),
    )
    expect(active).toMatchObject({ active: true, sub: 'rt-service', client_id: 'rt-service', scope: 'api1' })
    expect(active.exp).toBeTypeOf('number')
    const garbage = await oauth.processIntrospectionResponse(
      as,
      resourceServer,
      await oauth.introspectionRequest(as, resourceServer, resourceServerAuth, 'not-a-token', options),
    )
    expect(garbage).toEqual({ active: false })
  })

  it('#29 device sign-in: a CLI polls while the user enters the code, signs in and approves on the pages; an agent exchanges its token (token exchange, naming the agent as actor)', async () => {
    const cli: oauth.Client = { client_id: 'rt-cli' }
    const device = await oauth.processDeviceAuthorizationResponse(
      as,
      cli,
      await oauth.deviceAuthorizationRequest(
        as,
        cli,
        oauth.None(),
        { scope: 'openid profile offline_access api1' },
        options,
      ),
    )
    expect(device.verification_uri).toBe(`${issuer}/connect/verify`)
    expect(device.user_code).toMatch(/^[B-Z]{4}-[B-Z]{4}$/)
    const poll = () => oauth.deviceCodeGrantRequest(as, cli, oauth.None(), device.device_code, options)
    await expect(oauth.processDeviceCodeResponse(as, cli, await poll())).rejects.toMatchObject({
      error: 'authorization_pending',
    })

    // The user, in a browser: the prefilled code form, the sign-in form, the confirmation.
    const browser = new Browser((request) => fetch(request))
    const codeForm = (await browser.navigate(device.verification_uri_complete as string)).page as Page
    expect(codeForm.html).toContain(`value="${device.user_code}"`)
    const signIn = (await browser.submit(codeForm, { user_code: device.user_code })).page as Page
    expect(signIn.html, signIn.html).toContain('name="password"')
    const confirm = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
    expect(confirm.html, confirm.html).toContain('value="approve"')
    const done = (await browser.submit(confirm, { decision: 'approve' })).page as Page
    expect(done.status).toBe(200)

    // The next poll, at least `interval` (1 s in this config) after the previous, redeems.
    expect(device.interval).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const tokens = await oauth.processDeviceCodeResponse(as, cli, await poll())
    expect(tokens.scope).toBe('openid profile offline_access api1')
    expect(tokens.refresh_token).toBeTypeOf('string')
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({
      iss: issuer,
      sub: 'user-1',
      aud: 'rt-cli',
    })
    // #29 token exchange: an agent exchanges the user's token for one naming it as actor (#39 item 3:
    // a user's token, not another client's client credentials token; before the replay below revokes it).
    const agent: oauth.Client = { client_id: 'rt-agent' }
    const response = await oauth.genericTokenEndpointRequest(
      as,
      agent,
      oauth.ClientSecretBasic('rt-agent-secret'),
      'urn:ietf:params:oauth:grant-type:token-exchange',
      {
        subject_token: tokens.access_token,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        audience: 'api1',
      },
      options,
    )
    const exchanged = await oauth.processGenericTokenEndpointResponse(as, agent, response)
    expect(exchanged).toMatchObject({
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      scope: 'api1',
    })
    expect(exchanged.refresh_token).toBeUndefined()
    const jwks = createRemoteJWKSet(new URL(as.jwks_uri as string))
    const { payload } = await jwtVerify(exchanged.access_token, jwks, { typ: 'at+jwt', issuer, audience: 'api1' })
    expect(payload).toMatchObject({ sub: 'user-1', client_id: 'rt-agent', act: { sub: 'rt-agent' } })
    const introspected = await oauth.processIntrospectionResponse(
      as,
      resourceServer,
      await oauth.introspectionRequest(as, resourceServer, resourceServerAuth, exchanged.access_token, options),
    )
    expect(introspected).toMatchObject({ active: true, sub: 'user-1', act: { sub: 'rt-agent' } })
    // Redeemed once: the next poll is refused.
    await expect(oauth.processDeviceCodeResponse(as, cli, await poll())).rejects.toMatchObject({
      error: 'invalid_grant',
    })
  })

  it('authorization code flow through the sign-in page, then refresh, userinfo, revocation and logout', async () => {
    const jar = new CookieJar()
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const nonce = oauth.generateRandomNonce()
    const authorize = new URL(as.authorization_endpoint as string)
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: web.client_id,
      redirect_uri: RU,
      scope: 'openid profile email',
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString()

    // authorize → (303s) → the sign-in page
    let url = authorize.href
    let response = await jar.fetch(url)
    for (let hops = 0; response.status === 303 && hops < 5; hops++) {
      url = new URL(response.headers.get('location') as string, url).href
      response = await jar.fetch(url)
    }
    const html = await response.text()
    expect(response.status, html).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(html)
    expect(form, html).not.toBeNull()
    const body = new URLSearchParams()
    for (const [, name, value] of (form?.[2] ?? '').matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      body.set(unescapeHtml(name as string), unescapeHtml(value as string))
    }
    expect([...body.keys()].sort()).toEqual(['action', 'csrf', 'uid'])
    body.set('username', 'alice')
    body.set('password', 'alice-password')
    body.set('decision', 'login')

    // sign in → (303s) → the client's redirect URI, which is read, not fetched
    url = new URL(unescapeHtml(form?.[1] ?? ''), url).href
    response = await jar.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    })
    let location = ''
    for (let hops = 0; hops < 5; hops++) {
      expect(response.status, await response.clone().text()).toBe(303)
      location = new URL(response.headers.get('location') as string, url).href
      if (location.startsWith(RU)) break
      url = location
      response = await jar.fetch(url)
    }
    expect(location.startsWith(`${RU}?`), location).toBe(true)

    const callback = oauth.validateAuthResponse(as, web, new URL(location), state)
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      web,
      await oauth.authorizationCodeGrantRequest(as, web, webAuth, callback, RU, verifier, options),
      { expectedNonce: nonce },
    )
    expect(tokens.scope).toBe('openid profile email')
    expect(tokens.refresh_token).toBeTypeOf('string')
    const idToken = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken
    expect(idToken).toMatchObject({ iss: issuer, sub: 'user-1', aud: 'rt-web', nonce })

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, options),
    )
    expect(refreshed.refresh_token).toBeTypeOf('string')
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)

    const userinfo = await oauth.processUserInfoResponse(
      as,
      web,
      idToken.sub,
      await oauth.userInfoRequest(as, web, refreshed.access_token, options),
    )
    expect(userinfo).toMatchObject({
      sub: 'user-1',
      email: 'alice@example.com',
      email_verified: true,
      given_name: 'Alice',
    })

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, web, webAuth, refreshed.refresh_token as string, options),
    )
    const afterRevocation = await oauth.refreshTokenGrantRequest(
      as,
      web,
      webAuth,
      refreshed.refresh_token as string,
      options,
    )
    await expect(oauth.processRefreshTokenResponse(as, web, afterRevocation)).rejects.toMatchObject({
      error: 'invalid_grant',
      status: 400,
    })

    const logout = new URL(as.end_session_endpoint as string)
    logout.search = new URLSearchParams({
      id_token_hint: tokens.id_token as string,
      post_logout_redirect_uri: PLRU,
      state: 'logout-state',
    }).toString()
    const loggedOut = await jar.fetch(logout.href)
    expect(loggedOut.status, await loggedOut.clone().text()).toBe(303)
    expect(loggedOut.headers.get('location')).toBe(`${PLRU}?state=logout-state`)
  })
})
