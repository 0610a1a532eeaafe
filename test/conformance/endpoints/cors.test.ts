/**
 * CORS-01 … CORS-14: the endpoints a browser single-page app calls directly (discovery, JWKS,
 * token, userinfo, revocation) answer CORS for the origins of registered redirect URIs, on success
 * and error responses alike; preflights list methods and headers by name; unregistered origins get
 * nothing; introspection never answers CORS; the origin set is cached for 5 seconds.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { originOf } from '../../../src/cors.ts'
import { StoreUnavailableError } from '../../../src/errors.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { setup, signIn } from '../../helpers/flow.ts'
import { ISSUER, basic, clock, form, makeService } from '../../helpers/service.ts'

const SPA = 'https://spa.example.test'
const RP = 'https://rp.example.test'
const EVIL = 'https://evil.example.test'
const SPA_RU = `${SPA}/callback`

const url = (path: string) => ISSUER + path

function get(path: string, origin?: string, headers: Record<string, string> = {}): Request {
  return new Request(url(path), { headers: { ...(origin ? { origin } : {}), ...headers } })
}

function preflight(path: string, origin: string, method = 'POST', requestHeaders?: string): Request {
  return new Request(url(path), {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      ...(requestHeaders ? { 'access-control-request-headers': requestHeaders } : {}),
    },
  })
}

function varyList(response: Response): string[] {
  return (response.headers.get('vary') ?? '').split(',').map((v) => v.trim().toLowerCase())
}

/** The headers of a response a page on `origin` may read. */
function expectAllowed(response: Response, origin: string) {
  expect(response.headers.get('access-control-allow-origin')).toBe(origin)
  expect(varyList(response)).toContain('origin')
  expect(response.headers.get('access-control-expose-headers')).toMatch(/(^|, )WWW-Authenticate(,|$)/)
  expect(response.headers.get('access-control-allow-credentials')).toBeNull()
}

function expectNoCors(response: Response) {
  for (const [name] of response.headers) expect(name).not.toMatch(/^access-control-/)
}

const TOKEN = '/connect/token'
const USERINFO = '/connect/userinfo'
const REVOKE = '/connect/revoke'
const INTROSPECT = '/connect/introspect'
const DOCUMENTS = [
  '/.well-known/openid-configuration',
  '/.well-known/oauth-authorization-server',
  '/.well-known/jwks.json',
]

/** A memory store counting client list reads. */
function countingStore(now: () => number) {
  const store = createMemoryStore({ now })
  const list = store.clients.list.bind(store.clients)
  const counter = { reads: 0, fail: false }
  store.clients.list = async () => {
    counter.reads++
    if (counter.fail) throw new StoreUnavailableError('injected')
    return list()
  }
  return { store, counter }
}

describe('CORS: allowed origins', () => {
  it('CORS-01: discovery (both well-knowns) and JWKS answer a registered origin, GET and HEAD', async () => {
    const { service } = await makeService()
    for (const path of DOCUMENTS) {
      const response = await service.fetch(get(path, SPA))
      expect(response.status, path).toBe(200)
      expectAllowed(response, SPA)
      const head = await service.fetch(new Request(url(path), { method: 'HEAD', headers: { origin: SPA } }))
      expect(head.status).toBe(200)
      expectAllowed(head, SPA)
    }
  })

  it('CORS-02: the origin of any registered client redirect URI, and only those', async () => {
    const { service } = await makeService()
    await service.clients.ensure({
      clientId: 'plo-only',
      permissions: ['ept:authorization', 'ept:logout', 'gt:authorization_code', 'rst:code', 'scp:openid'],
      redirectUris: ['https://app.example.test:8443/cb?x=1', 'com.example.app:/oauth'],
      postLogoutRedirectUris: ['https://logout-only.example.test/bye'],
    })
    const path = '/.well-known/openid-configuration'
    for (const origin of [SPA, RP, 'https://rp2.example.test', 'https://app.example.test:8443']) {
      expectAllowed(await service.fetch(get(path, origin)), origin)
    }
    for (const origin of [
      EVIL,
      'https://logout-only.example.test', // post-logout redirect URIs do not count
      'http://spa.example.test', // other scheme
      'https://spa.example.test:8443', // other port
      'https://app.example.test', // default port, registered one is 8443
      'https://SPA.example.test', // browsers serialise origins in lower case
      `${SPA}/`,
      'null', // opaque origins (sandboxed frames, file:, custom schemes)
      'com.example.app:',
      ISSUER, // the issuer itself is no client
    ]) {
      const response = await service.fetch(get(path, origin))
      expect(response.status, origin).toBe(200)
      expectNoCors(response)
      expect(varyList(response), origin).toContain('origin')
    }
  })

  it('CORS-03: requests without Origin get no CORS headers; cacheable documents still vary on Origin', async () => {
    const { service } = await makeService()
    for (const path of DOCUMENTS) {
      const response = await service.fetch(get(path))
      expectNoCors(response)
      expect(varyList(response)).toContain('origin')
    }
    const token = await service.fetch(
      form(url(TOKEN), { grant_type: 'client_credentials' }, { authorization: basic('service', 'service-secret') }),
    )
    expect(token.status).toBe(200)
    expectNoCors(token)
  })
})

