/**
 * The Next.js example (examples/nextjs): `next build`, then `next start` on a free loopback port,
 * driven over real HTTP by oauth4webapi: discovery, client credentials (verified against the JWKS),
 * the code flow with PKCE through the app's own sign-in page, and RFC 6749 error JSON; and (#18)
 * the app's own Auth.js (next-auth v5, a plain OIDC provider entry) signing alice in against the
 * Gatehouse it embeds, its /account page showing her name and email.
 *
 * Runs when examples/nextjs/node_modules exists or GATEHOUSE_TEST_NEXTJS=1 (CI installs the
 * example and sets it); skipped otherwise, since the example has its own dependencies.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, lstatSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Browser, type Page, unescapeHtml } from '../helpers/browser.ts'
import { authorizationUrl } from '../helpers/flow.ts'
import { freePort } from '../runtime/server.ts'

const APP = fileURLToPath(new URL('../../examples/nextjs/', import.meta.url))
const NEXT = `${APP}node_modules/next/dist/bin/next`
const forced = process.env.GATEHOUSE_TEST_NEXTJS === '1'
const installed = existsSync(`${APP}node_modules`)
const enabled = forced || installed
const SKIPPED = 'skipped: examples/nextjs is not installed (run `npm ci` there, or set GATEHOUSE_TEST_NEXTJS=1)'
const title = enabled ? 'Next.js example (next build + next start)' : `Next.js example (${SKIPPED})`
if (!enabled) console.info(`test/examples/nextjs.test.ts ${SKIPPED}`)

const BUILD_TIMEOUT = 300_000
/** The client's redirect URI: never fetched, the browser stops there. */
const RU = 'http://127.0.0.1:8081/nextjs-test/callback'
const opts = { [oauth.allowInsecureRequests]: true } as const
const service = { client_id: 'demo-service' }
const web = { client_id: 'demo-web' }

/** Environment of the Next processes (vitest sets NODE_ENV=test, which Next must not see). */
function nextEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1', ...extra }
}

function collect(child: ChildProcess): () => string {
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  return () => output
}

async function build(): Promise<{ seconds: number; output: string }> {
  const started = performance.now()
  const child = spawn(process.execPath, [NEXT, 'build'], {
    cwd: APP,
    env: nextEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const output = collect(child)
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`next build did not finish in ${BUILD_TIMEOUT / 1000} s:\n${output()}`))
    }, BUILD_TIMEOUT)
    child.once('error', reject)
    child.once('exit', (exitCode) => {
      clearTimeout(timer)
      resolve(exitCode)
    })
  })
  if (code !== 0) throw new Error(`next build failed (exit ${code}):\n${output()}`)
  return { seconds: (performance.now() - started) / 1000, output: output() }
}

/** Parses the first form of a page: its action and hidden inputs (React orders attributes freely). */
function parseForm(page: Page): { action: string; hidden: URLSearchParams } {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/.exec(page.html)
  if (!form) throw new Error(`no form on ${page.url}:\n${page.html}`)
  const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1]
  const action = attr(form[1] as string, 'action')
  if (action === undefined) throw new Error('form without action')
  const hidden = new URLSearchParams()
  for (const [input] of (form[2] as string).matchAll(/<input\b[^>]*>/g)) {
    if (attr(input, 'type') !== 'hidden') continue
    hidden.set(attr(input, 'name') as string, unescapeHtml(attr(input, 'value') ?? ''))
  }
  return { action: new URL(unescapeHtml(action), page.url).href, hidden }
}

