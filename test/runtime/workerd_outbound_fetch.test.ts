/**
 * #28 item 3 on real workerd: the metadata-document and `jwks_uri` fetches run inside workerd (the
 * `workerd` binary wrangler uses, bundled with esbuild), with workerd's own `fetch`, against a
 * local server whose redirecting URLs answer 302. workerd has no `redirect: 'error'` (it throws);
 * the fetches ask for `'manual'`, read a 200, and refuse the 302 as a redirect. A document's
 * client id must be https, so the Worker's `fetch` option points https://tool.example.test at the
 * local server (still workerd's `fetch`, with the init the service passes).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, type Running, freePort, launch, waitUntilServing } from './server.ts'

const TOOL = 'https://tool.example.test'
const RU = 'https://rp.example.test/cb'

/** The Worker: a service with Client ID Metadata Documents, and a key source, run per request. */
const ENTRY = `
import { createTokenService } from './src/index.ts'
import { createClientKeySource } from './src/clients/jwks.ts'

export default {
  async fetch(request) {
    const url = new URL(request.url)
    if (url.pathname === '/health') return new Response('ok')
    const base = url.searchParams.get('base')
    const service = createTokenService({
      issuer: 'https://auth.example.test',
      secretHashIterations: 1000,
      scopes: ['mcp:tools'],
      logger: { warn() {}, error() {} },
      clientIdMetadataDocuments: {
        scopes: ['mcp:tools'],
        fetch: (target, init) => fetch(target.replace(${JSON.stringify(TOOL)}, base), init),
      },
    })
    const out = {}
    for (const path of ['/client.json', '/moved.json']) {
      const authorize = new URL('https://auth.example.test/connect/authorize')
      authorize.search = new URLSearchParams({
        response_type: 'code',
        client_id: ${JSON.stringify(TOOL)} + path,
        redirect_uri: ${JSON.stringify(RU)},
        scope: 'mcp:tools',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      }).toString()
      const response = await service.fetch(new Request(authorize, { redirect: 'manual' }))
      out['document ' + path] = { status: response.status, text: await response.text() }
    }
    // A host client's loopback jwks_uri (http is allowed there): workerd's fetch, unguarded.
    const keys = createClientKeySource({ now: () => Math.floor(Date.now() / 1000) })
    for (const path of ['/jwks', '/jwks-moved']) {
      try {
        out['jwks ' + path] = { keys: (await keys.keysFor({ clientId: 'host', jwksUri: base + path })).length }
      } catch (err) {
        out['jwks ' + path] = { error: err.message }
      }
    }
    try {
      await fetch(base + '/client.json', { redirect: 'error' })
      out.redirectError = 'accepted'
    } catch (err) {
      out.redirectError = err.message
    }
    return Response.json(out)
  },
}
`

let origin: Server
let base: string
let dir: string
let workerd: Running
let port: number

beforeAll(async () => {
  const jwk = {
    kty: 'EC',
    crv: 'P-256',
    x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
    y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
    kid: 'k1',
    alg: 'ES256',
    use: 'sig',
  }
  origin = createServer((req, res) => {
    const moved: Record<string, string> = { '/moved.json': '/client.json', '/jwks-moved': '/jwks' }
    const location = moved[req.url ?? '']
    if (location) {
      res.writeHead(302, { location }).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    if (req.url === '/jwks') {
      res.end(JSON.stringify({ keys: [jwk] }))
      return
    }
    const document = { client_id: `${TOOL}/client.json`, client_name: 'Tool', redirect_uris: [RU] }
    res.end(JSON.stringify({ ...document, token_endpoint_auth_method: 'none' }))
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`

  dir = mkdtempSync(join(tmpdir(), 'gatehouse-workerd-'))
  const bundle = await build({
    stdin: { contents: ENTRY, resolveDir: ROOT, loader: 'js', sourcefile: 'worker.js' },
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    write: false,
    logLevel: 'silent',
  })
  writeFileSync(join(dir, 'worker.js'), bundle.outputFiles[0]?.text ?? '')
  port = await freePort()
  writeFileSync(
    join(dir, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "2025-06-01",
);
`,
  )
  workerd = launch([join(ROOT, 'node_modules/.bin/workerd'), 'serve', 'config.capnp'], {}, dir)
  await waitUntilServing(workerd, `http://127.0.0.1:${port}/health`)
}, 60_000)

afterAll(async () => {
  await workerd?.stop()
  await new Promise((resolve) => origin?.close(resolve))
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('#28 item 3: outbound fetches inside workerd', () => {
  it('#28 item 3: documents and jwks_uri: a 200 is read, a 302 is refused as a redirect, never followed', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/run?base=${encodeURIComponent(base)}`)
    expect(response.status).toBe(200)
    const out = (await response.json()) as Record<string, { status?: number; text?: string } & Record<string, unknown>>
    // workerd itself: no redirect: 'error' (the reason the fetches use 'manual').
    expect(String(out.redirectError)).toContain('Invalid redirect value')
    expect(out['document /client.json']?.status).toBe(303) // on to sign-in: the document was read
    expect(out['document /moved.json']?.status).toBe(502)
    expect(out['document /moved.json']?.text).toContain('redirects are not followed')
    expect(out['jwks /jwks']).toEqual({ keys: 1 })
    expect(out['jwks /jwks-moved']).toEqual({ error: 'the client jwks_uri redirects; redirects are not followed' })
  })
})
