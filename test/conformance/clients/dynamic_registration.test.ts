/**
 * #19: dynamic client registration (RFC 7591) and its management (RFC 7592), the consent page of
 * self-registered clients, and discovery of an issuer with a path at every location MCP clients try.
 * CONFORMANCE: RFC 7591 §2 (metadata, defaults), §3.1 (request), §3.2.1 (201 response), §3.2.2
 * (invalid_redirect_uri, invalid_client_metadata); RFC 7592 §2.1–2.3 (read, update, delete, 401
 * for a wrong token); RFC 8414 §3.1 (path-inserted well-known URI), OpenID Discovery §4.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent, TokenServiceOptions } from '../../../src/index.ts'
import { parseConfigFile } from '../../../src/config/file.ts'
import { createTokenService } from '../../../src/index.ts'
import { authorizationUrl, redeemCallback, setup } from '../../helpers/flow.ts'
import { ISSUER, basic, clock, form, inProcess, makeService } from '../../helpers/service.ts'

const REDIRECT = 'https://rp.example.test/mcp-callback'
const DCR = { scopes: ['mcp:tools', 'openid', 'offline_access'] }
const ADDRESS = '203.0.113.7'

type Fetch = (request: Request, info?: { address?: string }) => Promise<Response>

function register(fetch: Fetch, body: unknown, headers: Record<string, string> = {}, address = ADDRESS) {
  return fetch(
    new Request(`${ISSUER}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
    { address },
  )
}

const MCP_CLIENT = {
  redirect_uris: [REDIRECT],
  client_name: 'Claude <Desktop>',
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
}

async function dcrSetup(options: Partial<TokenServiceOptions> = {}) {
  const events: GatehouseEvent[] = []
  const ctx = await setup({
    scopes: ['mcp:tools', 'mcp:admin'],
    dynamicClientRegistration: DCR,
    onEvent: (event) => {
      events.push(event)
    },
    ...options,
  })
  return { ...ctx, events }
}

async function registered(fetch: Fetch, body: unknown = MCP_CLIENT) {
  const response = await register(fetch, body)
  expect(response.status).toBe(201)
  return (await response.json()) as Record<string, unknown> & { client_id: string }
}

describe('#19 dynamic client registration (RFC 7591)', () => {
  it('#19 an MCP client registers, sees the consent page naming it as self-registered, and gets a refresh token without offline_access', async () => {
    const ctx = await dcrSetup()
    const response = await register(ctx.service.fetch, { ...MCP_CLIENT, scope: 'mcp:tools mcp:admin unknown' })
    expect(response.status).toBe(201)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const info = (await response.json()) as Record<string, unknown> & { client_id: string }
    expect(info.client_id).toMatch(/^[A-Za-z0-9_-]{22,}$/)
    expect(info.client_id_issued_at).toBe(ctx.clock.now())
    expect(info.client_secret).toBeUndefined()
    expect(info.registration_access_token).toEqual(expect.any(String))
    expect(info.registration_client_uri).toBe(`${ISSUER}/connect/register/${info.client_id}`)
    expect(info).toMatchObject({
      redirect_uris: [REDIRECT],
      client_name: 'Claude <Desktop>',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'mcp:tools', // cut to the allowed list
    })
    expect(ctx.events).toContainEqual(
      expect.objectContaining({ type: 'client.registered', clientId: info.client_id, address: ADDRESS }),
    )

    const client: oauth.Client = { client_id: info.client_id }
    const request = await authorizationUrl(ctx.as, {
      clientId: info.client_id,
      redirectUri: REDIRECT,
      scope: 'mcp:tools',
      nonce: null,
    })
    const first = await ctx.browser.navigate(request.url.href)
    const consent = await ctx.browser.signIn(first.page as never, 'alice', 'alice-password')
    expect(consent.callback).toBeUndefined()
    const html = consent.page?.html ?? ''
    expect(html).toContain('Allow access?')
    expect(html).toContain('<strong><bdi>Claude &lt;Desktop&gt;</bdi></strong> registered itself')
    expect(html).toContain('<strong><bdi>rp.example.test</bdi></strong>')
    const done = await ctx.browser.submit(consent.page as never, { decision: 'allow' })
    const callback = done.callback as URL
    expect(callback.searchParams.get('code')).toEqual(expect.any(String))
    const { response: tokenResponse } = await redeemCallback(ctx, callback, request, {
      client,
      auth: oauth.None(),
      redirectUri: REDIRECT,
    })
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, client, tokenResponse, {
      requireIdToken: false,
    })
    expect(tokens.scope).toBe('mcp:tools')
    expect(tokens.refresh_token).toEqual(expect.any(String))

    // The next authorization in the same session asks again: a self-registered client always does.
    const again = await authorizationUrl(ctx.as, {
      clientId: info.client_id,
      redirectUri: REDIRECT,
      scope: 'mcp:tools',
    })
    const second = await ctx.browser.navigate(again.url.href)
    expect(second.callback).toBeUndefined()
    expect(second.page?.html).toContain('registered itself')
    // prompt=none cannot skip it either; consent_required is a page, not a redirect (#27 item 1).
    const silent = await authorizationUrl(ctx.as, {
      clientId: info.client_id,
      redirectUri: REDIRECT,
      scope: 'mcp:tools',
      extra: { prompt: 'none' },
    })
    const refused = await ctx.browser.navigate(silent.url.href)
    expect(refused.callback).toBeUndefined()
    expect(refused.page?.html).toContain('consent_required')
  })

  it('#19 a host sign-in hook learns the client registered itself, and a login without consent continues on the consent page', async () => {
    const seen: unknown[] = []
    const ctx = await dcrSetup({
      interaction: (_request, pending) => {
        seen.push(pending.selfRegistered)
        return { login: { sub: 'user-1' } }
      },
    })
    const info = await registered(ctx.service.fetch)
    const request = await authorizationUrl(ctx.as, {
      clientId: info.client_id,
      redirectUri: REDIRECT,
      scope: 'mcp:tools',
    })
    const outcome = await ctx.browser.navigate(request.url.href)
    expect(seen).toEqual([{ kind: 'dynamic', redirectHost: 'rp.example.test' }])
    expect(outcome.callback).toBeUndefined()
    expect(outcome.page?.html).toContain('registered itself')
    const done = await ctx.browser.submit(outcome.page as never, { decision: 'allow' })
    expect(done.callback?.searchParams.get('code')).toEqual(expect.any(String))
    // The host's own clients are unaffected: no consent page.
    const web = await authorizationUrl(ctx.as, { scope: 'openid' })
    expect((await ctx.browser.navigate(web.url.href)).callback?.searchParams.get('code')).toEqual(expect.any(String))
  })

  it('#19 a public client must use PKCE (#27 item 1: refused on a page, not by redirect)', async () => {
    const ctx = await dcrSetup()
    const info = await registered(ctx.service.fetch)
    const request = await authorizationUrl(ctx.as, {
      clientId: info.client_id,
      redirectUri: REDIRECT,
      scope: 'mcp:tools',
      pkce: false,
    })
    const outcome = await ctx.browser.navigate(request.url.href)
    expect(outcome.callback).toBeUndefined()
    expect(outcome.page?.status).toBe(400)
    expect(outcome.page?.html).toContain('invalid_request')
  })

  it('#19 a confidential client gets a secret that works with client_secret_basic and client_secret_post, and never client_credentials by default', async () => {
    const ctx = await dcrSetup()
    const info = await registered(ctx.service.fetch, {
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'client_credentials'],
    })
    expect(info.token_endpoint_auth_method).toBe('client_secret_basic') // RFC 7591 §2 default
    expect(info.client_secret).toEqual(expect.any(String))
    expect(info.client_secret_expires_at).toBe(0)
    expect(info.grant_types).toEqual(['authorization_code'])
    const secret = info.client_secret as string
    const viaBasic = await ctx.service.fetch(
      form(
        `${ISSUER}/connect/token`,
        { grant_type: 'client_credentials' },
        { authorization: basic(info.client_id, secret) },
      ),
    )
    expect(viaBasic.status).toBe(400)
    expect(((await viaBasic.json()) as { error: string }).error).toBe('unauthorized_client')
    const viaPost = await ctx.service.fetch(
      form(`${ISSUER}/connect/token`, {
        grant_type: 'client_credentials',
        client_id: info.client_id,
        client_secret: secret,
      }),
    )
    expect(((await viaPost.json()) as { error: string }).error).toBe('unauthorized_client')
    const wrong = await ctx.service.fetch(
      form(
        `${ISSUER}/connect/token`,
        { grant_type: 'client_credentials' },
        { authorization: basic(info.client_id, 'nope') },
      ),
    )
    expect(wrong.status).toBe(401)
  })

  it('#19 client_credentials only when grantTypes lists it, and never for a public client', async () => {
    const ctx = await dcrSetup({
      dynamicClientRegistration: { ...DCR, grantTypes: ['authorization_code', 'client_credentials'] },
    })
    const info = await registered(ctx.service.fetch, {
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'client_secret_post',
      scope: 'mcp:tools',
    })
    const response = await ctx.service.fetch(
      form(`${ISSUER}/connect/token`, {
        grant_type: 'client_credentials',
        client_id: info.client_id,
        client_secret: info.client_secret as string,
        scope: 'mcp:tools',
      }),
    )
    expect(response.status).toBe(200)
    const pub = await register(ctx.service.fetch, {
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'none',
    })
    expect(pub.status).toBe(400)
    expect(((await pub.json()) as { error: string }).error).toBe('invalid_client_metadata')
  })

  it('#19 bad redirect URIs are invalid_redirect_uri, without echoing them', async () => {
    const ctx = await dcrSetup()
    for (const uri of [
      'http://evil.example/cb',
      'https://rp.example.test/cb#frag',
      '/relative/cb',
      'javascript:alert(1)',
      'https://user:pw@rp.example.test/cb',
    ]) {
      const response = await register(ctx.service.fetch, { ...MCP_CLIENT, redirect_uris: [uri] })
      expect(response.status, uri).toBe(400)
      const body = (await response.json()) as { error: string; error_description: string }
      expect(body.error, uri).toBe('invalid_redirect_uri')
      expect(body.error_description).toContain('redirect_uris')
      expect(body.error_description).not.toContain(uri)
    }
    const missing = await register(ctx.service.fetch, { token_endpoint_auth_method: 'none' })
    expect(((await missing.json()) as { error: string }).error).toBe('invalid_redirect_uri')
    // Loopback http and reverse-DNS private-use schemes are fine (RFC 8252 §7; #27 item 2: not `cursor:`).
    for (const uri of [
      'http://127.0.0.1:33418/cb',
      'http://localhost/cb',
      'com.example.app:/oauth',
      'com.cursor.app://x/cb',
    ]) {
      expect((await register(ctx.service.fetch, { ...MCP_CLIENT, redirect_uris: [uri] })).status, uri).toBe(201)
    }
  })

  it('#19 bad metadata is invalid_client_metadata', async () => {
    const ctx = await dcrSetup()
    const cases: unknown[] = [
      '{not json',
      '[1]',
      { ...MCP_CLIENT, token_endpoint_auth_method: 'private_key_jwt' },
      { ...MCP_CLIENT, response_types: ['token'] },
      { ...MCP_CLIENT, grant_types: ['password'] },
      { ...MCP_CLIENT, client_name: 42 },
      { ...MCP_CLIENT, client_name: 'bad\u0000name' },
      { ...MCP_CLIENT, scope: 'unknown other' },
      { ...MCP_CLIENT, logo_uri: 'http://evil.example/logo.png' },
      { ...MCP_CLIENT, client_uri: 'not a url' },
    ]
    for (const body of cases) {
      const response = await register(ctx.service.fetch, body)
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect(((await response.json()) as { error: string }).error, JSON.stringify(body)).toBe('invalid_client_metadata')
    }
    const notJson = await ctx.service.fetch(form(`${ISSUER}/connect/register`, { redirect_uris: REDIRECT }), {
      address: ADDRESS,
    })
    expect(notJson.status).toBe(400)
    expect(((await notJson.json()) as { error: string }).error).toBe('invalid_client_metadata')
    expect(ctx.events.filter((e) => e.type === 'client.registration_failed').length).toBe(cases.length + 1)
  })

  it('#19 the initial access token: missing or wrong is 401, right registers', async () => {
    const ctx = await dcrSetup({ dynamicClientRegistration: { ...DCR, initialAccessToken: 'optional-secret' } })
    const missing = await register(ctx.service.fetch, MCP_CLIENT)
    expect(missing.status).toBe(401)
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /)
    const wrong = await register(ctx.service.fetch, MCP_CLIENT, { authorization: 'Bearer wrong-secret' })
    expect(wrong.status).toBe(401)
    expect(((await wrong.json()) as { error: string }).error).toBe('invalid_token')
    const right = await register(ctx.service.fetch, MCP_CLIENT, { authorization: 'Bearer optional-secret' })
    expect(right.status).toBe(201)
    expect(
      ctx.events.filter((e) => e.type === 'client.registration_failed').map((e) => (e as { reason: string }).reason),
    ).toEqual(['invalid_initial_access_token', 'invalid_initial_access_token'])
  })

  it('#19 wrong initial access tokens are throttled per address like failed client authentications', async () => {
    const ctx = await dcrSetup({
      dynamicClientRegistration: { ...DCR, initialAccessToken: 'optional-secret' },
      throttle: { clientAuthentication: { perAddress: 3 } },
    })
    for (let i = 0; i < 3; i++) {
      expect((await register(ctx.service.fetch, MCP_CLIENT, { authorization: `Bearer guess-${i}` })).status).toBe(401)
    }
    const blocked = await register(ctx.service.fetch, MCP_CLIENT, { authorization: 'Bearer optional-secret' })
    expect(blocked.status).toBe(429)
    expect(blocked.headers.get('retry-after')).toEqual(expect.any(String))
    // Another address is not affected.
    const other = await register(
      ctx.service.fetch,
      MCP_CLIENT,
      { authorization: 'Bearer optional-secret' },
      '198.51.100.1',
    )
    expect(other.status).toBe(201)
  })

  it('#19 at most maxPerAddressPerHour registrations per address per hour (429), then again after the hour', async () => {
    const ctx = await dcrSetup({ dynamicClientRegistration: { ...DCR, maxPerAddressPerHour: 2 } })
    await registered(ctx.service.fetch)
    await registered(ctx.service.fetch)
    const third = await register(ctx.service.fetch, MCP_CLIENT)
    expect(third.status).toBe(429)
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(ctx.events).toContainEqual(
      expect.objectContaining({ type: 'client.registration_failed', reason: 'too_many_registrations' }),
    )
    expect((await register(ctx.service.fetch, MCP_CLIENT, {}, '198.51.100.1')).status).toBe(201)
    ctx.clock.advance(3601)
    expect((await register(ctx.service.fetch, MCP_CLIENT)).status).toBe(201)
  })

  it('#19 without the option there is no registration endpoint', async () => {
    const { service } = await makeService()
    const response = await register(service.fetch, MCP_CLIENT)
    expect(response.status).toBe(404)
  })
})

describe('#19 client configuration endpoint (RFC 7592)', () => {
  it('#19 GET reads, PUT replaces, DELETE removes, with the registration access token', async () => {
    const ctx = await dcrSetup()
    const info = await registered(ctx.service.fetch)
    const uri = info.registration_client_uri as string
    const auth = { authorization: `Bearer ${info.registration_access_token}` }
    const call = (method: string, headers: Record<string, string>, body?: unknown) =>
      ctx.service.fetch(
        new Request(uri, {
          method,
          headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        }),
        { address: ADDRESS },
      )

    const read = await call('GET', auth)
    expect(read.status).toBe(200)
    expect(read.headers.get('cache-control')).toBe('no-store')
    const current = (await read.json()) as Record<string, unknown>
    expect(current).toMatchObject({
      client_id: info.client_id,
      client_name: 'Claude <Desktop>',
      registration_client_uri: uri,
    })
    expect(current.registration_access_token).toBeUndefined()

    for (const headers of [{}, { authorization: 'Bearer wrong' }] as Record<string, string>[]) {
      const refused = await call('GET', headers)
      expect(refused.status).toBe(401)
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /)
    }
    // Another client's token does not open this one; an unknown client is 401 as well.
    const other = await registered(ctx.service.fetch)
    expect((await call('GET', { authorization: `Bearer ${other.registration_access_token}` })).status).toBe(401)
    const unknown = await ctx.service.fetch(new Request(`${ISSUER}/connect/register/nope`, { headers: auth }), {
      address: ADDRESS,
    })
    expect(unknown.status).toBe(401)

    const updated = await call('PUT', auth, {
      client_id: info.client_id,
      redirect_uris: ['https://rp.example.test/other'],
      client_name: 'Renamed',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
    })
    expect(updated.status).toBe(200)
    expect(await updated.json()).toMatchObject({
      client_name: 'Renamed',
      redirect_uris: ['https://rp.example.test/other'],
      grant_types: ['authorization_code'],
    })
    const stored = await ctx.service.clients.find(info.client_id)
    expect(stored?.displayName).toBe('Renamed')
    expect(stored?.permissions).not.toContain('gt:refresh_token')
    expect(stored?.registration?.kind).toBe('dynamic')

    const mismatch = await call('PUT', auth, { ...MCP_CLIENT, client_id: 'someone-else' })
    expect(mismatch.status).toBe(400)
    expect(((await mismatch.json()) as { error: string }).error).toBe('invalid_client_metadata')

    const deleted = await call('DELETE', auth)
    expect(deleted.status).toBe(204)
    expect(await ctx.service.clients.find(info.client_id)).toBeUndefined()
    expect((await call('GET', auth)).status).toBe(401)
    expect(ctx.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['client.registration_updated', 'client.registration_deleted']),
    )
  })

  it('#19 the host’s clients cannot be managed through RFC 7592', async () => {
    const ctx = await dcrSetup()
    const response = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/register/web`, { method: 'DELETE', headers: { authorization: 'Bearer x' } }),
    )
    expect(response.status).toBe(401)
    expect(await ctx.service.clients.find('web')).toBeDefined()
  })
})

describe('#19 pruning of unused dynamic clients', () => {
  it('#19 pruneDynamic deletes dynamic clients unused for the given time, and only those', async () => {
    const ctx = await dcrSetup()
    const idle = await registered(ctx.service.fetch)
    const used = await registered(ctx.service.fetch, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code', 'refresh_token'],
    })
    ctx.clock.advance(10 * 86_400)
    // A token request (even a failing grant) by an authenticated client records its use.
    await ctx.service.fetch(
      form(`${ISSUER}/connect/token`, {
        grant_type: 'refresh_token',
        refresh_token: 'unknown',
        client_id: used.client_id,
        client_secret: used.client_secret as string,
      }),
    )
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect((await ctx.service.clients.find(used.client_id))?.registration?.lastUsedAt).toBe(ctx.clock.now())
    ctx.clock.advance(5 * 86_400)
    const removed = await ctx.service.clients.pruneDynamic({ unusedFor: 7 * 86_400 })
    expect(removed).toEqual([idle.client_id])
    expect(await ctx.service.clients.find(idle.client_id)).toBeUndefined()
    expect(await ctx.service.clients.find(used.client_id)).toBeDefined()
    expect(await ctx.service.clients.find('web')).toBeDefined()
  })

  it('#19 a registration prunes clients unused for pruneUnusedAfter (30 days by default)', async () => {
    const ctx = await dcrSetup()
    const old = await registered(ctx.service.fetch)
    ctx.clock.advance(31 * 86_400)
    await registered(ctx.service.fetch)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(await ctx.service.clients.find(old.client_id)).toBeUndefined()
  })
})

describe('#19 discovery', () => {
  it('#19 registration_endpoint is in both documents only when registration is on', async () => {
    const ctx = await dcrSetup()
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const doc = (await (await ctx.service.fetch(new Request(ISSUER + path))).json()) as Record<string, unknown>
      expect(doc.registration_endpoint, path).toBe(`${ISSUER}/connect/register`)
    }
    const { service } = await makeService()
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const doc = (await (await service.fetch(new Request(ISSUER + path))).json()) as Record<string, unknown>
      expect(doc.registration_endpoint, path).toBeUndefined()
    }
  })

  it('#19 an issuer with a path serves both documents path-inserted and path-appended, and registers below its path', async () => {
    const issuer = 'https://example.com/tenant-a'
    const time = clock()
    const { service } = await makeService({
      issuer,
      now: time.now,
      scopes: ['mcp:tools'],
      dynamicClientRegistration: DCR,
    })
    for (const url of [
      'https://example.com/.well-known/oauth-authorization-server/tenant-a',
      'https://example.com/.well-known/openid-configuration/tenant-a',
      'https://example.com/tenant-a/.well-known/oauth-authorization-server',
      'https://example.com/tenant-a/.well-known/openid-configuration',
    ]) {
      const response = await service.fetch(new Request(url))
      expect(response.status, url).toBe(200)
      const doc = (await response.json()) as Record<string, unknown>
      expect(doc.issuer, url).toBe(issuer)
      expect(doc.registration_endpoint, url).toBe(`${issuer}/connect/register`)
    }
    // oauth4webapi's RFC 8414 and OIDC discovery both accept it.
    for (const algorithm of ['oauth2', 'oidc'] as const) {
      const response = await oauth.discoveryRequest(new URL(issuer), { algorithm, ...inProcess(service.fetch) })
      const as = await oauth.processDiscoveryResponse(new URL(issuer), response)
      expect(as.registration_endpoint).toBe(`${issuer}/connect/register`)
    }
    const reg = await service.fetch(
      new Request(`${issuer}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(MCP_CLIENT),
      }),
    )
    expect(reg.status).toBe(201)
    const info = (await reg.json()) as {
      client_id: string
      registration_client_uri: string
      registration_access_token: string
    }
    expect(info.registration_client_uri).toBe(`${issuer}/connect/register/${info.client_id}`)
    const read = await service.fetch(
      new Request(info.registration_client_uri, {
        headers: { authorization: `Bearer ${info.registration_access_token}` },
      }),
    )
    expect(read.status).toBe(200)
  })
})

describe('#19 the option', () => {
  it('#19 the configuration file takes the same key; bad settings fail at construction', () => {
    const file = parseConfigFile(
      JSON.stringify({
        dynamicClientRegistration: {
          scopes: ['mcp:tools', 'openid', 'offline_access'],
          initialAccessToken: 'optional-secret',
          grantTypes: ['authorization_code', 'refresh_token'],
        },
      }),
    )
    expect(file.dynamicClientRegistration).toMatchObject({ maxPerAddressPerHour: 20, pruneUnusedAfter: 2_592_000 })
    expect(() => createTokenService({ issuer: ISSUER, dynamicClientRegistration: { scopes: ['nope'] } })).toThrow(
      /dynamicClientRegistration.scopes/,
    )
    expect(() =>
      createTokenService({
        issuer: ISSUER,
        dynamicClientRegistration: { scopes: ['openid'], grantTypes: ['password' as never] },
      }),
    ).toThrow(/grantTypes/)
  })
})
