/**
 * #28 items 5 and 6: `npm run start:workers`, the standalone server on workerd (Miniflare), as
 * `npm start` is: the demo seed without a file, SIGTERM to npm's PID stopping everything (no
 * workerd left behind), two at once (no inspector port by default), and the store choices that do
 * not exist on Workers yet failing with one clear line. The flows themselves run in the runtime
 * matrix (runtimes.test.ts, fapi2_runtimes.test.ts, mcp_runtimes.test.ts: `workers`).
 * #28 item 4: with DATABASE_URL (own schema), PostgreSQL from inside workerd: client credentials, a
 * code flow with refresh, state surviving a restart, and a database outage answered 503 at once.
 */
import { dirname } from 'node:path'
import * as oauth from 'oauth4webapi'
import postgresClient from 'postgres'
import { afterEach, describe, expect, it } from 'vitest'
import { unescapeHtml } from '../helpers/browser.ts'
import { runSchema } from '../storage/sql_helpers.ts'
import {
  CONFIG,
  CookieJar,
  RU,
  type Running,
  freePort,
  launch,
  node22,
  stopsOnSignalToLeader,
  waitUntilServing,
  writeConfig,
} from './server.ts'
import { tcpProxy } from './tcp_proxy.ts'

const running: Running[] = []
const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const server of running.splice(0)) await server.stop().catch(() => undefined)
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** `npm run start:workers` with Node 22+ first on PATH (Miniflare's requirement). */
async function startWorkers(env: Record<string, string>, args: string[] = []): Promise<Running> {
  const path = `${dirname(await node22())}:${process.env.PATH ?? ''}`
  const server = launch(['npm', 'run', 'start:workers', ...(args.length ? ['--', ...args] : [])], {
    PATH: path,
    ...env,
  })
  running.push(server)
  return server
}

async function clientCredentials(base: string, id: string, secret: string): Promise<Response> {
  return fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa(`${id}:${secret}`)}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=api1',
  })
}

describe('#28 npm run start:workers', () => {
  it('#28 item 5 serves the demo seed without --config, two at once; SIGTERM to npm’s PID leaves no workerd running', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    const a = await startWorkers({ HOST: '127.0.0.1', PORT: String(portA) })
    const b = await startWorkers({ HOST: '127.0.0.1', PORT: String(portB) })
    const [baseA, baseB] = [`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`]
    await waitUntilServing(a, `${baseA}/healthz`, 60_000)
    await waitUntilServing(b, `${baseB}/healthz`, 60_000)
    for (const base of [baseA, baseB]) {
      const response = await clientCredentials(base, 'demo-service', 'demo-service-secret')
      expect(response.status, await response.clone().text()).toBe(200)
      expect(await response.json()).toMatchObject({ token_type: 'Bearer' })
      const landing = await fetch(`${base}/`)
      expect(landing.status).toBe(200)
      expect(await landing.text()).toContain('/demo')
    }
    expect(a.output().stdout).toMatch(
      /Gatehouse \(workerd\) listening on http:\/\/127\.0\.0\.1:\d+, issuer http:\/\/localhost:/,
    )
    await stopsOnSignalToLeader(a, `${baseA}/healthz`)
    expect(a.output().stdout).toContain('Gatehouse stopped')
    // The other instance is untouched.
    expect((await clientCredentials(baseB, 'demo-service', 'demo-service-secret')).status).toBe(200)
    await stopsOnSignalToLeader(b, `${baseB}/healthz`)
  }, 120_000)

  it.each([
    [
      { GATEHOUSE_STORE: 'd1' },
      /GATEHOUSE_STORE=d1: the D1 store \(gatehouse\/storage\/d1\) is not in this version yet/,
    ],
    [{ GATEHOUSE_STORE: 'redis' }, /GATEHOUSE_STORE must be memory, d1 or postgres for start:workers, got "redis"/],
    [{ GATEHOUSE_STORE: 'postgres' }, /GATEHOUSE_STORE=postgres needs DATABASE_URL/],
  ])(
    '#28 item 5 a store Workers do not have yet fails with one line and status 1 (%o)',
    async (env, message) => {
      const server = await startWorkers({ HOST: '127.0.0.1', PORT: String(await freePort()), ...env })
      const exit = await server.exited
      expect(exit.code).toBe(1)
      expect(server.output().stderr).toMatch(message)
      expect(server.output().stderr).not.toMatch(/\n\s+at /) // no stack trace
    },
    60_000,
  )
})

