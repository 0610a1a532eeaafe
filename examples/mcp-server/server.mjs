/**
 * An MCP server protected by Gatehouse, both in one Node process on one port:
 *
 *   /mcp                                          the MCP endpoint (Streamable HTTP), bearer tokens only
 *   /.well-known/oauth-protected-resource/mcp     RFC 9728 metadata: "my tokens come from this issuer"
 *   /.well-known/oauth-authorization-server, /connect/*   Gatehouse: discovery, sign-in, registration, tokens
 *
 * An MCP client (MCP Inspector, Claude Desktop, VS Code, an agent built on the SDK) calls /mcp, gets
 * a 401 naming the metadata, finds Gatehouse there, registers itself (dynamic client registration,
 * or a client ID metadata document), sends the user to sign in, and calls the tool with the token.
 *
 * Environment: PORT (3000), HOST (localhost), ISSUER (http://localhost:PORT), DEMO_USER_PASSWORD.
 * Enterprise-managed authorization (#45, ID-JAG): ENTERPRISE_IDP_ISSUER and ENTERPRISE_IDP_JWKS_URI
 * trust an enterprise identity provider; ENTERPRISE_CLIENT_ID and ENTERPRISE_CLIENT_SECRET register
 * the MCP client that presents its ID-JAGs (the jwt-bearer grant: no sign-in, no consent here).
 */
import { createTokenService } from 'gatehouse-oidc'
import { nodeServiceOptions, serveNode } from 'gatehouse-oidc/adapters/node'
import { createResourceServer } from 'gatehouse-oidc/resource-server'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'

const port = Number(process.env.PORT ?? 3000)
const hostname = process.env.HOST ?? 'localhost'
/** Gatehouse's issuer: this server's public base URL, byte for byte. */
const issuer = process.env.ISSUER ?? `http://localhost:${port}`
/** The MCP endpoint's URL: the resource clients ask tokens for (RFC 8707), and the tokens' `aud`. */
const resource = `${issuer}/mcp`
/** The scope an MCP client needs for the tools. Its audience makes `resource` a known resource. */
const MCP_SCOPE = 'mcp:tools'
/** http: is for local development only (MCP clients tolerate it on localhost and loopback addresses). */
const insecure = issuer.startsWith('http:')

/** An enterprise identity provider whose ID-JAGs this server accepts (#45), when configured. */
const enterprise = process.env.ENTERPRISE_IDP_ISSUER
  ? { issuer: process.env.ENTERPRISE_IDP_ISSUER, jwksUri: process.env.ENTERPRISE_IDP_JWKS_URI }
  : undefined

const gatehouse = createTokenService({
  issuer,
  // Users of the enterprise IdP reach their account here by email (the demo user's below).
  ...(enterprise ? { identityAssertion: { issuers: [enterprise] } } : {}),
  // node:crypto hashing and signatures, and name resolution: a metadata document whose host name
  // resolves to a private address is refused.
  ...nodeServiceOptions(),
  scopes: [{ name: MCP_SCOPE, audience: resource }],
  // The demo user of the built-in sign-in page. Bring your own users with `accounts` + `interaction`.
  users: [
    {
      sub: 'demo-user-1',
      username: 'alice',
      password: process.env.DEMO_USER_PASSWORD ?? 'alice-password',
      email: 'alice@example.com',
      email_verified: true,
      given_name: 'Alice',
      family_name: 'Example',
    },
  ],
  // MCP clients register themselves (RFC 7591, POST /connect/register); the user sees a consent page.
  dynamicClientRegistration: { scopes: [MCP_SCOPE, 'openid', 'offline_access'] },
  // ...or identify themselves by an https URL serving their metadata (Client ID Metadata Documents).
  clientIdMetadataDocuments: { scopes: [MCP_SCOPE, 'openid', 'offline_access'], allowPrivateNetworks: false },
})

