/**
 * #45 End to end: MCP enterprise-managed authorization (ID-JAG) across two Gatehouse instances,
 * each a real Node HTTP server on its own loopback port:
 * - the enterprise IdP (`identityAssertion.audiences` names the MCP AS's issuer), where the
 *   user signs in once (authorization code + PKCE, through the built-in sign-in page);
 * - the MCP server's authorization server (`identityAssertion.issuers` trusts the IdP by its
 *   `jwksUri`, which this instance fetches from the IdP's JWKS endpoint over HTTP), next to an MCP
 *   server (SDK, `whoami` tool) behind the resource-server helper (test/helpers/mcp.ts, as the
 *   MCP example and test/mcp/sdk_end_to_end.test.ts do).
 * The client: ID token from the sign-in → token exchange at the IdP (requested_token_type id-jag,
 * audience = the MCP AS, resource = the MCP server) → jwt-bearer grant at the MCP AS → the tool.
 *
 * Which client path, and why: @modelcontextprotocol/sdk 1.32.2 (installed) has no
 * enterprise-managed authorization helper (its dist has no `id-jag`, `CrossAppAccess` or
 * `IdentityAssertion`; `jwt-bearer` only in comments and client assertions). It has the generic
 * non-interactive hook, `OAuthClientProvider.prepareTokenRequest` with no `redirectUrl`: so the
 * SDK's own `auth()` runs the MCP side (401 → RFC 9728 metadata → AS metadata → the token request
 * with `resource`, here the jwt-bearer grant), and the two IdP requests the SDK has no helper for
 * (the code flow, the token exchange) are made with oauth4webapi (token_type `N_A` recognized
 * explicitly). The tool call is the SDK's Client over StreamableHTTPClientTransport.
 */
import type { Server } from 'node:http'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveNode } from '../../adapters/node.ts'
import { createTokenService } from '../../src/index.ts'
import { createResourceServer } from '../../src/resource_server/index.ts'
import { type Handler, type SentRequest, mcpHost } from '../helpers/mcp.ts'
import {
  HTTP,
  ID_JAG,
  IdJagProvider,
  JWT_BEARER,
  TOKEN_EXCHANGE,
  exchangeForIdJag,
  signInAtIdp,
  whoamiAsAgent,
} from '../helpers/mcp_enterprise.ts'
import { USERS } from '../helpers/service.ts'
import { freePort } from '../runtime/server.ts'

/** The MCP client's redirect URI at the IdP: never fetched, the sign-in stops there (port 9: discard). */
const REDIRECT_URI = 'http://127.0.0.1:9/sso-callback'
/** The MCP client, as registered at the IdP (it signs users in and asks for ID-JAGs). */
const AT_IDP = { clientId: 'mcp-agent', clientSecret: 'mcp-agent-idp-secret' }
/** The same MCP client, as registered at the MCP server's authorization server. */
const AT_MCP = { clientId: 'mcp-agent-at-mcp', clientSecret: 'mcp-agent-mcp-secret' }
const quiet = { warn() {}, error() {} }

/** A loopback HTTP server of `handler` on `port`. */
async function listen(port: number, handler: Handler): Promise<Server> {
  return serveNode(handler, { port, hostname: '127.0.0.1' })
}

