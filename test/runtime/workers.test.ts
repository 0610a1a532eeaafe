/**
 * #28 items 5 and 6: `npm run start:workers`, the standalone server on workerd (Miniflare), as
 * `npm start` is: its default store a local D1 in GATEHOUSE_DATA_DIR (the demo seed with --demo,
 * as `npm start` on a persistent store; GATEHOUSE_STORE=memory seeds it anyway), SIGTERM to npm's
 * PID stopping everything (no workerd left behind), two at once (no inspector port by default),
 * two on one GATEHOUSE_DATA_DIR behaving as two instances of one deployment (one winner of a code
 * or refresh token raced between them; one set of signing keys), state kept across a restart, and
 * a store Workers do not have failing with one clear line. The flows themselves run in the runtime
 * matrix (runtimes.test.ts, fapi2_runtimes.test.ts, mcp_runtimes.test.ts: `workers`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import * as oauth from 'oauth4webapi'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { signInOverHttp } from '../helpers/mcp.ts'
import { type Running, freePort, launch, node22, stopsOnSignalToLeader, waitUntilServing } from './server.ts'

const running: Running[] = []

afterEach(async () => {
  for (const server of running.splice(0)) await server.stop().catch(() => undefined)
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

  it.each([
    [
      { DATABASE_URL: 'postgres://127.0.0.1:5432/test' },
      /DATABASE_URL: the PostgreSQL store does not run inside Workers/,
    ],
    [{ GATEHOUSE_STORE: 'redis' }, /GATEHOUSE_STORE must be d1 or memory for start:workers, got "redis"/],
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
    // The races were real: most rounds had a winner and a loser that saw the replay.
    expect(outcomes.filter((outcome) => outcome === '200/400' || outcome === '400/200').length).toBeGreaterThan(0)

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
})