describe.skipIf(!enabled)(title, () => {
  let server: ChildProcess | undefined
  let serverOutput: () => string = () => ''
  let base = ''
  let as: oauth.AuthorizationServer

  beforeAll(async () => {
    if (!installed) {
      throw new Error(
        'GATEHOUSE_TEST_NEXTJS=1 but examples/nextjs/node_modules is missing: run `npm ci` in examples/nextjs',
      )
    }
    const built = await build()
    console.info(`next build took ${built.seconds.toFixed(1)} s`)
    expect(built.output).not.toMatch(/Type error/i)

    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    server = spawn(process.execPath, [NEXT, 'start', '-H', '127.0.0.1', '-p', String(port)], {
      cwd: APP,
      env: nextEnv({ GATEHOUSE_ISSUER: base, DEMO_WEB_REDIRECT_URI: RU }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so afterAll ends everything it started
    })
    serverOutput = collect(server)
    const deadline = Date.now() + 60_000
    for (;;) {
      if (server.exitCode !== null) throw new Error(`next start exited (${server.exitCode}):\n${serverOutput()}`)
      const ready = await fetch(`${base}/.well-known/openid-configuration`).then(
        (response) => response.ok,
        () => false,
      )
      if (ready) break
      if (Date.now() > deadline) throw new Error(`next start not ready after 60 s:\n${serverOutput()}`)
      await sleep(250)
    }
  }, BUILD_TIMEOUT + 90_000)

  afterAll(async () => {
    if (!server?.pid || server.exitCode !== null) return
    const exited = new Promise((resolve) => server?.once('exit', resolve))
    process.kill(-server.pid, 'SIGTERM')
    const timer = setTimeout(() => server?.pid && process.kill(-server.pid, 'SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  }, 15_000)

  it('#18 builds from the packed tarball (built JavaScript), without transpilePackages', () => {
    const installedPackage = `${APP}node_modules/gatehouse-oidc/`
    const manifest = JSON.parse(readFileSync(`${installedPackage}package.json`, 'utf8')) as {
      exports: Record<string, { default: string }>
    }
    expect(lstatSync(installedPackage.slice(0, -1)).isSymbolicLink()).toBe(false)
    expect(manifest.exports['.']?.default).toBe('./dist/src/index.js')
    // `npm run pack:example` wrote gatehouse.tgz; the example runs exactly that (not a stale copy).
    const packed = execFileSync('tar', ['-xzOf', `${APP}gatehouse.tgz`, 'package/dist/src/index.js'], {
      encoding: 'utf8',
    })
    expect(readFileSync(`${installedPackage}dist/src/index.js`, 'utf8')).toBe(packed)
    expect(readFileSync(`${APP}next.config.ts`, 'utf8')).not.toMatch(/transpilePackages\s*:/)
  })

  it('serves discovery at the well-known routes, with URLs built from GATEHOUSE_ISSUER', async () => {
    const issuer = new URL(base)
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, opts))
    expect(as.issuer).toBe(base)
    expect(as.token_endpoint).toBe(`${base}/connect/token`)
    expect(as.authorization_endpoint).toBe(`${base}/connect/authorize`)
    expect(as.jwks_uri).toBe(`${base}/.well-known/jwks.json`)
    const rfc8414 = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...opts, algorithm: 'oauth2' }),
    )
    expect(rfc8414.token_endpoint).toBe(as.token_endpoint)
    const jwks = await fetch(as.jwks_uri as string)
    expect(jwks.status).toBe(200)
    expect(((await jwks.json()) as { keys: unknown[] }).keys.length).toBeGreaterThan(0)
  })

  it('client credentials: the access token verifies against the published JWKS', async () => {
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      service,
      oauth.ClientSecretBasic('demo-service-secret'),
      new URLSearchParams({ scope: 'api1' }),
      opts,
    )
    const tokens = await oauth.processClientCredentialsResponse(as, service, response)
    expect(tokens.token_type).toBe('bearer')
    const { payload } = await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(as.jwks_uri as string)), {
      issuer: base,
      audience: 'api1',
      typ: 'at+jwt',
    })
    expect(payload).toMatchObject({ sub: 'demo-service', client_id: 'demo-service', scope: 'api1' })
  })

  it('code flow with PKCE through the app’s own sign-in page, then single sign-on', async () => {
    const browser = new Browser((request) => fetch(request), [RU])
    const { url, verifier, state, nonce } = await authorizationUrl(as, { clientId: web.client_id, redirectUri: RU })

    // authorize → the interaction hook's 303 → the app's /signin page
    const first = await browser.navigate(url.href)
    const page = first.page as Page
    expect(page.status).toBe(200)
    expect(new URL(page.url).pathname).toBe('/signin')
    expect(page.html).toContain('Demo web app')
    const form = parseForm(page)
    expect(form.action).toBe(`${base}/signin/submit`)
    expect(form.hidden.get('uid')).toBe(new URL(page.url).searchParams.get('uid'))

    const post = (fields: Record<string, string>, origin = base) => {
      const body = new URLSearchParams(form.hidden)
      for (const [name, value] of Object.entries(fields)) body.set(name, value)
      return browser.navigate(form.action, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
        body,
      })
    }
    // a cross-site post is refused; a wrong password shows the page again
    const crossSite = await post({ username: 'alice', password: 'alice-password' }, 'https://evil.example')
    expect(crossSite.page?.status).toBe(403)
    const wrong = await post({ username: 'alice', password: 'nope', decision: 'login' })
    expect(wrong.page?.html).toContain('Wrong username or password')
    const signedIn = await post({ username: 'alice', password: 'alice-password', decision: 'login' })
    const callback = signedIn.callback as URL
    expect(callback.href.startsWith(`${RU}?`)).toBe(true)
    expect(browser.cookies.has('gatehouse.session')).toBe(true)

    const params = oauth.validateAuthResponse(as, web, callback, state)
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      web,
      oauth.ClientSecretBasic('demo-web-secret'),
      params,
      RU,
      verifier,
      opts,
    )
    const tokens = await oauth.processAuthorizationCodeResponse(as, web, response, { expectedNonce: nonce })
    const claims = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken
    expect(claims).toMatchObject({ iss: base, aud: 'demo-web', sub: 'demo-user-1', amr: ['pwd'] })
    const info = await oauth.processUserInfoResponse(
      as,
      web,
      'demo-user-1',
      await oauth.userInfoRequest(as, web, tokens.access_token, opts),
    )
    expect(info).toMatchObject({ sub: 'demo-user-1', email: 'alice@example.com', given_name: 'Alice' })

    // Gatehouse's session cookie went through Next: a second request needs no sign-in.
    const again = new URL(url)
    again.searchParams.set('state', oauth.generateRandomState())
    const silent = await browser.navigate(again.href)
    expect(silent.callback?.searchParams.get('code')).toBeTypeOf('string')
    // The completed interaction cannot be used again.
    const replay = await browser.navigate(`${base}/signin?uid=${form.hidden.get('uid')}`)
    expect(replay.page?.html).toContain('Sign-in expired')
  })

  it('#18 Auth.js (next-auth v5) in the app signs alice in against the embedded Gatehouse; /account shows her', async () => {
    // One browser for the whole app: Auth.js's routes, Gatehouse's and the app's sign-in page share the origin.
    const browser = new Browser((request) => fetch(request), [])
    /** Presses the button of a server-action form as a browser without JavaScript does (multipart POST). */
    const press = (page: Page) => {
      const form = parseForm(page)
      const body = new FormData()
      for (const [name, value] of form.hidden) body.set(name, value)
      return browser.navigate(form.action, { method: 'POST', headers: { origin: base }, body })
    }
    const before = (await browser.navigate(`${base}/account`)).page as Page
    expect(before.status).toBe(200)
    expect(before.html).toContain('Not signed in')

    // "Sign in with Gatehouse" → Auth.js → Gatehouse's authorize → the interaction hook → the app's /signin
    const started = await press(before)
    const page = started.page as Page
    expect(page.status, page.html.slice(0, 2000)).toBe(200)
    expect(new URL(page.url).pathname).toBe('/signin')
    expect(page.html).toContain('Demo app (Auth.js)')
    const form = parseForm(page)
    const body = new URLSearchParams(form.hidden)
    for (const [name, value] of Object.entries({ username: 'alice', password: 'alice-password', decision: 'login' })) {
      body.set(name, value)
    }
    // sign in → Gatehouse's 303 to Auth.js's callback (code exchange, ID token) → Auth.js's 302 to /account
    const done = await browser.navigate(form.action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
      body,
    })
    const account = done.page as Page
    expect(new URL(account.url).pathname, account.html.slice(0, 2000)).toBe('/account')
    expect(account.html).toContain('Signed in')
    expect(account.html).toContain('alice@example.com')
    expect(account.html).toContain('Alice Example')
    const session = (await (await browser.request(`${base}/api/auth/session`)).json()) as {
      user?: { name?: string; email?: string }
    }
    expect(session.user).toMatchObject({ name: 'Alice Example', email: 'alice@example.com' })

    // "Sign out" ends Auth.js's session (Gatehouse's single sign-on session stays, as Auth.js leaves it)
    const signedOut = await press(account)
    expect(signedOut.page?.html).toContain('Not signed in')
    const gone = (await (await browser.request(`${base}/api/auth/session`)).json()) as { user?: unknown } | null
    expect(gone?.user).toBeUndefined()
  })

  it('bad requests get RFC 6749 error JSON from Gatehouse, not Next pages', async () => {
    const basic = `Basic ${btoa('demo-service:demo-service-secret')}`
    const unsupported = await fetch(`${base}/connect/token`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=urn%3Aexample%3Anope',
    })
    expect(unsupported.status).toBe(400)
    expect(unsupported.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await unsupported.json()).toMatchObject({ error: 'unsupported_grant_type' })

    const wrongSecret = await oauth.clientCredentialsGrantRequest(
      as,
      service,
      oauth.ClientSecretBasic('wrong-secret'),
      new URLSearchParams(),
      opts,
    )
    const error = await oauth.processClientCredentialsResponse(as, service, wrongSecret).catch((e: unknown) => e)
    // 401 with `WWW-Authenticate: Basic` (RFC 6749 §5.2), and the JSON body says invalid_client
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError)
    const challenge = error as oauth.WWWAuthenticateChallengeError
    expect(challenge.status).toBe(401)
    expect(challenge.cause[0]).toMatchObject({ scheme: 'basic' })
    expect(await challenge.response.json()).toMatchObject({ error: 'invalid_client' })

    const method = await fetch(`${base}/connect/token`, { method: 'PUT' })
    expect(method.status).toBe(405)
    expect(method.headers.get('allow')).toBe('POST')
    expect(await method.json()).toHaveProperty('error')

    const unknown = await fetch(`${base}/connect/nope`)
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toHaveProperty('error')
  })
})
