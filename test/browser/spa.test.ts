/**
 * A browser single-page app against Gatehouse on another origin, in Debian's Chromium driven by
 * playwright-core: oidc-client-ts signs in (authorization code + PKCE, public client, response_mode
 * query) through the built-in sign-in page, redeems the code cross-origin at the token endpoint,
 * calls userinfo with a Bearer header (CORS preflight), refreshes with signinSilent (refresh token)
 * and signs out with signoutRedirect (id_token_hint, refresh token revoked on the way).
 *
 * Gatehouse runs at http://127.0.0.1:<port> (adapters/node.ts), the SPA at http://localhost:<port>
 * from a static node:http server: different origins and different sites. Screenshots go to
 * test-artifacts/. Without /usr/bin/chromium the test is skipped, unless CI=true: then it fails.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { type Browser, type Page, chromium } from 'playwright-core'
import { afterAll, describe, expect, it } from 'vitest'
import { serveNode } from '../../adapters/node.ts'
import { createTokenService } from '../../src/index.ts'
import { CLIENTS } from '../helpers/service.ts'

const CHROMIUM = '/usr/bin/chromium'
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const ARTIFACTS = `${ROOT}test-artifacts`
const SPA_DIR = fileURLToPath(new URL('./spa/', import.meta.url))
const CLIENT_ID = 'browser-spa'

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

/** The SPA's static files; every app path (/, /callback, /signed-out) is index.html. */
function startSpaServer(authority: () => string): Promise<Server> {
  const files: Record<string, { type: string; body: () => string | Buffer }> = {
    '/app.js': { type: 'text/javascript', body: () => readFileSync(`${SPA_DIR}app.js`) },
    '/oidc-client-ts.min.js': {
      type: 'text/javascript',
      body: () => readFileSync(`${ROOT}node_modules/oidc-client-ts/dist/browser/oidc-client-ts.min.js`),
    },
    '/config.js': {
      type: 'text/javascript',
      body: () => `window.SPA_CONFIG = ${JSON.stringify({ authority: authority(), clientId: CLIENT_ID })}\n`,
    },
  }
  const index = { type: 'text/html; charset=utf-8', body: () => readFileSync(`${SPA_DIR}index.html`) }
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    const file = files[path] ?? (['/', '/callback', '/signed-out'].includes(path) ? index : undefined)
    if (!file) {
      response.writeHead(404).end()
      return
    }
    response.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' }).end(file.body())
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

const MISSING = `${CHROMIUM} not found: the browser test needs Debian's chromium (apt-get install -y chromium)`

describe('browser: a single-page app with oidc-client-ts on another origin', () => {
  let gatehouse: Server | undefined
  let spa: Server | undefined
  let browser: Browser | undefined

  afterAll(async () => {
    await browser?.close()
    await close(spa)
    await close(gatehouse)
  })

  it('signs in, reads userinfo, refreshes and signs out', { timeout: 120_000 }, async (ctx) => {
    if (!existsSync(CHROMIUM)) {
      if (process.env.CI === 'true') throw new Error(`${MISSING}; CI=true, so this is a failure`)
      const note = `${MISSING}; skipped (set CI=true to make this a failure)`
      console.warn(`SKIP browser test: ${note}`)
      ctx.skip(note)
    }
    mkdirSync(ARTIFACTS, { recursive: true })

    // Gatehouse on Node at port 0: the issuer is known once the server listens.
    let service: ReturnType<typeof createTokenService> | undefined
    /** Cross-origin requests Gatehouse saw: `METHOD path status allow-origin`. */
    const crossOrigin: string[] = []
    gatehouse = await serveNode(
      async (request) => {
        const response = await (service as NonNullable<typeof service>).fetch(request)
        if (request.headers.has('origin')) {
          const { pathname } = new URL(request.url)
          const allowed = response.headers.get('access-control-allow-origin')
          crossOrigin.push(`${request.method} ${pathname} ${response.status} ${allowed}`)
        }
        return response
      },
      { port: 0, hostname: '127.0.0.1' },
    )
    const issuer = `http://127.0.0.1:${port(gatehouse)}`
    spa = await startSpaServer(() => issuer)
    const spaOrigin = `http://localhost:${port(spa)}`
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
          email_verified: true,
          name: 'Alice Example',
        },
      ],
      theme: { productName: 'Example Corp', primaryColor: '#0b6e4f' },
    })
    await service.clients.ensure({
      clientId: CLIENT_ID,
      displayName: 'Browser SPA',
      permissions: (CLIENTS.spa as (typeof CLIENTS)[string]).permissions, // the fixture public SPA client's
      redirectUris: [`${spaOrigin}/callback`],
      postLogoutRedirectUris: [`${spaOrigin}/signed-out`],
    })
    await service.ready()

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page: Page = await context.newPage()
    const log: string[] = []
    page.on('console', (message) => log.push(`console.${message.type()}: ${message.text()}`))
    page.on('pageerror', (err) => log.push(`pageerror: ${err.message}`))
    page.on('requestfailed', (request) => log.push(`requestfailed: ${request.url()} ${request.failure()?.errorText}`))
    const state = async () => ({
      status: await page.locator('#status').textContent(),
      error: await page.locator('#error').textContent(),
      log,
    })
    const expectStatus = async (status: string) => {
      try {
        await expect.poll(async () => (await state()).status, { timeout: 20_000 }).toBe(status)
      } catch (err) {
        throw new Error(`SPA status is not "${status}": ${JSON.stringify(await state(), null, 2)}`, { cause: err })
      }
    }

    // 1. The SPA, not signed in.
    await page.goto(`${spaOrigin}/`)
    await expectStatus('not signed in')

    // 2. Sign in on Gatehouse's page: labels are tied to the inputs, the fields keep their names.
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${issuer}/connect/interaction?**`)
    await expect.poll(() => page.title()).toBe('Sign in · Example Corp')
    expect(await page.locator('html').getAttribute('lang')).toBe('en')
    const username = page.getByLabel('Username')
    const password = page.getByLabel('Password')
    expect(await username.getAttribute('name')).toBe('username')
    expect(await username.getAttribute('autocomplete')).toBe('username')
    expect(await password.getAttribute('name')).toBe('password')
    expect(await password.getAttribute('autocomplete')).toBe('current-password')
    await page.screenshot({ path: `${ARTIFACTS}/sign-in.png`, fullPage: true })

    // A wrong password first: the message is announced (role=alert) and the form is shown again.
    await username.fill('alice')
    await password.fill('wrong-password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('incorrect')
    expect(await page.getByLabel('Password').getAttribute('aria-invalid')).toBe('true')
    await page.setViewportSize({ width: 390, height: 844 })
    await page.screenshot({ path: `${ARTIFACTS}/sign-in-mobile-error.png`, fullPage: true })
    await page.setViewportSize({ width: 1280, height: 800 })

    await page.getByLabel('Password').fill('alice-password')
    await page.getByRole('button', { name: 'Sign in' }).click()

    // 3. Back in the SPA: the code was redeemed cross-origin and userinfo answered.
    await page.waitForURL(`${spaOrigin}/`)
    await expectStatus('signed in')
    expect(await page.locator('#subject').textContent()).toBe('user-42')
    expect(await page.locator('#email').textContent()).toBe('alice@example.com')
    const firstToken = await page.locator('#access-token').textContent()
    expect(firstToken).toMatch(/^….{16}$/)
    // Discovery, the code redemption and userinfo went cross-origin, userinfo after a preflight
    // (the Bearer header); each answered for the SPA's origin.
    expect(crossOrigin).toEqual(
      expect.arrayContaining([
        `GET /.well-known/openid-configuration 200 ${spaOrigin}`,
        `POST /connect/token 200 ${spaOrigin}`,
        `OPTIONS /connect/userinfo 204 ${spaOrigin}`,
        `GET /connect/userinfo 200 ${spaOrigin}`,
      ]),
    )
    await page.screenshot({ path: `${ARTIFACTS}/signed-in.png`, fullPage: true })

    // 4. Refresh with the refresh token (no iframe, no navigation): a new access token.
    await page.getByRole('button', { name: 'Refresh' }).click()
    await expectStatus('refreshed')
    expect(await page.locator('#refreshes').textContent()).toBe('1')
    const secondToken = await page.locator('#access-token').textContent()
    expect(secondToken).toMatch(/^….{16}$/)
    expect(secondToken).not.toBe(firstToken)
    expect(await page.locator('#email').textContent()).toBe('alice@example.com')
    const storageKey = `oidc.user:${issuer}:${CLIENT_ID}`
    const refreshToken = await page.evaluate(
      (key) => (JSON.parse(sessionStorage.getItem(key) ?? '{}') as { refresh_token?: string }).refresh_token,
      storageKey,
    )
    expect(refreshToken).toEqual(expect.any(String))

    // 5. Sign out: revocation, then RP-initiated logout with id_token_hint back to the SPA.
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(`${spaOrigin}/signed-out**`)
    await expectStatus('signed out')
    expect(crossOrigin).toContain(`POST /connect/revoke 200 ${spaOrigin}`)
    expect(await page.locator('#subject').textContent()).toBe('')
    expect(await page.evaluate((key) => sessionStorage.getItem(key), storageKey)).toBeNull()
    const refused = await fetch(`${issuer}/connect/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshToken as string,
        client_id: CLIENT_ID,
      }),
    })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: 'invalid_grant' })

    // The Gatehouse session is over too: signing in again shows the sign-in page.
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${issuer}/connect/interaction?**`)
    await expect.poll(() => page.getByLabel('Password').count()).toBe(1)
    expect(log.filter((line) => /CORS|pageerror/i.test(line))).toEqual([])
  })
})