if (enterprise && process.env.ENTERPRISE_CLIENT_ID) {
  // The MCP client the enterprise IdP names in its ID-JAGs (their `client_id`), registered by the host.
  await gatehouse.clients.ensure({
    clientId: process.env.ENTERPRISE_CLIENT_ID,
    clientSecret: process.env.ENTERPRISE_CLIENT_SECRET,
    displayName: 'Enterprise-managed MCP client',
    permissions: ['ept:token', 'gt:urn:ietf:params:oauth:grant-type:jwt-bearer', `scp:${MCP_SCOPE}`],
  })
}

/** Verifies Gatehouse's access tokens for /mcp and serves the RFC 9728 metadata. */
const mcpAuth = createResourceServer({
  issuer,
  resource,
  requiredScopes: [MCP_SCOPE],
  resourceName: 'Gatehouse MCP example',
  allowInsecureRequests: insecure,
  // Gatehouse runs in this process: discovery and keys are read from it without a network hop.
  fetch: (url, init) => gatehouse.fetch(new Request(url, init)),
})

/** A new MCP server for one request (stateless Streamable HTTP: no sessions to keep). */
function createMcpServer() {
  const server = new McpServer({ name: 'gatehouse-mcp-example', version: '0.0.0' })
  server.registerTool(
    'whoami',
    { title: 'Who am I', description: 'The signed-in user (sub) and the scopes of the access token.' },
    (extra) => {
      const auth = extra.authInfo
      const caller = { sub: auth?.extra?.sub, client_id: auth?.clientId, scopes: auth?.scopes ?? [] }
      return { content: [{ type: 'text', text: JSON.stringify(caller) }] }
    },
  )
  return server
}

/** 405 for GET and DELETE on the stateless MCP endpoint (a JSON-RPC error body, as the SDK writes one). */
function methodNotAllowed() {
  const body = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }
  return Response.json(body, { status: 405, headers: { allow: 'POST' } })
}

/** /mcp: the token checked, then the SDK transport with the caller as `authInfo`. */
async function handleMcp(request) {
  const auth = await mcpAuth.verify(request)
  // 401 with `WWW-Authenticate: Bearer resource_metadata="…"`: how the client finds Gatehouse.
  if (!auth.ok) return auth.response
  // Stateless: no standalone SSE stream (GET) and no session to end (DELETE), as the spec allows.
  if (request.method !== 'POST') return methodNotAllowed()
  const server = createMcpServer()
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
  await server.connect(transport)
  try {
    return await transport.handleRequest(request, {
      authInfo: {
        token: auth.token,
        clientId: auth.claims.client_id,
        scopes: auth.scopes,
        expiresAt: auth.claims.exp,
        resource: new URL(resource),
        extra: { sub: auth.claims.sub },
      },
    })
  } finally {
    await server.close()
  }
}

/**
 * CORS for MCP clients that run in a browser (MCP Inspector connecting directly): /mcp takes
 * bearer tokens only, never cookies, so any origin may call it.
 */
function withCors(response) {
  const headers = new Headers(response.headers)
  headers.set('access-control-allow-origin', '*')
  headers.set('access-control-expose-headers', 'www-authenticate, mcp-session-id, mcp-protocol-version')
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
}

function mcpPreflight() {
  return withCors(
    new Response(null, {
      status: 204,
      headers: {
        'access-control-allow-methods': 'GET, POST, DELETE',
        'access-control-allow-headers':
          'authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id',
        'access-control-max-age': '86400',
      },
    }),
  )
}

async function handle(request, info) {
  const { pathname } = new URL(request.url)
  if (pathname === '/mcp') return request.method === 'OPTIONS' ? mcpPreflight() : withCors(await handleMcp(request))
  if (pathname === mcpAuth.metadataPath) return mcpAuth.metadataHandler(request)
  return gatehouse.fetch(request, info)
}

const server = await serveNode(handle, { port, hostname })
console.log(`Gatehouse + MCP server on ${issuer}`)
console.log(`  MCP endpoint:      ${resource}`)
console.log(`  resource metadata: ${issuer}${mcpAuth.metadataPath}`)
console.log(`  sign in as alice / ${process.env.DEMO_USER_PASSWORD ? '(DEMO_USER_PASSWORD)' : 'alice-password'}`)

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    server.close(() => process.exit(0))
    server.closeAllConnections?.()
  })
}
