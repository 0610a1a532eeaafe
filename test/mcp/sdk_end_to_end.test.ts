/**
 * #19 end to end with the real MCP SDK (@modelcontextprotocol/sdk), over loopback HTTP: one
 * Node server with Gatehouse (dynamic registration and client ID metadata documents on), an MCP
 * server built with the SDK at `/mcp` behind `gatehouse-oidc/resource-server` (RFC 9728 metadata,
 * `resource_metadata` in the 401), and an SDK `Client` whose `OAuthClientProvider` signs the user
 * in through the built-in pages over HTTP. The client finds everything by itself: 401 → protected
 * resource metadata → authorization server metadata → registration (or its metadata document
 * URL as client_id) → authorize with `resource` → token with `resource` → the tool sees the user.
 *
 * The client's metadata document is served over https by a local server whose certificate comes
 * from a test CA made with the openssl CLI; Gatehouse fetches it through the
 * `clientIdMetadataDocuments.fetch` option with a fetch that trusts that CA (a deployment uses the
 * runtime's CA store, plus NODE_EXTRA_CA_CERTS on Node).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { Server } from 'node:http'
import { type Server as HttpsServer, createServer as createHttpsServer, request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveNode } from '../../adapters/node.ts'
import { createTokenService } from '../../src/index.ts'
import { createResourceServer } from '../../src/resource_server/index.ts'
import { type SentRequest, SignInProvider, connectWithSignIn, mcpHost, recordingFetch, whoami } from '../helpers/mcp.ts'
import { USERS } from '../helpers/service.ts'
import { freePort } from '../runtime/server.ts'

/** The MCP client's redirect URI: never fetched, the sign-in stops there (port 9: discard). */
const REDIRECT_URI = 'http://127.0.0.1:9/mcp-callback'
const MCP_SCOPE = 'mcp:tools'

