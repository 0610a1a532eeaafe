/**
 * MCP over HTTP for the tests (#19): an MCP server built with the SDK behind the resource-server
 * helper, next to Gatehouse on one handler; and an SDK client whose `OAuthClientProvider` keeps
 * everything in memory and, when the SDK sends the user to authorize, signs the demo user in over
 * HTTP through the built-in sign-in and consent pages and keeps the code for `finishAuth`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { ResourceServer } from '../../src/resource_server/index.ts'
import { Browser } from './browser.ts'

/** A fetch handler, as `service.fetch` and `serveNode` take it. */
export type Handler = (request: Request, info?: { address?: string }) => Promise<Response>

/** What the `whoami` tool answers: who called, with which client and scopes. */
export interface Caller {
  sub: string
  client_id: string
  scopes: string[]
}

/** A new MCP server for one request (stateless Streamable HTTP) with the one tool, `whoami`. */
function createMcpServer(): McpServer {
  const server = new McpServer({ name: 'gatehouse-test-mcp', version: '0.0.0' })
  server.registerTool('whoami', { description: 'The caller: sub, client and scopes of the access token' }, (extra) => {
    const auth = extra.authInfo
    const caller = { sub: auth?.extra?.sub, client_id: auth?.clientId, scopes: auth?.scopes ?? [] }
    return { content: [{ type: 'text', text: JSON.stringify(caller) }] }
  })
  return server
}

/** 405 for GET and DELETE on the stateless MCP endpoint (a JSON-RPC error body, as the SDK writes one). */
function methodNotAllowed(): Response {
  const body = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }
  return Response.json(body, { status: 405, headers: { allow: 'POST' } })
}

/**
 * The MCP endpoint: a bearer token verified by `resourceServer` (401 with `resource_metadata`
 * otherwise), then the SDK's Web-standard transport with the token as `authInfo`.
 */
export function mcpHandler(resourceServer: ResourceServer): (request: Request) => Promise<Response> {
  return async (request) => {
    const auth = await resourceServer.verify(request)
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
          extra: { sub: auth.claims.sub },
        },
      })
    } finally {
      await server.close()
    }
  }
}

/** One host: `/mcp`, the RFC 9728 metadata, and everything else to Gatehouse. */
export function mcpHost(options: { gatehouse: Handler; resourceServer: ResourceServer }): Handler {
  const mcp = mcpHandler(options.resourceServer)
  return (request, info) => {
    const { pathname } = new URL(request.url)
    if (pathname === '/mcp') return mcp(request)
    if (pathname === options.resourceServer.metadataPath) {
      return Promise.resolve(options.resourceServer.metadataHandler(request))
    }
    return options.gatehouse(request, info)
  }
}

/** One request the SDK client sent, with its form or JSON body as text. */
export interface SentRequest {
  method: string
  url: URL
  body: string | undefined
}

/** The browser's trip through the authorization endpoint. */
export interface SignInTrip {
  /** The authorization URL the SDK built. */
  authorizationUrl: URL
  /** The pages shown on the way, in order. */
  pages: ('login' | 'consent')[]
  /** Where the browser was sent back to. */
  callback: URL
}

/**
 * Follows an authorization URL as a person with a browser does: the built-in sign-in page (the
 * given user), the consent page (Allow), then the redirect to `redirectUri`. At most 4 pages.
 */
export async function signInOverHttp(
  authorizationUrl: URL,
  redirectUri: string,
  credentials: { username: string; password: string },
): Promise<SignInTrip> {
  const browser = new Browser((request) => fetch(request), [redirectUri])
  const pages: SignInTrip['pages'] = []
  let step = await browser.navigate(authorizationUrl.href)
  for (let shown = 0; step.page && shown < 4; shown++) {
    const page = step.page
    if (page.status !== 200) throw new Error(`authorization page ${page.url} answered ${page.status}:\n${page.html}`)
    if (/name="password"/.test(page.html)) {
      pages.push('login')
      step = await browser.signIn(page, credentials.username, credentials.password)
    } else if (/name="decision" value="allow"/.test(page.html)) {
      pages.push('consent')
      step = await browser.submit(page, { decision: 'allow' })
    } else {
      throw new Error(`unexpected page at ${page.url}:\n${page.html}`)
    }
  }
  if (!step.callback) throw new Error(`no redirect to ${redirectUri} after ${pages.join(', ')}`)
  return { authorizationUrl, pages, callback: step.callback }
}

