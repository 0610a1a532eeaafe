/**
 * The MCP server example (examples/mcp-server, #19): `node server.mjs` (what `npm start` runs) on
 * a free loopback port, then one MCP SDK client end to end against it: 401 → protected resource
 * metadata → dynamic client registration → alice signs in and consents on the built-in pages →
 * `finishAuth` → the `whoami` tool answers with her `sub` and the token's scopes. Then the example's
 * own agent (agent.mjs, #27 item 13), with the test as the browser that signs in and follows the
 * redirect to the agent's loopback port. And #45's end to end on the example: an enterprise IdP
 * (a second Gatehouse, in this process, over HTTP) where alice signs in once; the SDK client trades
 * her ID token there for an ID-JAG and presents it to the example (ENTERPRISE_* variables), which
 * answers whoami with no sign-in, consent or registration of its own.
 *
 * Runs when examples/mcp-server/node_modules exists or GATEHOUSE_TEST_MCP_EXAMPLE=1 (CI installs
 * the example and sets it); skipped otherwise, since the example has its own dependencies.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, lstatSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Server } from 'node:http'
import { serveNode } from '../../adapters/node.ts'
import { createTokenService } from '../../src/index.ts'
import { SignInProvider, connectWithSignIn, recordingFetch, signInOverHttp, whoami } from '../helpers/mcp.ts'
import {
  IdJagProvider,
  JWT_BEARER,
  TOKEN_EXCHANGE,
  exchangeForIdJag,
  signInAtIdp,
  whoamiAsAgent,
} from '../helpers/mcp_enterprise.ts'
import { USERS } from '../helpers/service.ts'
import { type Running, freePort, launch, waitUntilServing } from '../runtime/server.ts'

const APP = fileURLToPath(new URL('../../examples/mcp-server/', import.meta.url))
const forced = process.env.GATEHOUSE_TEST_MCP_EXAMPLE === '1'
const installed = existsSync(`${APP}node_modules`)
const enabled = forced || installed
const SKIPPED =
  'skipped: examples/mcp-server is not installed (run `npm run pack:example` in the root and `npm ci` there, or set GATEHOUSE_TEST_MCP_EXAMPLE=1)'
const title = enabled ? 'MCP server example (node server.mjs)' : `MCP server example (${SKIPPED})`
if (!enabled) console.info(`test/examples/mcp_server.test.ts ${SKIPPED}`)

/** The MCP client's redirect URI: never fetched, the sign-in stops there. */
const REDIRECT_URI = 'http://127.0.0.1:9/mcp-example-callback'
/** #45: the MCP client at the enterprise IdP, and as the example knows it (ENTERPRISE_CLIENT_*). */
const AT_IDP = { clientId: 'sso-agent', clientSecret: 'sso-agent-secret', redirectUri: 'http://127.0.0.1:9/sso' }
const AT_EXAMPLE = { client_id: 'enterprise-agent', client_secret: 'enterprise-agent-secret' }

