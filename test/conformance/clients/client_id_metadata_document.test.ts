/**
 * Client ID Metadata Documents (#19, draft-ietf-oauth-client-id-metadata-document): documents are
 * served over real HTTPS by a local server whose certificate comes from a CA made at test time;
 * the in-process service trusts it through the option's `fetch`, the standalone server (child
 * process) through NODE_EXTRA_CA_CERTS.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Server, createServer, request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TokenServiceOptions } from '../../../src/index.ts'
import { Browser } from '../../helpers/browser.ts'
import { authorizationUrl } from '../../helpers/flow.ts'
import { ISSUER, RU, discover, form, inProcess, makeService } from '../../helpers/service.ts'
import { ROOT, freePort, launch, waitUntilServing, writeConfig } from '../../runtime/server.ts'

/** Text put into every bad document: no answer may ever repeat it. */
const MARKER = 'BODY-MARKER-7f3a'

let dir: string
let ca: string
let server: Server
let origin: string
const fetches = new Map<string, number>()
type Route = (req: IncomingMessage, res: ServerResponse) => void
const routes = new Map<string, Route>()

function json(body: unknown, headers: Record<string, string> = {}): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', ...headers })
    res.end(typeof body === 'string' ? body : JSON.stringify(body))
  }
}

/** A document URL on the test server (127.0.0.1, as the certificate says). */
const doc = (path: string) => `${origin}/clients/${path}`

function good(path: string, extra: Record<string, unknown> = {}) {
  return {
    client_id: doc(path),
    client_name: 'Tool Client',
    redirect_uris: [RU],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...extra,
  }
}

/** A fetch that trusts the test CA: node:https underneath, no redirects followed, the signal honoured. */
function caFetch(url: string, init: RequestInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { method: 'GET', ca, headers: init.headers as Record<string, string>, signal: init.signal ?? undefined },
      (res) => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === 'string') headers.set(name, value)
        }
        const status = res.statusCode ?? 500
        const body = status === 204 || status === 304 ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>)
        resolve(new Response(body, { status, headers }))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-cimd-'))
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Gatehouse Test CA',
  )
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  )
  ca = readFileSync(join(dir, 'ca.pem'), 'utf8')
  server = createServer(
    { key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')) },
    (req, res) => {
      const path = new URL(req.url ?? '/', 'https://x').pathname.replace(/^\/clients\//, '')
      fetches.set(path, (fetches.get(path) ?? 0) + 1)
      const route = routes.get(path)
      if (route) return route(req, res)
      res.writeHead(404, { 'content-type': 'text/plain' })
      res.end(`not here ${MARKER}`)
    },
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`

  routes.set('good.json', json(good('good.json'), { 'cache-control': 'max-age=120' }))
  routes.set('nostore.json', json(good('nostore.json'), { 'cache-control': 'no-store' }))
  routes.set('mismatch.json', json(good('mismatch.json', { client_id: doc('other.json'), client_name: MARKER })))
  routes.set(
    'bad-redirect.json',
    json(good('bad-redirect.json', { redirect_uris: ['http://evil.example/cb'], logo: MARKER })),
  )
  routes.set('secret.json', json(good('secret.json', { token_endpoint_auth_method: 'client_secret_basic', x: MARKER })))
  routes.set('not-json.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(`<p>${MARKER}</p>`)
  })
  routes.set('broken.json', json(`{"client_id": "${MARKER}`))
  routes.set('big.json', json(good('big.json', { padding: MARKER + 'x'.repeat(70 * 1024) })))
  routes.set('redirect.json', (_req, res) => {
    res.writeHead(302, { location: doc('good.json'), 'content-type': 'text/plain' })
    res.end(MARKER)
  })
  routes.set('hang.json', () => {
    // never answers: the fetch must time out
  })
})

afterAll(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  rmSync(dir, { recursive: true, force: true })
})

async function service(
  options: Partial<TokenServiceOptions['clientIdMetadataDocuments']> = {},
  more: Partial<TokenServiceOptions> = {},
) {
  const made = await makeService({
    scopes: ['mcp:tools'],
    clientIdMetadataDocuments: {
      scopes: ['mcp:tools', 'openid', 'offline_access'],
      allowPrivateNetworks: true,
      fetch: caFetch,
      ...options,
    },
    ...more,
  })
  const as = await discover(made.service.fetch)
  return { ...made, as, browser: new Browser(made.service.fetch), opts: inProcess(made.service.fetch) }
}

async function authorizePage(ctx: Awaited<ReturnType<typeof service>>, clientId: string) {
  const { url } = await authorizationUrl(ctx.as, { clientId, scope: 'openid mcp:tools' })
  return ctx.service.fetch(new Request(url.href, { redirect: 'manual' }))
}

async function tokenWith(ctx: Awaited<ReturnType<typeof service>>, clientId: string) {
  const response = await ctx.service.fetch(
    form(`${ISSUER}/connect/token`, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code: 'x'.repeat(43),
      redirect_uri: RU,
      code_verifier: 'v'.repeat(43),
    }),
  )
  return { status: response.status, text: await response.text() }
}

