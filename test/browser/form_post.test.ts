/**
 * #30 `response_mode=form_post` (OAuth 2.0 Form Post Response Mode §2) in a real browser: Debian's
 * Chromium, driven by playwright-core, signs in through Gatehouse's built-in form and must then
 * POST the authorization response (code, state, iss) to the client's redirect_uri, a local
 * node:http receiver on another origin, by itself: with JavaScript on, the `<noscript>` button is
 * not rendered and the test clicks nothing, so only the nonce-bearing script can submit the form.
 * No Content Security Policy violation may reach the console. Errors go the same way: Cancel on
 * the sign-in page (access_denied) and an invalid scope (before any sign-in). With JavaScript off
 * the `<noscript>` button submits the same form.
 *
 * Without /usr/bin/chromium the tests are skipped, unless CI=true: then they fail.
 */
import { existsSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as oauth from 'oauth4webapi'
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveNode } from '../../adapters/node.ts'
import { createTokenService } from '../../src/index.ts'
import { CLIENTS } from '../helpers/service.ts'

const CHROMIUM = '/usr/bin/chromium'
const MISSING = `${CHROMIUM} not found: the browser test needs Debian's chromium (apt-get install -y chromium)`
const CLIENT_ID = 'form-post-rp'
const CLIENT_SECRET = 'form-post-rp-secret'

/** What the redirect_uri receiver saw: one entry per request. */
interface Received {
  method: string
  path: string
  contentType: string | undefined
  params: URLSearchParams
}

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

/** The client's redirect_uri: records every request and answers with a plain page. */
function startReceiver(received: Received[]): Promise<Server> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://localhost')
      const body = Buffer.concat(chunks).toString('utf8')
      received.push({
        method: request.method ?? '',
        path: url.pathname,
        contentType: request.headers['content-type'],
        params: request.method === 'POST' ? new URLSearchParams(body) : url.searchParams,
      })
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        .end('<!doctype html><title>received</title><p id="received">received</p>')
    })
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

const describeBrowser = existsSync(CHROMIUM) || process.env.CI === 'true' ? describe : describe.skip
if (!existsSync(CHROMIUM)) {
  if (process.env.CI === 'true') throw new Error(`${MISSING}; CI=true, so this is a failure`)
  console.warn(`SKIP browser test: ${MISSING}; skipped (set CI=true to make this a failure)`)
}