const databaseUrl = process.env.DATABASE_URL
const insecure = { [oauth.allowInsecureRequests]: true }
const web: oauth.Client = { client_id: 'rt-web' }
const webAuth = oauth.ClientSecretBasic('rt-web-secret')

/** A schema of its own, dropped after the test. */
function ownSchema(): string {
  const schema = runSchema('workers')
  cleanups.push(async () => {
    const admin = postgresClient(databaseUrl as string, { max: 1, onnotice: () => {} })
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })
  return schema
}

/** start:workers on PostgreSQL with the runtime tests' configuration file, serving. */
async function startOnPostgres(url: string, schema: string, port: number): Promise<Running> {
  const config = writeConfig(CONFIG)
  cleanups.push(config.remove)
  const issuer = `http://127.0.0.1:${port}`
  const server = await startWorkers(
    { HOST: '127.0.0.1', PORT: String(port), ISSUER: issuer, DATABASE_URL: url, GATEHOUSE_PG_SCHEMA: schema },
    ['--config', config.path],
  )
  await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`, 60_000)
  // workerd answers before the launcher has written its start-up line.
  for (let waited = 0; !server.output().stdout.includes('listening on') && waited < 10_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return server
}

/** authorize → the sign-in page → alice → the code at the redirect URI → tokens (oauth4webapi). */
async function codeFlow(as: oauth.AuthorizationServer): Promise<oauth.TokenEndpointResponse> {
  const jar = new CookieJar()
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const authorize = new URL(as.authorization_endpoint as string)
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: web.client_id,
    redirect_uri: RU,
    scope: 'openid profile',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString()
  let url = authorize.href
  let response = await jar.fetch(url)
  for (let hops = 0; response.status === 303 && hops < 5; hops++) {
    url = new URL(response.headers.get('location') as string, url).href
    response = await jar.fetch(url)
  }
  const html = await response.text()
  expect(response.status, html).toBe(200)
  const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(html)
  const body = new URLSearchParams()
  for (const [, name, value] of (form?.[2] ?? '').matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    body.set(unescapeHtml(name as string), unescapeHtml(value as string))
  }
  body.set('username', 'alice')
  body.set('password', 'alice-password')
  body.set('decision', 'login')
  url = new URL(unescapeHtml(form?.[1] ?? ''), url).href
  response = await jar.fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  })
  let location = ''
  for (let hops = 0; hops < 5; hops++) {
    expect(response.status, await response.clone().text()).toBe(303)
    location = new URL(response.headers.get('location') as string, url).href
    if (location.startsWith(RU)) break
    url = location
    response = await jar.fetch(url)
  }
  const callback = oauth.validateAuthResponse(as, web, new URL(location), state)
  return oauth.processAuthorizationCodeResponse(
    as,
    web,
    await oauth.authorizationCodeGrantRequest(as, web, webAuth, callback, RU, verifier, insecure),
  )
}

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer)
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { ...insecure, algorithm: 'oidc' }))
}

async function kids(issuer: string): Promise<string[]> {
  const jwks = (await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }
  return jwks.keys.map((key) => key.kid).sort()
}

/** Introspection of `token` by the resource server api1: the revocation check reads the database. */
async function introspect(issuer: string, token: string): Promise<{ status: number; ms: number; body: string }> {
  const started = performance.now()
  const response = await fetch(`${issuer}/connect/introspect`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa('api1:api1-secret')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: `token=${token}`,
    signal: AbortSignal.timeout(10_000),
  })
  const body = await response.text()
  return { status: response.status, ms: performance.now() - started, body }
}

describe.runIf(databaseUrl)('#28 item 4 npm run start:workers on PostgreSQL (DATABASE_URL)', () => {
  it('#28 item 4 serves client credentials and a code flow with refresh from workerd; state survives a restart', async () => {
    const schema = ownSchema()
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    const first = await startOnPostgres(databaseUrl as string, schema, port)
    const where = new URL(databaseUrl as string)
    expect(first.output().stdout).toContain(
      `Gatehouse (workerd) listening on http://127.0.0.1:${port}, issuer ${issuer}, PostgreSQL store at ${where.hostname}:${where.port || 5432}${where.pathname} (schema ${schema}, a client per request)`,
    )
    const service = await clientCredentials(issuer, 'rt-service', 'rt-service-secret')
    expect(service.status, await service.clone().text()).toBe(200)
    const { access_token: serviceToken } = (await service.json()) as { access_token: string }
    expect(JSON.parse((await introspect(issuer, serviceToken)).body)).toMatchObject({
      active: true,
      client_id: 'rt-service',
    })

    const as = await discover(issuer)
    const tokens = await codeFlow(as)
    expect(tokens.scope).toBe('openid profile')
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, insecure),
    )
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    // The state is in the schema, not in the isolate.
    const admin = postgresClient(databaseUrl as string, { max: 1, onnotice: () => {} })
    const [row] = await admin.unsafe(`SELECT count(*)::int AS n FROM "${schema}".gatehouse_refresh_tokens`)
    await admin.end()
    expect(row?.n).toBe(2)
    const keysBefore = await kids(issuer)
    await stopsOnSignalToLeader(first, `${issuer}/healthz`)

    // Restarted on the same schema: the same signing keys, and the refresh token still rotates.
    const second = await startOnPostgres(databaseUrl as string, schema, port)
    expect(await kids(issuer)).toEqual(keysBefore)
    const again = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, refreshed.refresh_token as string, insecure),
    )
    expect(again.access_token).toBeTypeOf('string')
    // The rotated-away generation is a replay: the family is revoked (a shared, persistent store).
    const replay = await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, insecure)
    expect(replay.status).toBe(400)
    expect(second.output().stderr).not.toMatch(
      /Cannot perform I\/O on behalf of a different request|different request context/,
    )
    await stopsOnSignalToLeader(second, `${issuer}/healthz`)
  }, 180_000)

  it('#28 item 4 PostgreSQL refusing or silent: 503 temporarily_unavailable within the timeouts, then 200 once it is back', async () => {
    const proxy = await tcpProxy(new URL(databaseUrl as string))
    cleanups.push(() => proxy.close())
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    const server = await startOnPostgres(proxy.url(), ownSchema(), port)
    const service = await clientCredentials(issuer, 'rt-service', 'rt-service-secret')
    const { access_token: token } = (await service.json()) as { access_token: string }
    expect((await introspect(issuer, token)).status).toBe(200)

    await proxy.refuse() // the database stopped: connecting is refused
    const refused = await introspect(issuer, token)
    expect(refused.status, refused.body).toBe(503)
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'temporarily_unavailable' })
    expect(refused.ms).toBeLessThan(1000)

    await proxy.restore()
    proxy.blackhole() // a partition: nothing answers, nothing closes
    const silent = await introspect(issuer, token)
    expect(silent.status, silent.body).toBe(503)
    expect(silent.ms).toBeLessThan(3500) // connectTimeout / queryTimeout: 2 s
    const next = await introspect(issuer, token)
    expect(next.status).toBe(503)
    expect(next.ms).toBeLessThan(1000) // failing fast for a second after a timeout

    await proxy.restore()
    let back = { status: 0, ms: 0, body: '' }
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      back = await introspect(issuer, token)
      if (back.status === 200) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(back.status, back.body).toBe(200)
    expect(server.output().stderr).not.toMatch(/Cannot perform I\/O on behalf of a different request/)
    await stopsOnSignalToLeader(server, `${issuer}/healthz`)
  }, 180_000)
})