/**
 * An `OAuthClientProvider` held in memory. `redirectToAuthorization` runs the sign-in at once (the
 * SDK awaits it) and keeps the code; the test then calls `transport.finishAuth(provider.code)`.
 */
export class SignInProvider implements OAuthClientProvider {
  readonly redirectUrl: string
  readonly clientMetadataUrl: string | undefined
  readonly credentials: { username: string; password: string }
  private information: OAuthClientInformationMixed | undefined
  private saved: OAuthTokens | undefined
  private verifier: string | undefined
  private expectedState: string | undefined
  /** Every sign-in the SDK started. */
  readonly trips: SignInTrip[] = []
  /** The code of the last sign-in. */
  code: string | undefined

  constructor(options: {
    redirectUrl: string
    clientMetadataUrl?: string
    credentials?: { username: string; password: string }
  }) {
    this.redirectUrl = options.redirectUrl
    this.clientMetadataUrl = options.clientMetadataUrl
    this.credentials = options.credentials ?? { username: 'alice', password: 'alice-password' }
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Gatehouse MCP test client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }

  state(): string {
    this.expectedState = crypto.randomUUID()
    return this.expectedState
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.information
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.information = information
  }

  tokens(): OAuthTokens | undefined {
    return this.saved
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error('no code verifier saved')
    return this.verifier
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const trip = await signInOverHttp(authorizationUrl, this.redirectUrl, this.credentials)
    this.trips.push(trip)
    const params = trip.callback.searchParams
    if (params.get('error') !== null) {
      throw new Error(`authorization failed: ${params.get('error')}: ${params.get('error_description')}`)
    }
    if (params.get('state') !== this.expectedState) throw new Error('the callback carries another state')
    this.code = params.get('code') ?? undefined
  }
}

/** A fetch that records what the SDK client sends (discovery, registration, token requests, MCP). */
export function recordingFetch(): { fetch: typeof fetch; sent: SentRequest[] } {
  const sent: SentRequest[] = []
  const recorder = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const body = request.body === null ? undefined : await request.clone().text()
    sent.push({ method: request.method, url: new URL(request.url), body })
    return fetch(request)
  }
  return { fetch: recorder as typeof fetch, sent }
}

export interface McpSession {
  client: Client
  transport: StreamableHTTPClientTransport
}

/**
 * An MCP client's whole first connection: connect (401), discovery, registration or a metadata
 * document URL, sign-in, `finishAuth(code)`, then a fresh connection with the token.
 */
export async function connectWithSignIn(
  mcpUrl: string,
  provider: SignInProvider,
  fetchImpl: typeof fetch = fetch,
): Promise<McpSession> {
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: fetchImpl })
  const unauthenticated = new Client({ name: 'gatehouse-test-agent', version: '0.0.0' })
  const refused = await unauthenticated.connect(first).then(
    () => undefined,
    (err: unknown) => err,
  )
  if (!(refused instanceof UnauthorizedError)) {
    throw new Error(`expected the SDK to stop for authorization, got: ${String(refused)}`, { cause: refused })
  }
  if (provider.code === undefined) throw new Error('the sign-in produced no code')
  await first.finishAuth(provider.code)
  await first.close()

  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: fetchImpl })
  const client = new Client({ name: 'gatehouse-test-agent', version: '0.0.0' })
  await client.connect(transport)
  return { client, transport }
}

/** Calls `whoami` and parses its one text content. */
export async function whoami(client: Client): Promise<Caller> {
  const result = await client.callTool({ name: 'whoami', arguments: {} })
  const content = result.content as { type: string; text?: string }[]
  const first = content[0]
  if (result.isError || first?.type !== 'text' || first.text === undefined) {
    throw new Error(`whoami failed: ${JSON.stringify(result)}`)
  }
  return JSON.parse(first.text) as Caller
}
