/**
 * #30: OpenID Connect Back-Channel Logout 1.0 (BCL). The clients are oauth4webapi; the clients'
 * back-channel endpoints are an in-process receiver (test/conformance/oidcc/suite.ts).
 * CONFORMANCE: BCL §2.1 (discovery), §2.2 (registration), §2.4 (logout token), §2.5 (POST),
 * §2.6 (RP validation: verifyLogoutToken), §2.7–2.8 (200/204, retries); C12 LO-14 (logout ends
 * the session); Core §2 (`sid` in ID tokens).
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT, UnsecuredJWT, decodeJwt, generateKeyPair, importJWK } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { parseConfigFile } from '../../../src/config/file.ts'
import { createTokenService } from '../../../src/index.ts'
import { InvalidLogoutTokenError, createResourceServer } from '../../../src/resource_server/index.ts'
import { Browser, type Page } from '../../helpers/browser.ts'
import { authorizationUrl, signIn } from '../../helpers/flow.ts'
import { ISSUER, USERS } from '../../helpers/service.ts'
import {
  type BackchannelCtx,
  LOGOUT_EVENT,
  WEB2_BC,
  WEB_BC,
  backchannelSetup,
  isSignedIn,
  rpLogout,
  signInToBoth,
  until,
  verifiedLogoutToken,
} from '../oidcc/suite.ts'

function tokenOf(ctx: BackchannelCtx, url: string): string {
  const delivery = ctx.receiver.deliveries.find((d) => d.url === url)
  if (!delivery) throw new Error(`nothing delivered to ${url}`)
  return delivery.body.get('logout_token') as string
}

describe('#30 back-channel logout: discovery and registration', () => {
  it('#30 back-channel logout: discovery advertises backchannel_logout_supported and backchannel_logout_session_supported (BCL §2.1)', async () => {
    const ctx = await backchannelSetup()
    expect(ctx.as.backchannel_logout_supported).toBe(true)
    expect(ctx.as.backchannel_logout_session_supported).toBe(true)
  })

  it('#30 back-channel logout: the host API keeps backchannelLogoutUri and backchannelLogoutSessionRequired (ensure, update, find)', async () => {
    const ctx = await backchannelSetup()
    expect(await ctx.service.clients.find('web2')).toMatchObject({
      backchannelLogoutUri: WEB2_BC,
      backchannelLogoutSessionRequired: true,
    })
    const { client } = await ctx.service.clients.ensure({
      clientId: 'local',
      permissions: ['ept:authorization'],
      backchannelLogoutUri: 'http://127.0.0.1:4000/logout',
    })
    expect(client.backchannelLogoutUri).toBe('http://127.0.0.1:4000/logout')
    expect(client.backchannelLogoutSessionRequired).toBeUndefined()
    // The configuration file's clients take the same keys.
    const file = parseConfigFile(
      JSON.stringify({
        clients: [
          { clientId: 'filed', permissions: [], backchannelLogoutUri: WEB_BC, backchannelLogoutSessionRequired: true },
        ],
      }),
    )
    expect(file.clients[0]).toMatchObject({ backchannelLogoutUri: WEB_BC, backchannelLogoutSessionRequired: true })
    expect(() =>
      parseConfigFile(JSON.stringify({ clients: [{ clientId: 'f', permissions: [], backchannelLogoutUri: 'x' }] })),
    ).toThrow(/backchannelLogoutUri/)
    // The option is validated too.
    expect(() => createTokenService({ issuer: ISSUER, backchannelLogout: { timeout: 60 } })).toThrow(
      /backchannelLogout.timeout/,
    )
    for (const uri of ['http://rp.example.test/logout', 'https://rp.example.test/logout#x', 'not a url']) {
      await expect(
        ctx.service.clients.ensure({ clientId: 'bad', permissions: [], backchannelLogoutUri: uri }),
      ).rejects.toThrow(/backchannelLogoutUri/)
    }
  })

  it('#30 back-channel logout: dynamic registration takes backchannel_logout_uri and backchannel_logout_session_required (BCL §2.2)', async () => {
    const ctx = await backchannelSetup({ dynamicClientRegistration: { scopes: ['openid'] } })
    const register = (body: Record<string, unknown>) =>
      ctx.service.fetch(
        new Request(`${ISSUER}/connect/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: ['https://tool.example.test/cb'], ...body }),
        }),
        { address: '203.0.113.9' },
      )
    const withDefault = await register({ backchannel_logout_uri: 'https://tool.example.test/bcl' })
    expect(withDefault.status).toBe(201)
    expect(await withDefault.json()).toMatchObject({
      backchannel_logout_uri: 'https://tool.example.test/bcl',
      backchannel_logout_session_required: false,
    })
    const required = await register({
      backchannel_logout_uri: 'https://tool.example.test/bcl?x=1',
      backchannel_logout_session_required: true,
    })
    const info = await required.json()
    expect(info.backchannel_logout_session_required).toBe(true)
    expect(await ctx.service.clients.find(info.client_id)).toMatchObject({
      backchannelLogoutUri: 'https://tool.example.test/bcl?x=1',
      backchannelLogoutSessionRequired: true,
    })
    // SSRF: a self-registered client's URI follows the rule of its jwks_uri (https, public host).
    for (const body of [
      { backchannel_logout_uri: 'http://tool.example.test/bcl' },
      { backchannel_logout_uri: 'https://10.0.0.5/bcl' },
      { backchannel_logout_uri: 'https://127.0.0.1/bcl' },
      { backchannel_logout_uri: 'https://localhost/bcl' },
      { backchannel_logout_uri: 'https://[::1]/bcl' },
      { backchannel_logout_uri: 'https://tool.example.test/bcl#frag' },
      { backchannel_logout_uri: 'https://tool.example.test/bcl', backchannel_logout_session_required: 'yes' },
      // post_logout_redirect_uris (the suite's dynamic variant registers them) follow redirect_uris' rule.
      { post_logout_redirect_uris: ['javascript:alert(1)'] },
      { post_logout_redirect_uris: ['http://tool.example.test/bye'] },
      { post_logout_redirect_uris: 'https://tool.example.test/bye' },
    ]) {
      const refused = await register(body)
      expect(refused.status).toBe(400)
      expect((await refused.json()).error).toBe('invalid_client_metadata')
    }
  })
})

describe('#30 back-channel logout: the logout token and its delivery', () => {
  it('#30 back-channel logout: ID tokens carry sid, the same for every client of the browser session (Core §2)', async () => {
    const ctx = await backchannelSetup()
    const tokens = await signInToBoth(ctx)
    const sid = decodeJwt(tokens.web).sid
    expect(typeof sid).toBe('string')
    expect(decodeJwt(tokens.web2).sid).toBe(sid)
    // Another browser, another session: another sid.
    ctx.browser = new Browser(ctx.service.fetch)
    const other = await signIn(ctx, { credentials: { username: 'bob', password: 'bob-password' } })
    expect(decodeJwt(other.result.id_token as string).sid).not.toBe(sid)
  })

  it('#30 back-channel logout: RP-initiated logout POSTs a logout token to every participating client with a URI (BCL §2.4, §2.5): typ logout+jwt, iss, aud, iat, exp, jti, events, sub, sid, no nonce', async () => {
    const ctx = await backchannelSetup()
    const tokens = await signInToBoth(ctx)
    const sid = decodeJwt(tokens.web).sid
    await rpLogout(ctx, tokens.web)
    await until(() => ctx.deliveryEvents().length === 2)
    expect(ctx.receiver.deliveries.map((d) => d.url).sort()).toEqual([WEB2_BC, WEB_BC].sort())
    for (const delivery of ctx.receiver.deliveries) {
      expect(delivery.method).toBe('POST')
      expect(delivery.contentType).toBe('application/x-www-form-urlencoded')
      expect(delivery.redirect).toBe('manual')
      expect([...delivery.body.keys()]).toEqual(['logout_token'])
    }
    const jtis = new Set<unknown>()
    for (const [url, clientId] of [
      [WEB_BC, 'web'],
      [WEB2_BC, 'web2'],
    ] as const) {
      const { header, claims } = await verifiedLogoutToken(ctx, tokenOf(ctx, url), clientId)
      expect(header.typ).toBe('logout+jwt')
      expect(header.kid).toEqual(expect.any(String))
      expect(claims.iss).toBe(ISSUER)
      expect(claims.aud).toBe(clientId)
      expect(claims.iat).toBe(ctx.clock.now())
      expect(claims.exp).toBe(ctx.clock.now() + 120)
      expect(claims.jti).toMatch(/^[A-Za-z0-9_-]{16,}$/)
      expect(claims.events).toEqual({ [LOGOUT_EVENT]: {} })
      expect(claims.sub).toBe(USERS[0]?.sub)
      expect(claims.sid).toBe(sid)
      expect(claims).not.toHaveProperty('nonce')
      jtis.add(claims.jti)
    }
    expect(jtis.size).toBe(2)
    expect(ctx.deliveryEvents()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'logout.delivered', clientId: 'web', sid, attempts: 1, status: 200 }),
        expect.objectContaining({ type: 'logout.delivered', clientId: 'web2', sid, attempts: 1, status: 200 }),
      ]),
    )
    expect(await isSignedIn(ctx)).toBe(false)
  })

  it('#30 back-channel logout: only the clients of the ended session get a token (not those of another session, not one without a URI)', async () => {
    const ctx = await backchannelSetup()
    const { web } = await signInToBoth(ctx)
    // spa took part too, with no back-channel URI.
    const spa = await authorizationUrl(ctx.as, { clientId: 'spa', redirectUri: 'https://spa.example.test/callback' })
    expect((await ctx.browser.navigate(spa.url.href)).callback?.searchParams.has('code')).toBe(true)
    // bob's session in another browser used web2 only.
    const bob = { ...ctx, browser: new Browser(ctx.service.fetch) }
    await signIn(bob, {
      client: { client_id: 'web2' },
      auth: oauth.ClientSecretBasic('web2-secret'),
      redirectUri: 'https://rp2.example.test/cb',
      scope: 'openid',
      credentials: { username: 'bob', password: 'bob-password' },
    })
    await rpLogout(ctx, web)
    await until(() => ctx.deliveryEvents().length === 2)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(ctx.receiver.deliveries).toHaveLength(2)
    const subs = await Promise.all(
      ctx.receiver.deliveries.map(async (d) => decodeJwt(d.body.get('logout_token') as string).sub),
    )
    expect(subs).toEqual(['user-1', 'user-1'])
  })

  it('#30 back-channel logout: a 500 is retried with back-off; 204 counts as delivered (BCL §2.8)', async () => {
    const ctx = await backchannelSetup()
    const { web } = await signInToBoth(ctx)
    ctx.receiver.script(WEB_BC, 500, 204)
    await rpLogout(ctx, web)
    await until(() => ctx.deliveryEvents().length === 2)
    expect(ctx.receiver.deliveries.filter((d) => d.url === WEB_BC)).toHaveLength(2)
    expect(ctx.deliveryEvents().find((e) => e.type === 'logout.delivered' && e.clientId === 'web')).toMatchObject({
      attempts: 2,
      status: 204,
    })
  })

  it('#30 back-channel logout: 500, a time-out and a network failure are retried, then delivery gives up with logout.delivery_failed', async () => {
    const ctx = await backchannelSetup()
    const { web } = await signInToBoth(ctx)
    ctx.receiver.script(WEB_BC, 500, 'hang', 'network')
    ctx.receiver.script(WEB2_BC, 'hang', 'hang', 'hang')
    await rpLogout(ctx, web)
    await until(() => ctx.deliveryEvents().length === 2)
    expect(ctx.receiver.deliveries.filter((d) => d.url === WEB_BC)).toHaveLength(3)
    expect(ctx.receiver.deliveries.filter((d) => d.url === WEB2_BC)).toHaveLength(3)
    const failed = ctx.deliveryEvents()
    expect(failed.find((e) => e.clientId === 'web')).toMatchObject({
      type: 'logout.delivery_failed',
      attempts: 3,
      reason: 'network',
    })
    expect(failed.find((e) => e.clientId === 'web2')).toMatchObject({
      type: 'logout.delivery_failed',
      attempts: 3,
      reason: 'timeout',
    })
  })

  it('#30 back-channel logout: a 400 (the RP refused the token) and a redirect are final, not retried', async () => {
    const ctx = await backchannelSetup()
    const { web } = await signInToBoth(ctx)
    ctx.receiver.script(WEB_BC, 400)
    ctx.receiver.script(WEB2_BC, 302)
    await rpLogout(ctx, web)
    await until(() => ctx.deliveryEvents().length === 2)
    expect(ctx.receiver.deliveries).toHaveLength(2)
    const events = ctx.deliveryEvents()
    expect(events.find((e) => e.clientId === 'web')).toMatchObject({ attempts: 1, status: 400, reason: 'status' })
    expect(events.find((e) => e.clientId === 'web2')).toMatchObject({ attempts: 1, status: 302, reason: 'redirect' })
  })

  it('#30 back-channel logout: the logout response does not wait for delivery; the work goes to waitUntil when set', async () => {
    const background: Promise<unknown>[] = []
    const ctx = await backchannelSetup({
      waitUntil: (promise) => {
        background.push(promise)
      },
    })
    ctx.receiver.script(WEB_BC, 'hang', 'hang', 'hang')
    const { web } = await signInToBoth(ctx)
    background.length = 0
    const started = Date.now()
    await rpLogout(ctx, web)
    // Three 300 ms time-outs are pending: the response came long before.
    expect(Date.now() - started).toBeLessThan(250)
    expect(ctx.deliveryEvents().filter((e) => e.clientId === 'web')).toHaveLength(0)
    expect(background.length).toBeGreaterThan(0)
    await Promise.all(background)
    expect(ctx.deliveryEvents().find((e) => e.clientId === 'web')).toMatchObject({ reason: 'timeout' })
  })

  it('#30 back-channel logout: service.sessions.end(request) ends the browser session and sends the logout tokens', async () => {
    const ctx = await backchannelSetup()
    const { web } = await signInToBoth(ctx)
    const request = new Request(`${ISSUER}/my-sign-out`, { headers: { cookie: ctx.browser.cookieHeader() } })
    const ended = await ctx.service.sessions.end(request)
    expect(ended).toMatchObject({ ended: true, sub: 'user-1', sid: decodeJwt(web).sid })
    expect(ended.setCookie).toMatch(/max-age=0/i)
    await until(() => ctx.deliveryEvents().length === 2)
    expect(await isSignedIn(ctx)).toBe(false)
    expect((await ctx.service.sessions.end(request)).ended).toBe(false)
  })

  it('#30 back-channel logout: service.sessions.endAll(sub) ends every session of that end-user, in every browser, and only theirs', async () => {
    const ctx = await backchannelSetup()
    const first = await signInToBoth(ctx)
    const secondBrowser = { ...ctx, browser: new Browser(ctx.service.fetch) }
    const second = await signIn(secondBrowser)
    const bobBrowser = { ...ctx, browser: new Browser(ctx.service.fetch) }
    await signIn(bobBrowser, { credentials: { username: 'bob', password: 'bob-password' } })
    expect(await ctx.service.sessions.endAll('user-1')).toBe(2)
    // Three tokens: web and web2 of the first session, web of the second; none for bob's.
    await until(() => ctx.deliveryEvents().length === 3)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const sids = ctx.receiver.deliveries.map((d) => decodeJwt(d.body.get('logout_token') as string).sid).sort()
    const one = decodeJwt(first.web).sid as string
    const two = decodeJwt(second.result.id_token as string).sid as string
    expect(sids).toEqual([one, one, two].sort())
    expect(ctx.events.filter((e) => e.type === 'session.ended')).toHaveLength(2)
    expect(await isSignedIn(ctx)).toBe(false)
    expect(await isSignedIn(secondBrowser)).toBe(false)
    expect(await isSignedIn(bobBrowser)).toBe(true)
    expect(await ctx.service.sessions.endAll('user-1')).toBe(0)
  })

  it('#30 back-channel logout: another end-user signing in in the same browser ends the previous session: its clients get tokens', async () => {
    const ctx = await backchannelSetup()
    const { web } = await signInToBoth(ctx)
    const login = await authorizationUrl(ctx.as, { extra: { prompt: 'login' } })
    const page = (await ctx.browser.navigate(login.url.href)).page as Page
    await ctx.browser.signIn(page, 'bob', 'bob-password')
    await until(() => ctx.deliveryEvents().length === 2)
    for (const delivery of ctx.receiver.deliveries) {
      expect(decodeJwt(delivery.body.get('logout_token') as string)).toMatchObject({
        sub: 'user-1',
        sid: decodeJwt(web).sid,
      })
    }
  })

  it("#30 back-channel logout: a self-registered client's URI whose host resolves to a private address gets no POST (SSRF), and an event says so", async () => {
    const ctx = await backchannelSetup({
      dynamicClientRegistration: { scopes: ['openid'] },
      resolveHost: async (host) => (host === 'tool.example.test' ? ['10.1.2.3'] : ['203.0.113.80']),
    })
    const registered = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          redirect_uris: ['https://rp.example.test/tool-cb'],
          token_endpoint_auth_method: 'none',
          backchannel_logout_uri: 'https://tool.example.test/bcl',
        }),
      }),
      { address: '203.0.113.9' },
    )
    const { client_id } = await registered.json()
    const { web } = await signInToBoth(ctx)
    const request = await authorizationUrl(ctx.as, {
      clientId: client_id,
      redirectUri: 'https://rp.example.test/tool-cb',
      scope: 'openid',
    })
    const consent = (await ctx.browser.navigate(request.url.href)).page as Page
    expect((await ctx.browser.submit(consent, { decision: 'allow' })).callback?.searchParams.has('code')).toBe(true)
    await rpLogout(ctx, web)
    await until(() => ctx.deliveryEvents().length === 3)
    expect(ctx.receiver.deliveries.map((d) => d.url)).not.toContain('https://tool.example.test/bcl')
    expect(ctx.deliveryEvents().find((e) => e.clientId === client_id)).toMatchObject({
      type: 'logout.delivery_failed',
      attempts: 1,
      reason: 'address_refused',
    })
  })
})

describe('#30 back-channel logout: over real HTTP and from metadata documents', () => {
  it("#30 back-channel logout: a host client's loopback http URI gets the POST through the global fetch (node:http receiver)", async () => {
    const received: Array<{ method?: string; type?: string; body: string }> = []
    const server = createServer((req, res) => {
      let body = ''
      req.setEncoding('utf8')
      req.on('data', (chunk: string) => {
        body += chunk
      })
      req.on('end', () => {
        received.push({ method: req.method, type: req.headers['content-type'], body })
        res.writeHead(200, { 'cache-control': 'no-store' }).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      // No fetch double: the service's own outbound fetch.
      const ctx = await backchannelSetup({ backchannelLogout: { retryDelays: [], timeout: 5 } })
      await ctx.service.clients.update('web', { backchannelLogoutUri: `http://127.0.0.1:${port}/bcl?rp=1` })
      const { result } = await signIn(ctx)
      await rpLogout(ctx, result.id_token as string)
      await until(() => ctx.deliveryEvents().length === 1)
      expect(ctx.deliveryEvents()[0]).toMatchObject({ type: 'logout.delivered', clientId: 'web', status: 200 })
      expect(received).toHaveLength(1)
      expect(received[0]).toMatchObject({ method: 'POST', type: 'application/x-www-form-urlencoded' })
      const token = new URLSearchParams(received[0]?.body).get('logout_token') as string
      expect((await verifiedLogoutToken(ctx, token, 'web')).claims.sid).toBe(decodeJwt(result.id_token as string).sid)
    } finally {
      server.close()
    }
  })

  it("#30 back-channel logout: a client ID metadata document's backchannel_logout_uri is used; a private one makes the document unusable", async () => {
    const DOCUMENT = 'https://tool.example.test/oauth/client.json'
    const document: Record<string, unknown> = {
      client_id: DOCUMENT,
      client_name: 'Tool',
      redirect_uris: ['https://rp.example.test/tool-cb'],
      token_endpoint_auth_method: 'none',
      backchannel_logout_uri: 'https://tool.example.test/bcl',
      backchannel_logout_session_required: true,
    }
    const ctx = await backchannelSetup({
      clientIdMetadataDocuments: {
        scopes: ['openid'],
        fetch: async (url) => (url === DOCUMENT ? Response.json(document) : new Response('no', { status: 404 })),
      },
    })
    const { web } = await signInToBoth(ctx)
    const request = await authorizationUrl(ctx.as, {
      clientId: DOCUMENT,
      redirectUri: 'https://rp.example.test/tool-cb',
      scope: 'openid',
    })
    const consent = (await ctx.browser.navigate(request.url.href)).page as Page
    expect((await ctx.browser.submit(consent, { decision: 'allow' })).callback?.searchParams.has('code')).toBe(true)
    await rpLogout(ctx, web)
    await until(() => ctx.deliveryEvents().length === 3)
    expect(decodeJwt(tokenOf(ctx, 'https://tool.example.test/bcl'))).toMatchObject({ aud: DOCUMENT, sub: 'user-1' })

    const refused = await backchannelSetup({
      clientIdMetadataDocuments: {
        scopes: ['openid'],
        fetch: async () => Response.json({ ...document, backchannel_logout_uri: 'https://192.168.1.2/bcl' }),
      },
    })
    const bad = await authorizationUrl(refused.as, {
      clientId: DOCUMENT,
      redirectUri: 'https://rp.example.test/tool-cb',
      scope: 'openid',
    })
    const page = (await refused.browser.navigate(bad.url.href)).page as Page
    expect(page.status).toBe(400)
    expect(page.html).toContain('backchannel_logout_uri')
  })
})

describe('#30 back-channel logout: verifyLogoutToken (BCL §2.6)', () => {
  async function rpSetup() {
    const ctx = await backchannelSetup()
    const { web } = await signInToBoth(ctx)
    await rpLogout(ctx, web)
    await until(() => ctx.deliveryEvents().length === 2)
    const rp = createResourceServer({
      issuer: ISSUER,
      audience: 'web',
      fetch: (url, init) => ctx.service.fetch(new Request(url, init)),
      now: ctx.clock.now,
    })
    const [key] = await ctx.service.store.keys.list()
    if (!key) throw new Error('no key')
    const privateKey = await importJWK(key.privateJwk as never, key.alg)
    const real = decodeJwt(tokenOf(ctx, WEB_BC))
    /** The real token's claims with `changes` (undefined deletes), signed by the issuer's key. */
    const forge = (changes: Record<string, unknown>, header: Record<string, unknown> = {}) => {
      const claims: Record<string, unknown> = { ...real, ...changes }
      for (const [name, value] of Object.entries(changes)) if (value === undefined) delete claims[name]
      return new SignJWT(claims)
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'logout+jwt', ...header })
        .sign(privateKey)
    }
    return { ctx, rp, forge, web: tokenOf(ctx, WEB_BC), web2: tokenOf(ctx, WEB2_BC), real }
  }

  it('#30 back-channel logout: verifyLogoutToken accepts the real tokens and returns their claims', async () => {
    const { rp, web, web2, real } = await rpSetup()
    expect(await rp.verifyLogoutToken(web, { clientId: 'web' })).toMatchObject({
      iss: ISSUER,
      aud: 'web',
      sub: 'user-1',
      sid: real.sid,
      events: { [LOGOUT_EVENT]: {} },
    })
    expect((await rp.verifyLogoutToken(web2, { clientId: 'web2', sessionRequired: true })).sid).toBe(real.sid)
  })

  it('#30 back-channel logout: verifyLogoutToken rejects each defect', async () => {
    const { ctx, rp, forge, web } = await rpSetup()
    const { privateKey } = await generateKeyPair('ES256')
    const foreign = await new SignJWT(decodeJwt(web))
      .setProtectedHeader({ alg: 'ES256', kid: 'other', typ: 'logout+jwt' })
      .sign(privateKey)
    const cases: Array<[string, string | Promise<string>, RegExp, { sessionRequired?: boolean }?]> = [
      ['another client (aud)', web, /not meant for this client/],
      ['not a JWT', 'abc', /not a signed JWT/],
      ['alg none', new UnsecuredJWT(decodeJwt(web)).encode(), /not a signed JWT/],
      ['a foreign key', foreign, /unknown key|signature/],
      ['typ JWT (an ID token)', forge({}, { typ: 'JWT' }), /typ logout\+jwt/],
      ['another issuer', forge({ iss: 'https://evil.example' }), /another issuer/],
      ['expired', forge({ exp: ctx.clock.now() - 60 }), /expired/],
      ['no iat', forge({ iat: undefined }), /issue time/],
      ['no jti', forge({ jti: undefined }), /jti/],
      ['no events', forge({ events: undefined }), /back-channel logout event/],
      ['another event', forge({ events: { 'https://example.com/other': {} } }), /back-channel logout event/],
      ['an event that is not an object', forge({ events: { [LOGOUT_EVENT]: 'yes' } }), /back-channel logout event/],
      ['neither sub nor sid', forge({ sub: undefined, sid: undefined }), /neither sub nor sid/],
      ['no sid when required', forge({ sid: undefined }), /lacks sid/, { sessionRequired: true }],
      ['a nonce', forge({ nonce: 'n' }), /nonce/],
    ]
    for (const [name, token, message, extra] of cases) {
      const audience = name.startsWith('another client') ? 'web2' : 'web'
      const verifying = rp.verifyLogoutToken(await token, { clientId: audience, ...extra })
      await expect(verifying, name).rejects.toBeInstanceOf(InvalidLogoutTokenError)
      await expect(verifying, name).rejects.toThrow(message)
    }
    // The forger's baseline is accepted: each case fails for its own defect only.
    await expect(rp.verifyLogoutToken(await forge({}), { clientId: 'web' })).resolves.toMatchObject({ sub: 'user-1' })
    // Only sid, or only sub, is enough (BCL §2.4).
    await expect(rp.verifyLogoutToken(await forge({ sub: undefined }), { clientId: 'web' })).resolves.toBeDefined()
    await expect(rp.verifyLogoutToken(await forge({ sid: undefined }), { clientId: 'web' })).resolves.toBeDefined()
  })
})