describe('client id metadata documents', () => {
  it('discovery says client_id_metadata_document_supported only when the option is on (both documents)', async () => {
    const on = await service()
    const off = await makeService()
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const yes = await (await on.service.fetch(new Request(ISSUER + path))).json()
      const no = await (await off.service.fetch(new Request(ISSUER + path))).json()
      expect(yes.client_id_metadata_document_supported).toBe(true)
      expect(no).not.toHaveProperty('client_id_metadata_document_supported')
    }
  })

  it('a good document: consent names the client and the document host, then code and tokens (PKCE, auth none)', async () => {
    const ctx = await service()
    fetches.delete('good.json')
    const clientId = doc('good.json')
    const request = await authorizationUrl(ctx.as, { clientId, scope: 'openid mcp:tools offline_access' })
    const first = await ctx.browser.navigate(request.url.href)
    if (!first.page) throw new Error('no sign-in page')
    const consent = await ctx.browser.signIn(first.page, 'alice', 'alice-password')
    if (!consent.page) throw new Error('no consent page: a metadata-document client always gets explicit consent')
    expect(consent.page.html).toContain('Tool Client')
    expect(consent.page.html).toContain(new URL(origin).host) // the document's host
    expect(consent.page.html).toContain('rp.example.test') // the redirect host
    const after = await ctx.browser.submit(consent.page, { decision: 'allow' })
    if (!after.callback) throw new Error(`no callback:\n${after.page?.html}`)
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' }
    const params = oauth.validateAuthResponse(ctx.as, client, after.callback, request.state as string)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      client,
      oauth.None(),
      params,
      RU,
      request.verifier,
      ctx.opts,
    )
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, client, response, {
      expectedNonce: request.nonce as string,
    })
    expect(result.scope?.split(' ').sort()).toEqual(['mcp:tools', 'offline_access', 'openid'])
    expect(typeof result.refresh_token).toBe('string')
    // refresh re-reads the client through its (cached) document
    const refreshed = await oauth.refreshTokenGrantRequest(
      ctx.as,
      client,
      oauth.None(),
      result.refresh_token as string,
      ctx.opts,
    )
    expect((await oauth.processRefreshTokenResponse(ctx.as, client, refreshed)).access_token).toBeTypeOf('string')
    expect(fetches.get('good.json')).toBe(1)
  })

  it('requires PKCE and refuses client_credentials for such clients', async () => {
    const ctx = await service({}, {})
    const { url } = await authorizationUrl(ctx.as, {
      clientId: doc('good.json'),
      scope: 'openid mcp:tools',
      pkce: false,
    })
    // #27 item 1: a page on the issuer, not a redirect to the document's redirect URI.
    const noPkce = await ctx.service.fetch(new Request(url.href, { redirect: 'manual' }))
    expect(noPkce.status).toBe(400)
    expect(noPkce.headers.get('location')).toBeNull()
    expect(await noPkce.text()).toContain('invalid_request')
    const cc = await ctx.service.fetch(
      form(`${ISSUER}/connect/token`, {
        grant_type: 'client_credentials',
        client_id: doc('good.json'),
        scope: 'mcp:tools',
      }),
    )
    expect(cc.status).toBeGreaterThanOrEqual(400)
    expect(await cc.json()).not.toHaveProperty('access_token')
  })

  it.each([
    ['mismatch.json', 'client_id mismatch', [400]],
    ['bad-redirect.json', 'bad redirect_uris', [400]],
    ['secret.json', 'a client_secret auth method', [400]],
    ['not-json.json', 'a non-JSON content type', [502]],
    ['broken.json', 'invalid JSON', [400]],
    ['big.json', 'a body over 64 KiB', [502]],
    ['redirect.json', 'a redirect', [502]],
    ['missing.json', 'a 404', [502]],
  ])(
    '%s (%s): an error page at authorize, never a redirect, and invalid_client at the token endpoint',
    async (path, _what, statuses) => {
      const ctx = await service()
      const page = await authorizePage(ctx, doc(path))
      const html = await page.text()
      expect(statuses).toContain(page.status)
      expect(page.headers.get('location')).toBeNull()
      expect(page.headers.get('content-type')).toContain('text/html')
      expect(html).toContain('invalid_client')
      expect(html).not.toContain(MARKER)
      const token = await tokenWith(ctx, doc(path))
      expect(token.status).toBe(401)
      expect(JSON.parse(token.text).error).toBe('invalid_client')
      expect(token.text).not.toContain(MARKER)
    },
  )

  it('a fetch that does not answer in time is a 504 error page (bounded by the timeout)', async () => {
    const ctx = await service({ timeout: 0.3 })
    const started = Date.now()
    const page = await authorizePage(ctx, doc('hang.json'))
    expect(page.status).toBe(504)
    expect(Date.now() - started).toBeLessThan(3000)
  })

  it('refuses private addresses by default: the literal 127.0.0.1 is never fetched', async () => {
    const ctx = await service({ allowPrivateNetworks: false })
    fetches.delete('private.json')
    routes.set('private.json', json(good('private.json')))
    const page = await authorizePage(ctx, doc('private.json'))
    expect(page.status).toBe(400)
    expect(await page.text()).toContain('private or local address')
    expect(fetches.get('private.json')).toBeUndefined()
    expect((await tokenWith(ctx, doc('private.json'))).status).toBe(401)
  })

  it('checks resolved addresses of a host name (resolveHost) before fetching', async () => {
    const seen: string[] = []
    const spy = async (url: string) => {
      seen.push(url)
      return new Response(JSON.stringify({ client_id: url, redirect_uris: [RU], client_name: 'Named' }), {
        headers: { 'content-type': 'application/json' },
      })
    }
    const resolveHost = async (host: string) => (host === 'inside.example' ? ['10.1.2.3'] : ['93.184.216.34'])
    const ctx = await service({ allowPrivateNetworks: false, fetch: spy }, { resolveHost })
    const refused = await authorizePage(ctx, 'https://inside.example/client.json')
    expect(refused.status).toBe(400)
    expect(seen).toEqual([])
    const allowed = await authorizePage(ctx, 'https://outside.example/client.json')
    expect(allowed.status).toBe(303)
    expect(seen).toEqual(['https://outside.example/client.json'])
  })

  it('caches documents per Cache-Control: max-age within bounds, no-store for the 60 s minimum', async () => {
    const ctx = await service()
    fetches.delete('good.json')
    fetches.delete('nostore.json')
    for (let i = 0; i < 3; i++) expect((await authorizePage(ctx, doc('good.json'))).status).toBe(303)
    expect(fetches.get('good.json')).toBe(1)
    ctx.clock.advance(119)
    await authorizePage(ctx, doc('good.json'))
    expect(fetches.get('good.json')).toBe(1)
    ctx.clock.advance(2)
    await authorizePage(ctx, doc('good.json'))
    expect(fetches.get('good.json')).toBe(2)

    await authorizePage(ctx, doc('nostore.json'))
    await authorizePage(ctx, doc('nostore.json'))
    expect(fetches.get('nostore.json')).toBe(1)
    ctx.clock.advance(61)
    await authorizePage(ctx, doc('nostore.json'))
    expect(fetches.get('nostore.json')).toBe(2)
  })

  it('counts fetches per document host with the throttle (unknown URLs: 30 a host, a failure counting two; #27 item 5)', async () => {
    let calls = 0
    const spy = async (_url: string) => {
      calls++
      return new Response('{}', { status: 404, headers: { 'content-type': 'application/json' } })
    }
    const ctx = await service({ allowPrivateNetworks: false, fetch: spy })
    const statuses: number[] = []
    for (let i = 0; i < 65; i++) statuses.push((await authorizePage(ctx, `https://busy.example/c${i}.json`)).status)
    expect(calls).toBe(15)
    expect(statuses.at(-1)).toBe(429)
  })

  const bin = (name: string) => join(ROOT, 'node_modules/.bin', name)
  const RUNTIMES = [
    { name: 'Node', command: [bin('tsx'), 'bin/serve_node.ts'], caVariable: 'NODE_EXTRA_CA_CERTS' },
    { name: 'Bun', command: [bin('bun'), 'run', 'bin/serve_bun.ts'], caVariable: 'NODE_EXTRA_CA_CERTS' },
    {
      name: 'Deno',
      command: [bin('deno'), 'run', '--allow-net', '--allow-env', '--allow-read', 'bin/serve_deno.ts'],
      caVariable: 'DENO_CERT',
    },
  ]

  it.each(RUNTIMES)(
    'the standalone server on $name trusts $caVariable for document fetches',
    async ({ command, caVariable }) => {
      const port = await freePort()
      const issuer = `http://127.0.0.1:${port}`
      const config = writeConfig({
        secretHashIterations: 1000,
        scopes: ['mcp:tools'],
        clientIdMetadataDocuments: { scopes: ['mcp:tools'], allowPrivateNetworks: true },
      })
      const name = `child-${caVariable}-${port}.json`
      routes.set(name, json(good(name)))
      const running = launch([...command, '--config', config.path], {
        PORT: String(port),
        HOST: '127.0.0.1',
        ISSUER: issuer,
        [caVariable]: join(dir, 'ca.pem'),
      })
      try {
        await waitUntilServing(running, `${issuer}/.well-known/openid-configuration`, 40_000)
        const meta = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json()
        expect(meta.client_id_metadata_document_supported).toBe(true)
        const url = new URL(`${issuer}/connect/authorize`)
        url.search = new URLSearchParams({
          response_type: 'code',
          client_id: doc(name),
          redirect_uri: RU,
          scope: 'mcp:tools',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        }).toString()
        const response = await fetch(url, { redirect: 'manual' })
        expect(response.status).toBe(303)
        expect(response.headers.get('location')).toContain('/connect/interaction')
        expect(fetches.get(name)).toBe(1)
      } finally {
        await running.stop(10_000)
        config.remove()
      }
    },
    60_000,
  )
})