describe('CORS: the token, userinfo and revocation endpoints', () => {
  it('CORS-04: the code flow of a public SPA client, cross-origin: token, userinfo, refresh, revocation', async () => {
    const ctx = await setup()
    const client: oauth.Client = { client_id: 'spa', token_endpoint_auth_method: 'none' }
    // oauth4webapi's requests from the SPA's origin, as a browser would send them.
    const opts = {
      [oauth.customFetch]: async (target: string, init?: RequestInit) => {
        const headers = new Headers(init?.headers)
        headers.set('origin', SPA)
        const response = await ctx.service.fetch(new Request(target, { ...init, headers }))
        expectAllowed(response, SPA)
        return response
      },
    }
    const { result } = await signIn(
      { ...ctx, opts },
      { client, auth: oauth.None(), redirectUri: SPA_RU, scope: 'openid email' },
    )
    expect(result.refresh_token).toEqual(expect.any(String))

    const info = await ctx.service.fetch(get(USERINFO, SPA, { authorization: `Bearer ${result.access_token}` }))
    expect(info.status).toBe(200)
    expectAllowed(info, SPA)
    expect(await info.json()).toMatchObject({ sub: 'user-1', email: 'alice@example.com' })

    const refreshed = await ctx.service.fetch(
      form(
        url(TOKEN),
        { grant_type: 'refresh_token', refresh_token: result.refresh_token as string, client_id: 'spa' },
        { origin: SPA },
      ),
    )
    expect(refreshed.status).toBe(200)
    expectAllowed(refreshed, SPA)
    const next = (await refreshed.json()) as { refresh_token: string }

    const revoked = await ctx.service.fetch(
      form(url(REVOKE), { token: next.refresh_token, client_id: 'spa' }, { origin: SPA }),
    )
    expect(revoked.status).toBe(200)
    expectAllowed(revoked, SPA)
  })

  it('CORS-05: error responses carry CORS too, with the challenge exposed', async () => {
    const { service } = await makeService()
    const cases: Array<[Request, number, string | null]> = [
      [
        form(url(TOKEN), { grant_type: 'authorization_code', code: 'nope', client_id: 'spa' }, { origin: SPA }),
        400,
        null,
      ],
      [form(url(TOKEN), { grant_type: 'password' }, { origin: SPA }), 400, null],
      [
        form(
          url(TOKEN),
          { grant_type: 'client_credentials' },
          { origin: SPA, authorization: basic('service', 'wrong') },
        ),
        401,
        'Basic',
      ],
      [get(USERINFO, SPA), 401, 'Bearer'],
      [get(USERINFO, SPA, { authorization: 'Bearer not-a-token' }), 401, 'Bearer'],
      [form(url(REVOKE), { client_id: 'spa' }, { origin: SPA }), 400, null],
      [get(TOKEN, SPA), 405, null],
      [
        new Request(url(TOKEN), { method: 'POST', headers: { origin: SPA, 'content-type': 'text/plain' }, body: 'x' }),
        400,
        null,
      ],
    ]
    for (const [request, status, challenge] of cases) {
      const label = `${request.method} ${new URL(request.url).pathname}`
      const response = await service.fetch(request)
      expect(response.status, label).toBe(status)
      expectAllowed(response, SPA)
      expect(await response.json(), label).toMatchObject({ error: expect.any(String) })
      if (challenge) expect(response.headers.get('www-authenticate'), label).toMatch(new RegExp(`^${challenge} `))
    }
  })

  it('CORS-06: an unregistered origin gets no CORS headers, success or error', async () => {
    const { service } = await makeService()
    const ok = await service.fetch(
      form(
        url(TOKEN),
        { grant_type: 'client_credentials' },
        { origin: EVIL, authorization: basic('service', 'service-secret') },
      ),
    )
    expect(ok.status).toBe(200)
    expectNoCors(ok)
    const error = await service.fetch(get(USERINFO, EVIL))
    expect(error.status).toBe(401)
    expectNoCors(error)
  })

  it('CORS-07: introspection never answers CORS (it is for resource servers); unknown paths neither', async () => {
    const { service } = await makeService()
    const response = await service.fetch(
      form(url(INTROSPECT), { token: 'x' }, { origin: SPA, authorization: basic('service', 'service-secret') }),
    )
    expect(response.status).toBe(200)
    expectNoCors(response)
    const pre = await service.fetch(preflight(INTROSPECT, SPA, 'POST', 'authorization'))
    expect(pre.status).toBe(405)
    expectNoCors(pre)
    const unknown = await service.fetch(get('/connect/nothing', SPA))
    expect(unknown.status).toBe(404)
    expectNoCors(unknown)
    // The browser pages are navigations, not CORS endpoints.
    const page = await service.fetch(get('/connect/authorize', SPA))
    expectNoCors(page)
  })
})

