/**
 * #28 items 5 and 6: `npm run start:workers`, the standalone server on workerd (Miniflare), as
 * `npm start` is: its default store a local D1 in GATEHOUSE_DATA_DIR (the demo seed with --demo,
 * as `npm start` on a persistent store; GATEHOUSE_STORE=memory seeds it anyway), SIGTERM to npm's
 * PID stopping everything (no workerd left behind), two at once (no inspector port by default),
 * two on one GATEHOUSE_DATA_DIR behaving as two instances of one deployment (one winner of a code
 * or refresh token raced between them; one set of signing keys), state kept across a restart, and
 * a store Workers do not have failing with one clear line. The flows themselves run in the runtime
 * matrix (runtimes.test.ts, fapi2_runtimes.test.ts, mcp_runtimes.test.ts: `workers`).
 * #28 item 4: with DATABASE_URL (own schema), PostgreSQL from inside workerd: client credentials, a
 * code flow with refresh, state surviving a restart, and a database outage answered 503 at once.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import * as oauth from 'oauth4webapi'
import postgresClient from 'postgres'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { seededLines } from '../../bin/start_listen.ts'
import { unescapeHtml } from '../helpers/browser.ts'
import { signInOverHttp } from '../helpers/mcp.ts'
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
  it('#28 item 5 serves the demo seed without --config (the in-memory store, and --demo on the default local D1), two at once; SIGTERM to npm’s PID leaves no workerd running', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    const a = await startWorkers({ HOST: '127.0.0.1', PORT: String(portA), GATEHOUSE_STORE: 'memory' })
    const b = await startWorkers({ HOST: '127.0.0.1', PORT: String(portB) }, ['--demo'])
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

  it('#40 item 6 prints the demo lines npm start prints: the clients, the curl line and the demo sign-in', async () => {
    const port = await freePort()
    const server = await startWorkers({ HOST: '127.0.0.1', PORT: String(port), GATEHOUSE_STORE: 'memory' })
    await waitUntilServing(server, `http://127.0.0.1:${port}/healthz`, 60_000)
    const issuer = `http://localhost:${port}`
    const lines = seededLines(`${issuer}/connect/token`, {
      url: `${issuer}/demo`,
      username: 'alice',
      password: 'alice-password',
    })
    expect(lines[1]).toMatch(/^ {2}curl -s -u demo-service:demo-service-secret /)
    // The lines follow the listening line, printed once the Worker answered.
    for (let waited = 0; waited < 10_000 && !server.output().stdout.includes(lines.at(-1) as string); waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    for (const line of lines) expect(server.output().stdout).toContain(line)
  }, 90_000)

  it.each([
    [{ GATEHOUSE_STORE: 'redis' }, /GATEHOUSE_STORE must be d1, memory or postgres for start:workers, got "redis"/],
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

const DEMO_RU = 'http://localhost:8080/callback'

/** Waits (up to 10 s) until `check` holds: the log line after readiness, keys after convergence. */
async function eventually<T>(read: () => T | Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const value = await read()
    if (check(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
const demoWeb: oauth.Client = { client_id: 'demo-web' }
const demoWebAuth = oauth.ClientSecretBasic('demo-web-secret')
const insecure = { [oauth.allowInsecureRequests]: true }

/** Signs alice in at `base` for demo-web: the code and its verifier. */
async function signInDemo(base: string): Promise<{ code: string; verifier: string }> {
  const verifier = oauth.generateRandomCodeVerifier()
  const url = new URL(`${base}/connect/authorize`)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: 'demo-web',
    redirect_uri: DEMO_RU,
    scope: 'openid profile api1',
    state: 's',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString()
  const trip = await signInOverHttp(url, DEMO_RU, { username: 'alice', password: 'alice-password' })
  const code = trip.callback.searchParams.get('code')
  if (!code) throw new Error(`no code in ${trip.callback.href}`)
  return { code, verifier }
}

function tokenRequest(base: string, body: Record<string, string>): Promise<Response> {
  return fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa('demo-web:demo-web-secret')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(body),
  })
}

describe('#28 npm run start:workers on its local D1', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-workers-d1-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('#28 item 5 without --demo the local D1 has no clients, and the log says how to add them', async () => {
    const port = await freePort()
    const server = await startWorkers({ HOST: '127.0.0.1', PORT: String(port), GATEHOUSE_DATA_DIR: join(dir, 'empty') })
    await waitUntilServing(server, `http://127.0.0.1:${port}/healthz`, 60_000)
    const where = `local D1 store in ${join(dir, 'empty', 'workers')}`
    expect(
      await eventually(
        () => server.output().stdout,
        (out) => out.includes(where),
      ),
    ).toContain(where)
    expect(server.output().stderr).toMatch(
      /No clients configured: nothing can get a token yet\. Add clients with --config FILE .*or try it out with --demo/,
    )
    expect((await clientCredentials(`http://127.0.0.1:${port}`, 'demo-service', 'demo-service-secret')).status).toBe(
      401,
    )
  }, 90_000)

  it('#28 item 5 two processes on one GATEHOUSE_DATA_DIR are two instances of one deployment: one winner of a code and of a refresh token raced between them, one set of keys, state kept across a restart', async () => {
    const shared = join(dir, 'shared')
    const [portA, portB] = [await freePort(), await freePort()]
    const issuer = `http://127.0.0.1:${portA}`
    const env = (port: number) => ({
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: issuer,
      GATEHOUSE_DATA_DIR: shared,
    })
    let a = await startWorkers(env(portA), ['--demo'])
    const b = await startWorkers(env(portB), ['--demo'])
    const [baseA, baseB] = [`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`]
    await waitUntilServing(a, `${baseA}/healthz`, 60_000)
    await waitUntilServing(b, `${baseB}/healthz`, 60_000)

    // One set of signing keys, kept in the store.
    const keys = async (base: string) =>
      ((await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys
        .map((key) => key.kid)
        .sort()
    // Both generated keys on the empty store at once; each reloads soon after and they converge.
    const kidsA = await eventually(
      async () => [await keys(baseA), await keys(baseB)],
      ([x, y]) => JSON.stringify(x) === JSON.stringify(y),
    )
    expect(kidsA[1]).toEqual(kidsA[0])

    const outcomes: string[] = []
    for (let round = 0; round < 6; round++) {
      // A code issued by A, redeemed at A and at B at the same instant: exactly one gets tokens.
      const { code, verifier } = await signInDemo(baseA)
      const redeem = { grant_type: 'authorization_code', code, redirect_uri: DEMO_RU, code_verifier: verifier }
      const answers = await Promise.all([tokenRequest(baseA, redeem), tokenRequest(baseB, redeem)])
      // Never two winners, never a 500. Locally the two workerd processes share one SQLite file, and a
      // lock conflict Miniflare meets after the winner's batch committed is a 503 (outcome unknown),
      // not a retry (a retry would see its own consume as a replay): so at most one 200.
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status === 200).length, `round ${round} code ${statuses}`).toBeLessThanOrEqual(
        1,
      )
      expect(
        statuses.every((status) => [200, 400, 503].includes(status)),
        `round ${round} code ${statuses}`,
      ).toBe(true)
      for (const answer of answers.filter((answer) => answer.status === 400)) {
        expect(await answer.json()).toMatchObject({ error: 'invalid_grant' })
      }
      const won = answers.find((answer) => answer.status === 200)
      if (!won) continue
      outcomes.push(statuses.join('/'))
      const tokens = (await won.json()) as { refresh_token: string }
      // Its refresh token rotated at A and at B at once: exactly one new pair.
      const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }
      const rotations = (await Promise.all([tokenRequest(baseA, refresh), tokenRequest(baseB, refresh)])).map(
        (answer) => answer.status,
      )
      expect(
        rotations.filter((status) => status === 200).length,
        `round ${round} refresh ${rotations}`,
      ).toBeLessThanOrEqual(1)
      expect(
        rotations.every((status) => [200, 400, 503].includes(status)),
        `round ${round} refresh ${rotations}`,
      ).toBe(true)
      outcomes.push(rotations.join('/'))
    }
    // The flows went through: rounds had a winner (the outcomes, e.g. 200/400 or 200/503, are in
    // the assertion message for the record).
    expect(outcomes.length, outcomes.join(' ')).toBeGreaterThan(0)

    // Tokens from before a restart of A still work after it, on the same folder.
    const { code, verifier } = await signInDemo(baseB)
    const before = (await (
      await tokenRequest(baseB, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: DEMO_RU,
        code_verifier: verifier,
      })
    ).json()) as { access_token: string; refresh_token: string }
    const kids = await keys(baseA)
    await stopsOnSignalToLeader(a, `${baseA}/healthz`)
    await stopsOnSignalToLeader(b, `${baseB}/healthz`)
    // (--demo again: the demo user alice lives in the configuration, not the store.)
    a = await startWorkers(env(portA), ['--demo'])
    await waitUntilServing(a, `${baseA}/healthz`, 60_000)
    expect(await keys(baseA)).toEqual(kids)
    const as = await oauth.processDiscoveryResponse(
      new URL(issuer),
      await oauth.discoveryRequest(new URL(issuer), insecure),
    )
    const userinfo = await oauth.userInfoRequest(as, demoWeb, before.access_token, insecure)
    expect(userinfo.status).toBe(200)
    expect(await userinfo.json()).toMatchObject({ sub: 'demo-user-1' })
    const refreshed = await oauth.refreshTokenGrantRequest(as, demoWeb, demoWebAuth, before.refresh_token, insecure)
    expect((await oauth.processRefreshTokenResponse(as, demoWeb, refreshed)).access_token).toEqual(expect.any(String))
  }, 240_000)

  it('#28 item 5 two start:workers at once on a fresh GATEHOUSE_DATA_DIR both come up (workerd finding the local D1 locked by the other starts again), 4 times', async () => {
    // Without the restart in bin/serve_workers.ts one of the two exited at start in about one
    // pair of three ("SQLite failed: database is locked"), so 4 pairs catch it most of the time.
    for (let round = 0; round < 4; round++) {
      const shared = join(dir, `together-${round}`)
      const [portA, portB] = [await freePort(), await freePort()]
      const env = (port: number) => ({ HOST: '127.0.0.1', PORT: String(port), GATEHOUSE_DATA_DIR: shared })
      const pair = [await startWorkers(env(portA), ['--demo']), await startWorkers(env(portB), ['--demo'])]
      await Promise.all([
        waitUntilServing(pair[0] as Running, `http://127.0.0.1:${portA}/healthz`, 60_000),
        waitUntilServing(pair[1] as Running, `http://127.0.0.1:${portB}/healthz`, 60_000),
      ])
      for (const server of running.splice(0)) await server.stop()
    }
  }, 300_000)

  it('#28 item 6 concurrent rotations on one isolate never hang: 16 refresh chains at once on the local D1, every answer 200', async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const server = await startWorkers(
      { HOST: '127.0.0.1', PORT: String(port), GATEHOUSE_DATA_DIR: join(dir, 'chains') },
      ['--demo'],
    )
    await waitUntilServing(server, `${base}/healthz`, 60_000)
    const chains: string[] = []
    for (let i = 0; i < 16; i++) {
      const { code, verifier } = await signInDemo(base)
      const response = await tokenRequest(base, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: DEMO_RU,
        code_verifier: verifier,
      })
      chains.push(((await response.json()) as { refresh_token: string }).refresh_token)
    }
    // Concurrent lookups of different requests once shared one D1 query: a request left waiting on
    // another's query when that one ended was cancelled by workerd as hung (a 500).
    const statuses: number[] = []
    await Promise.all(
      chains.map(async (first) => {
        let token = first
        for (let step = 0; step < 15; step++) {
          const response = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: token })
          statuses.push(response.status)
          if (response.status !== 200) return
          token = ((await response.json()) as { refresh_token: string }).refresh_token
        }
      }),
    )
    expect(
      statuses.filter((status) => status !== 200),
      server.output().stderr.slice(-2000),
    ).toEqual([])
    expect(statuses).toHaveLength(16 * 15)
  }, 180_000)
})

const databaseUrl = process.env.DATABASE_URL
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