describe('#45 end to end: enterprise-managed MCP authorization (two Gatehouse instances over HTTP, MCP SDK)', () => {
  let idpServer: Server | undefined
  let mcpServer: Server | undefined
  let idp = ''
  let mcpAs = ''
  let resource = ''
  /** Every request the MCP AS's host received: method, path, and the response's content type. */
  const mcpHostLog: { method: string; path: string; contentType: string }[] = []
  /** Requests the IdP's JWKS endpoint received (the MCP AS fetching the keys). */
  let jwksFetches = 0

  beforeAll(async () => {
    const [idpPort, mcpPort] = [await freePort(), await freePort()]
    idp = `http://127.0.0.1:${idpPort}`
    mcpAs = `http://127.0.0.1:${mcpPort}`
    resource = `${mcpAs}/mcp`

    // The enterprise IdP: issues ID-JAGs for the MCP AS, for its MCP server, scope mcp:tools.
    const idpService = createTokenService({
      issuer: idp,
      secretHashIterations: 1000,
      users: USERS,
      logger: quiet,
      identityAssertion: {
        audiences: [
          {
            issuer: mcpAs,
            client: AT_IDP.clientId,
            clientId: AT_MCP.clientId,
            scopes: ['mcp:tools'],
            resources: [resource],
          },
        ],
      },
    })
    await idpService.clients.ensure({
      ...AT_IDP,
      redirectUris: [REDIRECT_URI],
      permissions: [
        'ept:authorization',
        'ept:token',
        'gt:authorization_code',
        `gt:${TOKEN_EXCHANGE}`,
        'rst:code',
        'scp:openid',
        'scp:email',
      ],
    })
    idpServer = await listen(idpPort, (request, info) => {
      if (new URL(request.url).pathname === '/.well-known/jwks.json') jwksFetches++
      return idpService.fetch(request, info)
    })

    // The MCP server's AS: trusts the IdP by its jwksUri; alice is an account here by her email.
    const mcpService = createTokenService({
      issuer: mcpAs,
      secretHashIterations: 1000,
      users: [{ sub: 'mcp-alice', username: 'alice', password: 'unused-here', email: 'alice@example.com' }],
      logger: quiet,
      scopes: [{ name: 'mcp:tools', audience: resource }],
      identityAssertion: { issuers: [{ issuer: idp, jwksUri: `${idp}/.well-known/jwks.json` }] },
    })
    await mcpService.clients.ensure({
      ...AT_MCP,
      permissions: ['ept:token', `gt:${JWT_BEARER}`, 'scp:mcp:tools'],
    })
    const resourceServer = createResourceServer({
      issuer: mcpAs,
      resource,
      requiredScopes: ['mcp:tools'],
      allowInsecureRequests: true, // http: on loopback, for the test
      fetch: (url, init) => mcpService.fetch(new Request(url, init)),
    })
    const host = mcpHost({ gatehouse: mcpService.fetch, resourceServer })
    mcpServer = await listen(mcpPort, async (request, info) => {
      const response = await host(request, info)
      const { pathname } = new URL(request.url)
      mcpHostLog.push({
        method: request.method,
        path: pathname,
        contentType: response.headers.get('content-type') ?? '',
      })
      return response
    })
  })

  afterAll(async () => {
    for (const server of [idpServer, mcpServer]) server?.closeAllConnections()
    await Promise.all(
      [idpServer, mcpServer].map((server) => new Promise((resolve) => (server ? server.close(resolve) : resolve(0)))),
    )
  })

  it('#45 signs in once at the IdP, trades the ID token for an ID-JAG, and reaches the MCP tool with no page at the MCP AS', async () => {
    const atIdp = { ...AT_IDP, redirectUri: REDIRECT_URI }
    const { idToken, pages, as } = await signInAtIdp(idp, atIdp)
    expect(pages).toEqual(['login']) // one sign-in; a host-registered client needs no consent page

    // The token exchange at the IdP, each time the SDK's auth() needs a token (an ID-JAG is one-time).
    const exchanges: oauth.TokenEndpointResponse[] = []
    const obtainIdJag = async (): Promise<string> => {
      const body = await exchangeForIdJag(as, atIdp, idToken, mcpAs, resource)
      exchanges.push(body)
      return body.access_token
    }

    const provider = new IdJagProvider(
      { client_id: AT_MCP.clientId, client_secret: AT_MCP.clientSecret, issuer: mcpAs },
      obtainIdJag,
    )
    const { caller, sent } = await whoamiAsAgent(resource, provider)
    // alice's account at the MCP AS (mapped by email), the MCP AS's client id, the IdP's scope.
    expect(caller).toEqual({ sub: 'mcp-alice', client_id: AT_MCP.clientId, scopes: ['mcp:tools'] })

    // The ID-JAG the IdP issued: typed, for the MCP AS and its client id, the resource passed through.
    expect(exchanges).toHaveLength(1)
    expect(exchanges[0]).toMatchObject({ issued_token_type: ID_JAG, token_type: 'n_a', scope: 'mcp:tools' }) // N_A on the wire; oauth4webapi lowercases it
    const [assertion] = provider.assertions
    expect(decodeProtectedHeader(assertion as string).typ).toBe('oauth-id-jag+jwt')
    expect(decodeJwt(assertion as string)).toMatchObject({
      iss: idp,
      sub: 'user-1',
      aud: mcpAs,
      client_id: AT_MCP.clientId,
      scope: 'mcp:tools',
      resource,
      email: 'alice@example.com',
    })
    expect(jwksFetches).toBeGreaterThan(0) // the MCP AS fetched the IdP's keys over HTTP

    // What the SDK sent to the MCP AS: discovery, then one jwt-bearer token request with resource.
    const sentToMcpAs = sent.filter((sent) => sent.url.origin === mcpAs)
    const tokenRequests = sentToMcpAs.filter((sent) => sent.url.pathname === '/connect/token')
    expect(tokenRequests).toHaveLength(1)
    const form = new URLSearchParams((tokenRequests[0] as SentRequest).body)
    expect(form.get('grant_type')).toBe(JWT_BEARER)
    expect(form.get('assertion')).toBe(assertion)
    expect(form.get('resource')).toBe(resource)
    const accessToken = provider.tokens()?.access_token as string
    expect(decodeJwt(accessToken)).toMatchObject({ iss: mcpAs, aud: resource, sub: 'mcp-alice' })
    expect(provider.tokens()?.refresh_token).toBeUndefined()
    expect(provider.tokens()?.id_token).toBeUndefined()

    // No page at the MCP AS at any step: no authorization, sign-in or consent request, no HTML.
    expect(mcpHostLog.length).toBeGreaterThan(0)
    const paths = new Set(mcpHostLog.map((entry) => entry.path))
    expect([...paths].sort()).toEqual(
      [
        '/.well-known/oauth-authorization-server',
        '/.well-known/oauth-protected-resource/mcp',
        '/connect/token',
        '/mcp',
      ].sort(),
    )
    expect(mcpHostLog.filter((entry) => entry.contentType.includes('text/html'))).toEqual([])

    // A replayed ID-JAG is refused: one use per jti.
    const replay = await oauth.genericTokenEndpointRequest(
      { issuer: mcpAs, token_endpoint: `${mcpAs}/connect/token` },
      { client_id: AT_MCP.clientId },
      oauth.ClientSecretBasic(AT_MCP.clientSecret),
      JWT_BEARER,
      { assertion: assertion as string, resource },
      HTTP,
    )
    expect(replay.status).toBe(400)
    expect(await replay.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'the assertion has already been used',
    })
  })
})