describe.skipIf(!enabled)(title, () => {
  let running: Running | undefined
  let base = ''
  let idpServer: Server | undefined
  let idp = ''

  beforeAll(async () => {
    if (!installed) {
      throw new Error(
        'GATEHOUSE_TEST_MCP_EXAMPLE=1 but examples/mcp-server/node_modules is missing: run `npm run pack:example` in the root, then `npm ci` in examples/mcp-server',
      )
    }
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    // #45: the enterprise IdP, issuing ID-JAGs for the example (its issuer) and its MCP endpoint.
    const idpPort = await freePort()
    idp = `http://127.0.0.1:${idpPort}`
    const idpService = createTokenService({
      issuer: idp,
      secretHashIterations: 1000,
      users: USERS,
      logger: { warn() {}, error() {} },
      identityAssertion: {
        audiences: [
          {
            issuer: base,
            client: AT_IDP.clientId,
            clientId: AT_EXAMPLE.client_id,
            scopes: ['mcp:tools'],
            resources: [`${base}/mcp`],
          },
        ],
      },
    })
    await idpService.clients.ensure({
      clientId: AT_IDP.clientId,
      clientSecret: AT_IDP.clientSecret,
      redirectUris: [AT_IDP.redirectUri],
      permissions: [
        'ept:authorization',
        'ept:token',
        'gt:authorization_code',
        `gt:${TOKEN_EXCHANGE}`,
        'rst:code',
      ].concat(['openid', 'email'].map((scope) => `scp:${scope}`)),
    })
    idpServer = await serveNode(idpService.fetch, { port: idpPort, hostname: '127.0.0.1' })
    running = launch([process.execPath, `${APP}server.mjs`], {
      PORT: String(port),
      HOST: '127.0.0.1',
      ISSUER: base,
      ENTERPRISE_IDP_ISSUER: idp,
      ENTERPRISE_IDP_JWKS_URI: `${idp}/.well-known/jwks.json`,
      ENTERPRISE_CLIENT_ID: AT_EXAMPLE.client_id,
      ENTERPRISE_CLIENT_SECRET: AT_EXAMPLE.client_secret,
    })
    await waitUntilServing(running, `${base}/.well-known/oauth-protected-resource/mcp`, 30_000)
  }, 45_000)

  afterAll(async () => {
    await running?.stop()
    idpServer?.closeAllConnections()
    await new Promise((resolve) => (idpServer ? idpServer.close(resolve) : resolve(undefined)))
  }, 15_000)

  it('#19 runs Gatehouse from the packed tarball (built JavaScript), the one `npm run pack:example` wrote', () => {
    const installedPackage = `${APP}node_modules/gatehouse-oidc/`
    expect(lstatSync(installedPackage.slice(0, -1)).isSymbolicLink()).toBe(false)
    const packed = execFileSync('tar', ['-xzOf', `${APP}gatehouse.tgz`, 'package/dist/src/index.js'], {
      encoding: 'utf8',
    })
    expect(readFileSync(`${installedPackage}dist/src/index.js`, 'utf8')).toBe(packed)
    const manifest = JSON.parse(readFileSync(`${APP}package.json`, 'utf8')) as { scripts: Record<string, string> }
    expect(manifest.scripts.start).toBe('node server.mjs')
  })

  it('#19 an MCP SDK client registers, signs alice in, and calls whoami', async () => {
    const resource = `${base}/mcp`
    const provider = new SignInProvider({ redirectUrl: REDIRECT_URI })
    const recorder = recordingFetch()
    const { client, transport } = await connectWithSignIn(resource, provider, recorder.fetch)
    try {
      const tools = await client.listTools()
      expect(tools.tools.map((tool) => tool.name)).toEqual(['whoami'])
      const caller = await whoami(client)
      expect(caller).toMatchObject({ sub: 'demo-user-1', client_id: provider.clientInformation()?.client_id })
      expect(caller.scopes).toContain('mcp:tools')

      expect(recorder.sent.filter((r) => r.url.href === `${base}/connect/register`)).toHaveLength(1)
      expect(provider.trips[0]?.pages).toEqual(['login', 'consent'])
      expect(provider.trips[0]?.authorizationUrl.searchParams.get('resource')).toBe(resource)
      expect(decodeJwt(provider.tokens()?.access_token as string)).toMatchObject({
        iss: base,
        aud: resource,
        sub: 'demo-user-1',
      })
    } finally {
      await transport.close()
    }
  })

  it('#27 item 13 agent.mjs completes the sign-in for real: loopback redirect, finishAuth, whoami', async () => {
    const agent = launch([process.execPath, `${APP}agent.mjs`], { MCP_URL: `${base}/mcp`, NO_BROWSER: '1' })
    try {
      // The agent prints the authorization URL where it would open the browser; the test is the browser.
      const deadline = Date.now() + 20_000
      let printed: RegExpExecArray | null = null
      while (!printed && Date.now() < deadline) {
        printed = /^Sign in at: (\S+)$/m.exec(agent.output().stdout)
        if (!printed) await new Promise((r) => setTimeout(r, 50))
      }
      if (!printed) throw new Error(`agent.mjs printed no sign-in URL:\n${JSON.stringify(agent.output())}`)
      const authorizationUrl = new URL(printed[1] as string)
      const redirectUri = authorizationUrl.searchParams.get('redirect_uri') as string
      expect(redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/)
      const trip = await signInOverHttp(authorizationUrl, redirectUri, {
        username: 'alice',
        password: 'alice-password',
      })
      expect(trip.pages).toEqual(['login', 'consent'])
      // The browser follows the redirect to the agent's loopback listener.
      const landed = await fetch(trip.callback)
      expect(landed.status).toBe(200)
      expect(await landed.text()).toContain('Signed in')
      const exit = await agent.exited
      expect(exit, JSON.stringify(agent.output())).toEqual({ code: 0, signal: null })
      const answer = /^whoami: (.+)$/m.exec(agent.output().stdout)?.[1] as string
      expect(JSON.parse(answer)).toMatchObject({ sub: 'demo-user-1', scopes: expect.arrayContaining(['mcp:tools']) })
    } finally {
      await agent.stop()
    }
  }, 60_000)

  it('#45 enterprise-managed: alice signs in once at the IdP; the SDK presents an ID-JAG to the example and calls whoami, no page here', async () => {
    const resource = `${base}/mcp`
    const { idToken, pages, as } = await signInAtIdp(idp, AT_IDP)
    expect(pages).toEqual(['login'])
    const provider = new IdJagProvider(
      { ...AT_EXAMPLE, issuer: base },
      async () => (await exchangeForIdJag(as, AT_IDP, idToken, base, resource)).access_token,
    )
    const { caller, sent } = await whoamiAsAgent(resource, provider)
    // The example's demo user, found by the email the IdP's ID-JAG carries.
    expect(caller).toEqual({ sub: 'demo-user-1', client_id: AT_EXAMPLE.client_id, scopes: ['mcp:tools'] })
    const here = sent.filter((sent) => sent.url.origin === base).map((sent) => sent.url.pathname)
    expect(here.filter((path) => /^\/connect\/(authorize|interaction|register)/.test(path))).toEqual([])
    const tokenRequests = sent.filter((sent) => sent.url.href === `${base}/connect/token`)
    expect(tokenRequests).toHaveLength(1)
    expect(new URLSearchParams(tokenRequests[0]?.body).get('grant_type')).toBe(JWT_BEARER)
    expect(provider.assertions).toHaveLength(1)
  })
})
