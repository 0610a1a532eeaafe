/**
 * #42 item 3: the end-user's grants page in a real browser (Debian's Chromium driven by
 * playwright-core). alice signs in through the real authorization flow with a client the host
 * registered and approves a client that registered itself (RFC 7591) for an MCP server; each
 * code is redeemed, so each is a grant. She opens the page, sees both (the self-registered one
 * marked), clicks Revoke on the agent, confirms, and sees it gone while the other stays; the
 * agent's refresh token is refused after. The form POSTs carry what Chromium sends (`Origin:
 * null` under the pages' no-referrer policy, `Sec-Fetch-Site: same-origin`).
 *
 * Gatehouse runs at http://127.0.0.1:<port> (adapters/node.ts), the clients' callback at
 * http://localhost:<port>. Screenshots go to test-artifacts/; with UPDATE_SCREENSHOTS=1 the list
 * page is also written to docs/images/grants-page.png. Without /usr/bin/chromium the test is
 * skipped, unless CI=true: then it fails.
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import * as oauth from 'oauth4webapi'
import { type Browser, type Page, chromium } from 'playwright-core'
import { afterAll, describe, expect, it } from 'vitest'
import { serveNode } from '../../adapters/node.ts'
import { createTokenService } from '../../src/index.ts'

const CHROMIUM = '/usr/bin/chromium'
const MISSING = `${CHROMIUM} not found: the browser test needs Debian's chromium (apt-get install -y chromium)`
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const ARTIFACTS = `${ROOT}test-artifacts`
const SCREENSHOT = `${ROOT}docs/images/grants-page.png`
const MCP = 'https://mcp.example.com/mcp'

function port(server: Server): number {
  return (server.address() as AddressInfo).port
}

function close(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!server) return resolve()
    server.closeAllConnections()
    server.close(() => resolve())
  })
}

/** The clients' redirect URI: a plain page (the test redeems the code from the URL). */
function startCallback(): Promise<Server> {
  const server = createServer((_request, response) => {
    response
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>Back in the app</title><p>Signed in.')
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

describe('#42 item 3 browser: the grants page', () => {
  let gatehouse: Server | undefined
  let callback: Server | undefined
  let browser: Browser | undefined

  afterAll(async () => {
    await browser?.close()
    await close(callback)
    await close(gatehouse)
  })

  it('#42 item 3: signs in, lists the grants, revokes one after confirming, and it is gone', {
    timeout: 120_000,
  }, async (ctx) => {
    if (!existsSync(CHROMIUM)) {
      if (process.env.CI === 'true') throw new Error(`${MISSING}; CI=true, so this is a failure`)
      console.warn(`SKIP browser test: ${MISSING}`)
      ctx.skip(MISSING)
    }
    mkdirSync(ARTIFACTS, { recursive: true })

    let service: ReturnType<typeof createTokenService> | undefined
    gatehouse = await serveNode((request) => (service as NonNullable<typeof service>).fetch(request), {
      port: 0,
      hostname: '127.0.0.1',
    })
    const issuer = `http://127.0.0.1:${port(gatehouse)}`
    callback = await startCallback()
    const redirectUri = `http://localhost:${port(callback)}/callback`
    service = createTokenService({
      issuer,
      secretHashIterations: 1000,
      logger: { warn() {}, error: (message, detail) => console.error(message, detail) },
      users: [
        {
          sub: 'user-42',
          username: 'alice',
          password: 'alice-password',
          email: 'alice@example.com',
          name: 'Alice Example',
        },
      ],
      scopes: [{ name: 'mcp:tools', audience: MCP }],
      dynamicClientRegistration: { scopes: ['mcp:tools'] },
      theme: { productName: 'Example Corp', primaryColor: '#0b6e4f' },
      grantsPage: true,
    })
    await service.clients.ensure({
      clientId: 'photo-print',
      clientSecret: 'photo-print-secret',
      displayName: 'Photo Print Studio',
      permissions: [
        'ept:authorization',
        'ept:token',
        'gt:authorization_code',
        'gt:refresh_token',
        'rst:code',
        'scp:openid',
        'scp:profile',
        'scp:email',
        'scp:offline_access',
      ],
      redirectUris: [redirectUri],
    })
    await service.ready()
    const as = await oauth.processDiscoveryResponse(
      new URL(issuer),
      await oauth.discoveryRequest(new URL(issuer), { [oauth.allowInsecureRequests]: true }),
    )
    const insecure = { [oauth.allowInsecureRequests]: true }

    // The agent registers itself (RFC 7591) for the MCP server's tools.
    const registered = await fetch(`${issuer}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Research Agent',
        client_uri: 'https://agent.example.org',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        scope: 'mcp:tools',
      }),
    })
    expect(registered.status).toBe(201)
    const agent = (await registered.json()) as { client_id: string; client_secret: string }

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-sync',
      ],
    })
    const page: Page = await (await browser.newContext({ viewport: { width: 1024, height: 900 } })).newPage()

    /** Authorizes `clientId` in the browser (signing in or approving as `act` says), then redeems the code. */
    async function authorize(
      client: oauth.Client,
      secret: string,
      scope: string,
      act: () => Promise<void>,
      extra: Record<string, string> = {},
    ) {
      const verifier = oauth.generateRandomCodeVerifier()
      const url = new URL(as.authorization_endpoint as string)
      for (const [name, value] of Object.entries({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: redirectUri,
        scope,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        ...extra,
      }))
        url.searchParams.set(name, value)
      await page.goto(url.href)
      await act()
      await page.waitForURL(`${redirectUri}?**`)
      const params = oauth.validateAuthResponse(as, client, new URL(page.url()), oauth.expectNoState)
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(secret),
        params,
        redirectUri,
        verifier,
        insecure,
      )
      return oauth.processAuthorizationCodeResponse(as, client, response, {
        requireIdToken: false,
        expectedNonce: oauth.expectNoNonce,
      })
    }

    // 1. Sign in to the photo app through the built-in page.
    await authorize(
      { client_id: 'photo-print' },
      'photo-print-secret',
      'openid profile email offline_access',
      async () => {
        await page.getByLabel('Username').fill('alice')
        await page.getByLabel('Password').fill('alice-password')
        await page.getByRole('button', { name: 'Sign in' }).click()
      },
    )
    // 2. The agent: the session signs alice in, the consent page (self-registered) asks her.
    const agentTokens = await authorize(
      { client_id: agent.client_id },
      agent.client_secret,
      'mcp:tools',
      async () => {
        await page.getByRole('button', { name: 'Allow' }).click()
      },
      { resource: MCP },
    )
    expect(agentTokens.refresh_token).toBeTypeOf('string')

    // 3. The page lists both, newest first; the agent is marked as registered by itself.
    await page.goto(`${issuer}/account/apps`)
    await expect.poll(() => page.title()).toBe('Apps and agents with access to your account · Example Corp')
    const entries = page.locator('li.grant')
    await expect.poll(() => entries.count()).toBe(2)
    const agentEntry = entries.filter({ has: page.getByRole('heading', { name: 'Research Agent' }) })
    const photoEntry = entries.filter({ has: page.getByRole('heading', { name: 'Photo Print Studio' }) })
    expect(await agentEntry.locator('.badge').textContent()).toBe('Registered itself')
    expect(await agentEntry.locator('.grant-host').textContent()).toBe('agent.example.org')
    expect(await agentEntry.textContent()).toContain(`Use this access at ${MCP}`)
    expect(await photoEntry.locator('.badge').count()).toBe(0)
    expect(await photoEntry.textContent()).toContain('See your email address')
    expect(await photoEntry.textContent()).toContain('Stay signed in to the application when you are not using it')
    await page.screenshot({ path: `${ARTIFACTS}/grants-page.png`, fullPage: true })
    if (process.env.UPDATE_SCREENSHOTS === '1') {
      mkdirSync(`${ROOT}docs/images`, { recursive: true })
      copyFileSync(`${ARTIFACTS}/grants-page.png`, SCREENSHOT)
    }

    // 4. Revoke the agent: a confirmation naming it first, then back to the list without it.
    await agentEntry.getByRole('button', { name: 'Revoke' }).click()
    await expect.poll(() => page.title()).toBe('Revoke access? · Example Corp')
    expect(await page.locator('#revoke-question').textContent()).toContain('Revoke access for Research Agent?')
    await page.screenshot({ path: `${ARTIFACTS}/grants-page-confirm.png`, fullPage: true })
    await page.getByRole('button', { name: 'Revoke access' }).click()
    await page.waitForURL(`${issuer}/account/apps?revoked=1`)
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Access revoked.')
    await expect.poll(() => entries.count()).toBe(1)
    expect(await page.getByRole('heading', { name: 'Research Agent' }).count()).toBe(0)
    expect(await page.getByRole('heading', { name: 'Photo Print Studio' }).count()).toBe(1)
    await page.screenshot({ path: `${ARTIFACTS}/grants-page-revoked.png`, fullPage: true })

    // The agent's refresh token is refused from now on.
    const refreshed = await oauth.refreshTokenGrantRequest(
      as,
      { client_id: agent.client_id },
      oauth.ClientSecretBasic(agent.client_secret),
      agentTokens.refresh_token as string,
      insecure,
    )
    expect(refreshed.status).toBe(400)
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' })
  })
})