describe('CORS: preflight', () => {
  it('CORS-08: token preflight: 204 with POST, content-type, authorization and dpop (RFC 9449) by name, Max-Age', async () => {
    const { service } = await makeService()
    const response = await service.fetch(preflight(TOKEN, SPA, 'POST', 'authorization,content-type'))
    expect(response.status).toBe(204)
    expect(await response.text()).toBe('')
    expect(response.headers.get('access-control-allow-origin')).toBe(SPA)
    expect(varyList(response)).toContain('origin')
    expect(response.headers.get('access-control-allow-methods')).toBe('POST')
    const allowed = (response.headers.get('access-control-allow-headers') ?? '').split(/,\s*/)
    expect(allowed).toEqual(expect.arrayContaining(['authorization', 'content-type', 'dpop']))
    expect(allowed).not.toContain('*')
    expect(Number(response.headers.get('access-control-max-age'))).toBeGreaterThan(0)
    expect(response.headers.get('access-control-allow-credentials')).toBeNull()
  })

  it('CORS-09: userinfo preflight names authorization (a * would not cover it); GET and POST', async () => {
    const { service } = await makeService()
    const response = await service.fetch(preflight(USERINFO, SPA, 'GET', 'authorization'))
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe(SPA)
    expect((response.headers.get('access-control-allow-headers') ?? '').split(/,\s*/)).toContain('authorization')
    expect((response.headers.get('access-control-allow-methods') ?? '').split(/,\s*/)).toEqual(
      expect.arrayContaining(['GET', 'POST']),
    )
  })

  it('CORS-10: revocation, discovery and JWKS preflights', async () => {
    const { service } = await makeService()
    const revoke = await service.fetch(preflight(REVOKE, SPA, 'POST', 'authorization'))
    expect(revoke.status).toBe(204)
    expect(revoke.headers.get('access-control-allow-methods')).toBe('POST')
    expect(revoke.headers.get('access-control-allow-headers')).toMatch(/authorization/)
    for (const path of DOCUMENTS) {
      const response = await service.fetch(preflight(path, SPA, 'GET'))
      expect(response.status, path).toBe(204)
      expect(response.headers.get('access-control-allow-origin')).toBe(SPA)
      expect(response.headers.get('access-control-allow-methods')).toMatch(/GET/)
    }
  })

  it('CORS-11: preflight from an unregistered origin: 403 JSON without CORS headers', async () => {
    const { service } = await makeService()
    for (const path of [TOKEN, USERINFO, REVOKE, ...DOCUMENTS]) {
      const response = await service.fetch(preflight(path, EVIL, 'POST', 'authorization'))
      expect(response.status, path).toBe(403)
      expectNoCors(response)
      expect(await response.json()).toMatchObject({ error: 'invalid_request' })
    }
    const opaque = await service.fetch(preflight(TOKEN, 'null'))
    expect(opaque.status).toBe(403)
    expectNoCors(opaque)
  })

  it('CORS-12: OPTIONS that is no preflight stays a 405 with Allow', async () => {
    const { service } = await makeService()
    const bare = await service.fetch(new Request(url(TOKEN), { method: 'OPTIONS' }))
    expect(bare.status).toBe(405)
    expect(bare.headers.get('allow')).toBe('POST')
    expectNoCors(bare)
    const withOrigin = await service.fetch(new Request(url(TOKEN), { method: 'OPTIONS', headers: { origin: SPA } }))
    expect(withOrigin.status).toBe(405)
    expectAllowed(withOrigin, SPA)
  })
})