describeBrowser('#30 browser: response_mode=form_post in Chromium', () => {
  let gatehouse: Server | undefined
  let receiver: Server | undefined
  let browser: Browser | undefined
  let issuer = ''
  let redirectUri = ''
  const received: Received[] = []

  beforeAll(async () => {
    let service: ReturnType<typeof createTokenService> | undefined
    gatehouse = await serveNode((request) => (service as NonNullable<typeof service>).fetch(request), {
      port: 0,
      hostname: '127.0.0.1',
    })
    issuer = `http://127.0.0.1:${port(gatehouse)}`
    receiver = await startReceiver(received)
    // Another origin (and site) than the issuer: the form POST is cross-site.
    redirectUri = `http://localhost:${port(receiver)}/cb`
    service = createTokenService({
      issuer,
      secretHashIterations: 1000,
      logger: { warn() {}, error: (message, detail) => console.error(message, detail) },
      users: [{ sub: 'user-42', username: 'alice', password: 'alice-password', email: 'alice@example.com' }],
    })
    await service.clients.ensure({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      displayName: 'Form Post RP',
      permissions: (CLIENTS.web as (typeof CLIENTS)[string]).permissions,
      redirectUris: [redirectUri],
    })
    await service.ready()
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await close(receiver)
    await close(gatehouse)
  })

  /** A fresh browser profile; console lines, page errors and CSP reports collected. */
  async function open(options: { javaScriptEnabled?: boolean } = {}): Promise<{
    context: BrowserContext
    page: Page
    log: string[]
    formPostCsp: () => string | undefined
  }> {
    const context = await (browser as Browser).newContext(options)
    const page = await context.newPage()
    const log: string[] = []
    let csp: string | undefined
    page.on('console', (message) => log.push(`console.${message.type()}: ${message.text()}`))
    page.on('pageerror', (err) => log.push(`pageerror: ${err.message}`))
    page.on('response', (response) => {
      // The form post page: the 200 HTML answer of the sign-in POST or of the authorization request.
      if (response.url().startsWith(issuer) && response.status() === 200) {
        const policy = response.headers()['content-security-policy']
        if (policy?.includes('script-src')) csp = policy
      }
    })
    return { context, page, log, formPostCsp: () => csp }
  }

  async function request(
    extra: Record<string, string> = {},
  ): Promise<{ url: string; state: string; verifier: string }> {
    const state = oauth.generateRandomState()
    const verifier = oauth.generateRandomCodeVerifier()
    const url = new URL(`${issuer}/connect/authorize`)
    const params: Record<string, string> = {
      client_id: CLIENT_ID,
      redirect_uri: redirectUri,
      response_type: 'code',
      response_mode: 'form_post',
      scope: 'openid email',
      state,
      nonce: oauth.generateRandomNonce(),
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    }
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    return { url: url.href, state, verifier }
  }

  /** Waits for the receiver to get the next request after `before`; the request. */
  async function nextReceived(before: number): Promise<Received> {
    await expect.poll(() => received.length, { timeout: 20_000 }).toBeGreaterThan(before)
    return received[before] as Received
  }

  function cspViolations(log: string[]): string[] {
    return log.filter((line) => /Content Security Policy|Refused to|pageerror/i.test(line))
  }

  it('#30 AUTHZ-01: after sign-in the script POSTs code, state and iss to the redirect_uri; the code redeems', {
    timeout: 60_000,
  }, async () => {
    const { context, page, log, formPostCsp } = await open()
    const { url, state, verifier } = await request()
    await page.goto(url)
    await page.getByLabel('Username').fill('alice')
    await page.getByLabel('Password').fill('alice-password')
    const before = received.length
    await page.getByRole('button', { name: 'Sign in' }).click()
    const post = await nextReceived(before)
    await page.waitForURL(redirectUri)
    expect(await page.locator('#received').textContent()).toBe('received')

    expect(post.method).toBe('POST')
    expect(post.path).toBe('/cb')
    expect(post.contentType).toBe('application/x-www-form-urlencoded')
    expect([...post.params.keys()].sort()).toEqual(['code', 'iss', 'state'])
    expect(post.params.get('state')).toBe(state)
    expect(post.params.get('iss')).toBe(issuer)
    // The page that carried it: one nonce-bearing script, nothing else allowed.
    expect(formPostCsp()).toMatch(
      /^default-src 'none'; script-src 'nonce-[A-Za-z0-9_-]+'; base-uri 'none'; frame-ancestors 'none'$/,
    )
    expect(cspViolations(log)).toEqual([])

    // The code the browser delivered is a live one.
    const token = await fetch(`${issuer}/connect/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}` },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: post.params.get('code') as string,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
    })
    expect(token.status).toBe(200)
    expect(await token.json()).toMatchObject({ token_type: expect.any(String), id_token: expect.any(String) })

    // Signed in now: a second request answers at once with the form post page, posted again.
    const again = await request()
    const next = received.length
    await page.goto(again.url)
    const second = await nextReceived(next)
    expect(second.method).toBe('POST')
    expect(second.params.get('state')).toBe(again.state)
    expect(second.params.get('code')).toEqual(expect.any(String))
    expect(cspViolations(log)).toEqual([])
    await context.close()
  })

  it('#30 AUTHZ-04: Cancel on the sign-in page: access_denied with state and iss arrives by POST', {
    timeout: 60_000,
  }, async () => {
    const { context, page, log } = await open()
    const { url, state } = await request()
    await page.goto(url)
    const before = received.length
    await page.getByRole('button', { name: 'Cancel' }).click()
    const post = await nextReceived(before)
    expect(post.method).toBe('POST')
    expect(post.params.get('error')).toBe('access_denied')
    expect(post.params.get('state')).toBe(state)
    expect(post.params.get('iss')).toBe(issuer)
    expect(post.params.has('code')).toBe(false)
    expect(cspViolations(log)).toEqual([])
    await context.close()
  })

  it('#30 AUTHZ-19, AUTHZ-04: an invalid scope is answered by POST before any sign-in', {
    timeout: 60_000,
  }, async () => {
    const { context, page, log } = await open()
    const { url, state } = await request({ scope: 'openid not-a-scope' })
    const before = received.length
    await page.goto(url)
    const post = await nextReceived(before)
    expect(post.method).toBe('POST')
    expect(post.params.get('error')).toBe('invalid_scope')
    expect(post.params.get('state')).toBe(state)
    expect(post.params.get('iss')).toBe(issuer)
    expect(cspViolations(log)).toEqual([])
    await context.close()
  })

  it('#30 with JavaScript off the <noscript> button submits the same POST', { timeout: 60_000 }, async () => {
    const { context, page } = await open({ javaScriptEnabled: false })
    const { url, state } = await request()
    await page.goto(url)
    await page.getByLabel('Username').fill('alice')
    await page.getByLabel('Password').fill('alice-password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    const continueButton = page.getByRole('button', { name: 'Continue' })
    await continueButton.waitFor()
    const before = received.length
    await continueButton.click()
    const post = await nextReceived(before)
    expect(post.method).toBe('POST')
    expect([...post.params.keys()].sort()).toEqual(['code', 'iss', 'state'])
    expect(post.params.get('state')).toBe(state)
    await context.close()
  })
})