/** A test CA and a certificate for 127.0.0.1 signed by it, made by the openssl CLI in a temp dir. */
function makeCertificates(dir: string): { ca: string; key: string; cert: string } {
  /** Runs openssl with `args` split on spaces (no argument here contains one). */
  const openssl = (args: string) =>
    execFileSync('openssl', args.split(' '), { cwd: dir, stdio: 'pipe', timeout: 20_000 })
  const ec = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
  const caExtensions = '-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign'
  openssl(`req -x509 ${ec} -keyout ca.key -out ca.pem -days 1 -subj /CN=Gatehouse-MCP-test-CA ${caExtensions}`)
  openssl(`req ${ec} -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1`)
  writeFileSync(
    join(dir, 'leaf.ext'),
    'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  )
  openssl('x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile leaf.ext -out leaf.pem')
  const read = (name: string) => readFileSync(join(dir, name), 'utf8')
  return { ca: read('ca.pem'), key: read('leaf.key'), cert: read('leaf.pem') }
}

/**
 * A fetch for https: URLs that trusts `ca` (and nothing else): what a deployment gets from its CA
 * store, for a test CA. No redirects are followed (the caller asks for `manual` anyway).
 */
function fetchTrusting(ca: string): (url: string, init: RequestInit) => Promise<Response> {
  return (url, init) =>
    new Promise((resolve, reject) => {
      const headers = Object.fromEntries(new Headers(init.headers))
      const outgoing = httpsRequest(url, {
        method: init.method ?? 'GET',
        headers,
        ca,
        signal: init.signal ?? undefined,
      })
      outgoing.once('error', reject)
      outgoing.once('response', (incoming) => {
        const chunks: Buffer[] = []
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
        incoming.once('error', reject)
        incoming.once('end', () => {
          const responseHeaders = new Headers()
          for (const [name, value] of Object.entries(incoming.headers)) {
            if (typeof value === 'string') responseHeaders.set(name, value)
          }
          resolve(new Response(Buffer.concat(chunks), { status: incoming.statusCode ?? 500, headers: responseHeaders }))
        })
      })
      outgoing.end()
    })
}

/** The form fields of a recorded POST (token and authorization requests are forms). */
function form(request: SentRequest | undefined): URLSearchParams {
  return new URLSearchParams(request?.body ?? '')
}

describe('#19 MCP SDK client → Gatehouse-protected MCP server (loopback HTTP)', () => {
  let dir = ''
  let server: Server | undefined
  let documentServer: HttpsServer | undefined
  let issuer = ''
  let resource = ''
  let metadataUrl = ''
  let documentUrl = ''
  /** Requests the metadata document host received. */
  const documentFetches: string[] = []

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-'))
    const { ca, key, cert } = makeCertificates(dir)

    // The client's metadata document, on an https server of its own (another "origin").
    documentServer = createHttpsServer({ key, cert }, (req, res) => {
      documentFetches.push(`${req.method} ${req.url}`)
      if (req.url !== '/clients/mcp-agent.json') {
        res.writeHead(404).end()
        return
      }
      const document = {
        client_id: documentUrl,
        client_name: 'Gatehouse MCP test agent (metadata document)',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' })
        .end(JSON.stringify(document))
    })
    await new Promise<void>((resolve) => documentServer?.listen(0, '127.0.0.1', resolve))
    const address = documentServer.address()
    if (address === null || typeof address === 'string') throw new Error('no address')
    documentUrl = `https://127.0.0.1:${address.port}/clients/mcp-agent.json`

    const port = await freePort()
    issuer = `http://127.0.0.1:${port}`
    resource = `${issuer}/mcp`
    metadataUrl = `${issuer}/.well-known/oauth-protected-resource/mcp`
    const service = createTokenService({
      issuer,
      secretHashIterations: 1000,
      users: USERS,
      scopes: [{ name: MCP_SCOPE, audience: resource }],
      dynamicClientRegistration: { scopes: [MCP_SCOPE, 'openid', 'offline_access'] },
      clientIdMetadataDocuments: {
        scopes: [MCP_SCOPE, 'openid', 'offline_access'],
        allowPrivateNetworks: true, // the document host is 127.0.0.1
        fetch: fetchTrusting(ca),
      },
    })
    const resourceServer = createResourceServer({
      issuer,
      resource,
      requiredScopes: [MCP_SCOPE],
      allowInsecureRequests: true, // http: on loopback, for the test
      fetch: (url, init) => service.fetch(new Request(url, init)),
    })
    server = await serveNode(mcpHost({ gatehouse: service.fetch, resourceServer }), { port, hostname: '127.0.0.1' })
  })

  afterAll(async () => {
    server?.closeAllConnections()
    documentServer?.closeAllConnections()
    await Promise.all([
      new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined))),
      new Promise((resolve) => (documentServer ? documentServer.close(resolve) : resolve(undefined))),
    ])
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('#19 /mcp without a token: 401 naming the RFC 9728 metadata, which names Gatehouse', async () => {
    const refused = await fetch(resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl}"`)
    await refused.body?.cancel()
    const metadata = (await (await fetch(metadataUrl)).json()) as Record<string, unknown>
    expect(metadata).toMatchObject({ resource, authorization_servers: [issuer] })
    const discovery = await fetch(`${issuer}/.well-known/oauth-authorization-server`)
    expect((await discovery.json()) as Record<string, unknown>).toMatchObject({
      registration_endpoint: `${issuer}/connect/register`,
      client_id_metadata_document_supported: true,
    })
  })

  it('#19 (a) dynamic registration: the SDK registers, alice signs in and consents, whoami sees her sub', async () => {
    const provider = new SignInProvider({ redirectUrl: REDIRECT_URI })
    const recorder = recordingFetch()
    const { client, transport } = await connectWithSignIn(resource, provider, recorder.fetch)
    try {
      const caller = await whoami(client)
      expect(caller.sub).toBe('user-1')
      expect(caller.scopes).toContain(MCP_SCOPE)

      // The SDK found the metadata from the 401 and registered itself at registration_endpoint.
      const sent = recorder.sent
      expect(sent.some((r) => r.method === 'GET' && r.url.href === metadataUrl)).toBe(true)
      const registrations = sent.filter((r) => r.method === 'POST' && r.url.href === `${issuer}/connect/register`)
      expect(registrations).toHaveLength(1)
      const registered = provider.clientInformation()
      expect(registered?.client_id).toBeTypeOf('string')
      expect(registered?.client_id.startsWith('https://')).toBe(false)
      expect(caller.client_id).toBe(registered?.client_id)

      // RFC 8707: `resource` in the authorization request and in the token request.
      const [trip] = provider.trips
      expect(trip?.authorizationUrl.searchParams.get('resource')).toBe(resource)
      expect(trip?.pages).toEqual(['login', 'consent']) // dynamic clients always see consent
      const tokenRequest = sent.find((r) => r.method === 'POST' && r.url.href === `${issuer}/connect/token`)
      expect(form(tokenRequest).get('grant_type')).toBe('authorization_code')
      expect(form(tokenRequest).get('resource')).toBe(resource)

      // The access token is for exactly this MCP server.
      const accessToken = provider.tokens()?.access_token as string
      expect(decodeJwt(accessToken)).toMatchObject({ aud: resource, sub: 'user-1', iss: issuer })
    } finally {
      await transport.close()
    }
  })

  it('#19 (b) client ID metadata document: the client_id is an https URL Gatehouse fetches; no registration', async () => {
    const provider = new SignInProvider({ redirectUrl: REDIRECT_URI, clientMetadataUrl: documentUrl })
    const recorder = recordingFetch()
    const { client, transport } = await connectWithSignIn(resource, provider, recorder.fetch)
    try {
      const caller = await whoami(client)
      expect(caller).toMatchObject({ sub: 'user-1', client_id: documentUrl })
      expect(caller.scopes).toContain(MCP_SCOPE)

      expect(provider.clientInformation()?.client_id).toBe(documentUrl)
      expect(recorder.sent.some((r) => r.url.pathname === '/connect/register')).toBe(false)
      expect(documentFetches.length).toBeGreaterThan(0)
      expect(documentFetches.every((line) => line === 'GET /clients/mcp-agent.json')).toBe(true)

      const [trip] = provider.trips
      expect(trip?.authorizationUrl.searchParams.get('client_id')).toBe(documentUrl)
      expect(trip?.authorizationUrl.searchParams.get('resource')).toBe(resource)
      expect(trip?.pages).toEqual(['login', 'consent'])
      const tokenRequest = recorder.sent.find((r) => r.method === 'POST' && r.url.href === `${issuer}/connect/token`)
      expect(form(tokenRequest).get('client_id')).toBe(documentUrl)
      expect(form(tokenRequest).get('resource')).toBe(resource)

      const accessToken = provider.tokens()?.access_token as string
      expect(decodeJwt(accessToken)).toMatchObject({ aud: resource, sub: 'user-1', client_id: documentUrl })
    } finally {
      await transport.close()
    }
  })
})