describe('CORS: the origin set', () => {
  it('CORS-13: read once per 5 s, not per request, and never for requests without Origin', async () => {
    const time = clock()
    const { store, counter } = countingStore(time.now)
    const { service } = await makeService({ store, now: time.now })
    const before = counter.reads
    for (let i = 0; i < 20; i++) await service.fetch(get('/.well-known/jwks.json'))
    expect(counter.reads).toBe(before)
    await Promise.all(Array.from({ length: 20 }, () => service.fetch(get('/.well-known/jwks.json', SPA))))
    await Promise.all(Array.from({ length: 20 }, () => service.fetch(get('/.well-known/jwks.json', EVIL))))
    expect(counter.reads).toBe(before + 1)
    time.advance(5)
    await service.fetch(get('/.well-known/jwks.json', EVIL))
    expect(counter.reads).toBe(before + 2)
  })

  it("CORS-14: a new client's origin is allowed after the cache TTL, a deleted one's no longer", async () => {
    const { service, clock: time } = await makeService()
    const NEW = 'https://new-spa.example.test'
    const path = '/.well-known/openid-configuration'
    expectNoCors(await service.fetch(get(path, NEW)))
    await service.clients.ensure({
      clientId: 'new-spa',
      permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
      redirectUris: [`${NEW}/callback`],
    })
    expectNoCors(await service.fetch(get(path, NEW))) // the cached set, at most 5 s old
    time.advance(5)
    expectAllowed(await service.fetch(get(path, NEW)), NEW)
    const pre = await service.fetch(preflight(TOKEN, NEW))
    expect(pre.status).toBe(204)
    await service.clients.delete('new-spa')
    time.advance(5)
    expectNoCors(await service.fetch(get(path, NEW)))
    expect((await service.fetch(preflight(TOKEN, NEW))).status).toBe(403)
  })

  it('CORS-15: store down: responses are served without CORS (fail closed), preflight 503; the last set is kept', async () => {
    const time = clock()
    const { store, counter } = countingStore(time.now)
    const { service } = await makeService({ store, now: time.now })
    counter.fail = true
    const response = await service.fetch(get('/.well-known/openid-configuration', SPA))
    expect(response.status).toBe(200)
    expectNoCors(response)
    const pre = await service.fetch(preflight(TOKEN, SPA))
    expect(pre.status).toBe(503)
    expectNoCors(pre)
    counter.fail = false
    expectAllowed(await service.fetch(get('/.well-known/openid-configuration', SPA)), SPA)
    counter.fail = true
    time.advance(60)
    expectAllowed(await service.fetch(get('/.well-known/openid-configuration', SPA)), SPA)
  })

  it('CORS-16: originOf: http(s) origins only', () => {
    expect(originOf('https://a.example/cb?x=1')).toBe('https://a.example')
    expect(originOf('https://a.example:443/cb')).toBe('https://a.example')
    expect(originOf('http://127.0.0.1:8080/cb')).toBe('http://127.0.0.1:8080')
    expect(originOf('HTTPS://A.EXAMPLE/cb')).toBe('https://a.example')
    expect(originOf('com.example.app:/oauth')).toBeUndefined()
    expect(originOf('not a url')).toBeUndefined()
  })
})

describe('#19 CORS with self-registration: browser MCP clients (MCP Inspector) come from unknown origins', () => {
  const INSPECTOR = 'http://localhost:6274'
  const open = { dynamicClientRegistration: { scopes: ['openid', 'api1'] } }

  it('#19 discovery and JWKS answer every origin, preflights with MCP-Protocol-Version included', async () => {
    const { service } = await makeService(open)
    for (const path of [
      '/.well-known/oauth-authorization-server',
      '/.well-known/openid-configuration',
      '/.well-known/jwks.json',
    ]) {
      expectAllowed(await service.fetch(get(path, INSPECTOR, { 'mcp-protocol-version': '2025-11-25' })), INSPECTOR)
      const pre = await service.fetch(preflight(path, INSPECTOR, 'GET', 'mcp-protocol-version'))
      expect(pre.status).toBe(204)
      expect(pre.headers.get('access-control-allow-origin')).toBe(INSPECTOR)
      expect(pre.headers.get('access-control-allow-headers')).toContain('mcp-protocol-version')
    }
  })

  it('#19 the registration endpoint answers every origin; the token endpoint still only registered ones', async () => {
    const { service } = await makeService(open)
    const pre = await service.fetch(preflight('/connect/register', INSPECTOR, 'POST', 'content-type'))
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-methods')).toBe('POST')
    const registered = await service.fetch(
      new Request(url('/connect/register'), {
        method: 'POST',
        headers: { origin: INSPECTOR, 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [`${INSPECTOR}/oauth/callback`], token_endpoint_auth_method: 'none' }),
      }),
    )
    expect(registered.status).toBe(201)
    expectAllowed(registered, INSPECTOR)
    expect((await service.fetch(preflight(TOKEN, EVIL))).status).toBe(403)
  })

  it('#19 without self-registration an unknown origin still gets no CORS on discovery', async () => {
    const { service } = await makeService()
    expectNoCors(await service.fetch(get('/.well-known/openid-configuration', INSPECTOR)))
  })
})
