/**
 * The Cloudflare Worker example (examples/cloudflare-worker, #28 item 7), run the way its README
 * says: `wrangler d1 migrations apply DB --local`, then `wrangler dev`, both from the example's own
 * node_modules (wrangler and workerd from npm; Gatehouse from the packed tarball), on Node 22 (a
 * temp `--persist-to` folder for the local D1, a free port and inspector port, the variables and
 * secrets as `--var`). Over real HTTP with oauth4webapi: discovery, a whole sign-in through the
 * built-in page (authorize → sign-in form → code → token → userinfo → refresh) and client
 * credentials; the Cron Trigger's prune; then a restart on the same folder, where the refresh
 * token and the signing keys are still there (they live in D1, not in the isolate). SIGTERM stops
 * wrangler and leaves no workerd behind.
 *
 * The example's migration file must be what `gatehouse migrate --print sqlite` prints for the
 * current migrations (checked always, no install needed), so it cannot drift from the store's.
 *
 * The Worker runs when examples/cloudflare-worker/node_modules exists or
 * GATEHOUSE_TEST_CLOUDFLARE_EXAMPLE=1 (CI installs the example and sets it); skipped otherwise,
 * since the example has its own dependencies.
 */
import { execFile } from 'node:child_process'
import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashSecret } from '../../src/index.ts'
import { MIGRATIONS } from '../../src/storage/sql/migrations.ts'
import { Browser } from '../helpers/browser.ts'
import { node22Binary } from '../storage/sqlite_node22.ts'
import { ROOT, type Running, bin, freePort, groupMembers, launch, node22, waitUntilServing } from '../runtime/server.ts'

const run = promisify(execFile)
const APP = fileURLToPath(new URL('../../examples/cloudflare-worker/', import.meta.url))
const WRANGLER = `${APP}node_modules/wrangler/bin/wrangler.js`
const forced = process.env.GATEHOUSE_TEST_CLOUDFLARE_EXAMPLE === '1'
const installed = existsSync(`${APP}node_modules`)
const enabled = forced || installed
const SKIPPED =
  'skipped: examples/cloudflare-worker is not installed (run `npm run pack:example` in the root and `npm ci` there, or set GATEHOUSE_TEST_CLOUDFLARE_EXAMPLE=1)'
const title = enabled ? 'Cloudflare Worker example (wrangler dev, local D1)' : `Cloudflare Worker example (${SKIPPED})`
if (!enabled) console.info(`test/examples/cloudflare_worker.test.ts ${SKIPPED}`)

/** The web client's redirect URI: never fetched, the sign-in stops there. */
const RU = 'http://127.0.0.1:9/cloudflare-example-callback'
const WEB_SECRET = 'web-secret-of-the-example-test'
const SERVICE_SECRET = 'service-secret-of-the-example-test'
const web: oauth.Client = { client_id: 'web' }
const webAuth = oauth.ClientSecretBasic(WEB_SECRET)
const service: oauth.Client = { client_id: 'reporting-job' }

describe('#28 item 7 the Cloudflare Worker example’s D1 migrations', () => {
  /** The example's migration files in order, each with the first version it applies. */
  const files = readdirSync(`${APP}migrations`)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => {
      const text = readFileSync(`${APP}migrations/${name}`, 'utf8')
      return { name, text, from: Number(/migrations (\d+) to \d+,/.exec(text)?.[1]) }
    })

  it('#28 item 7 #29 each migration file is what `gatehouse migrate --print sqlite --from N` printed when it was the newest, the last one what it prints now', async () => {
    expect(files.map((file) => file.name)).toEqual([
      '0001_gatehouse.sql',
      '0002_gatehouse.sql',
      '0003_gatehouse.sql',
      '0004_gatehouse.sql',
      '0005_gatehouse.sql',
      '0006_gatehouse.sql',
    ])
    for (const [i, file] of files.entries()) {
      const args = [
        'bin/cli.ts',
        'migrate',
        '--print',
        'sqlite',
        ...(file.from === 1 ? [] : ['--from', String(file.from)]),
      ]
      const { stdout } = await run(bin('tsx'), args, { cwd: ROOT })
      const next = files[i + 1]
      if (!next) {
        expect(file.text).toBe(stdout)
        continue
      }
      // A released file never changes: the output now, up to the next file's first migration.
      const last = next.from - 1
      const then = `${stdout.slice(0, stdout.indexOf(`\n\n-- ${next.from}: `))}\n`.replace(
        / to \d+, each/,
        ` to ${last}, each`,
      )
      expect(file.text).toBe(then)
    }
  })

  it('#28 item 7 #29 together they record every migration once, so a store opened on the database finds nothing pending', () => {
    const recorded = files.flatMap((file) =>
      [...file.text.matchAll(/INSERT INTO gatehouse_migrations \(version, name\) VALUES \((\d+), /g)].map((m) =>
        Number(m[1]),
      ),
    )
    expect(recorded).toEqual(MIGRATIONS.map((migration) => migration.version))
  })
})

describe.skipIf(!enabled)(title, () => {
  let node = ''
  let persist = ''
  let port = 0
  let issuer = ''
  let running: Running | undefined
  let as: oauth.AuthorizationServer
  let vars: string[] = []
  const opts = { [oauth.allowInsecureRequests]: true } as const
  const timings: Record<string, number> = {}

  /** Node 22's folder first on PATH (wrangler needs Node 22), CI mode: no prompts, no telemetry. */
  const env = (): Record<string, string> => ({
    PATH: `${dirname(node)}:${process.env.PATH ?? ''}`,
    CI: '1',
    WRANGLER_SEND_METRICS: 'false',
  })

  async function wrangler(args: string[]): Promise<string> {
    const { stdout } = await run(node, [WRANGLER, ...args], { cwd: APP, env: { ...process.env, ...env() } })
    return stdout
  }

  /** `wrangler d1 execute` on the local D1: the rows of `sql`. */
  async function query(sql: string): Promise<Record<string, unknown>[]> {
    const out = await wrangler(['d1', 'execute', 'DB', '--local', '--persist-to', persist, '--json', '--command', sql])
    return (JSON.parse(out) as Array<{ results: Record<string, unknown>[] }>)[0]?.results ?? []
  }

  async function start(): Promise<void> {
    const started = performance.now()
    const inspector = await freePort()
    running = launch(
      [
        node,
        WRANGLER,
        'dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(port),
        '--inspector-port',
        String(inspector),
        '--persist-to',
        persist,
        '--show-interactive-dev-session=false',
        ...vars,
      ],
      env(),
      APP,
    )
    await waitUntilServing(running, `${issuer}/.well-known/openid-configuration`, 60_000)
    timings[timings.start === undefined ? 'start' : 'restart'] = Math.round(performance.now() - started)
  }

  /** SIGTERM to wrangler's process group; no workerd may be left. */
  async function stop(): Promise<void> {
    const current = running
    running = undefined
    if (!current) return
    const exit = await current.stop(15_000)
    // wrangler exits 143 (128 + SIGTERM) once it has stopped workerd.
    expect(
      exit.code === 0 || exit.code === 143 || exit.signal === 'SIGTERM',
      JSON.stringify({ exit, ...current.output() }),
    ).toBe(true)
    expect(await groupMembers(current.child.pid as number)).toEqual([])
  }

  beforeAll(async () => {
    if (!installed) {
      throw new Error(
        'GATEHOUSE_TEST_CLOUDFLARE_EXAMPLE=1 but examples/cloudflare-worker/node_modules is missing: run `npm run pack:example` in the root, then `npm ci` in examples/cloudflare-worker',
      )
    }
    node = node22Binary() ?? (await node22())
    persist = mkdtempSync(join(tmpdir(), 'gatehouse-cf-example-'))
    port = await freePort()
    issuer = `http://127.0.0.1:${port}`
    vars = [
      ['ISSUER', issuer],
      ['WEB_REDIRECT_URIS', `https://app.example.com/callback ${RU}`],
      // As the README says: the web client's secret as its hash (npm run secret), the others plain.
      ['WEB_CLIENT_SECRET', await hashSecret(WEB_SECRET, 100_000)],
      ['SERVICE_CLIENT_SECRET', SERVICE_SECRET],
      ['DEMO_USER_PASSWORD', 'alice-password'],
    ].flatMap(([name, value]) => ['--var', `${name}:${value}`])
    const migrated = performance.now()
    const applied = await wrangler(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', persist])
    timings.migrations = Math.round(performance.now() - migrated)
    expect(applied).toMatch(/0001_gatehouse\.sql/)
    expect(applied).toMatch(/0002_gatehouse\.sql/)
    expect(applied).toMatch(/0003_gatehouse\.sql/)
    expect(applied).toMatch(/0004_gatehouse\.sql/)
    expect(applied).toMatch(/0005_gatehouse\.sql/)
    expect(applied).toMatch(/0006_gatehouse\.sql/)
    await start()
    as = await oauth.processDiscoveryResponse(new URL(issuer), await oauth.discoveryRequest(new URL(issuer), opts))
  }, 150_000)

  afterAll(async () => {
    try {
      await stop()
    } finally {
      if (persist) rmSync(persist, { recursive: true, force: true })
      console.info(`test/examples/cloudflare_worker.test.ts timings (ms): ${JSON.stringify(timings)}`)
    }
  }, 30_000)

  it('#28 item 7 runs Gatehouse from the packed tarball, with wrangler and workerd from npm', () => {
    expect(lstatSync(`${APP}node_modules/gatehouse-oidc`).isSymbolicLink()).toBe(false)
    const manifest = JSON.parse(readFileSync(`${APP}package.json`, 'utf8')) as {
      dependencies: Record<string, string>
      devDependencies: Record<string, string>
    }
    expect(manifest.dependencies['gatehouse-oidc']).toBe('file:gatehouse.tgz')
    expect(manifest.devDependencies.wrangler).toBeDefined()
  })

  it('#28 item 7 src/index.ts type-checks against the packed package and @cloudflare/workers-types (npm run typecheck)', async () => {
    const { stdout } = await run(node, [`${APP}node_modules/typescript/bin/tsc`, '--noEmit', '-p', APP], { cwd: APP })
    expect(stdout).toBe('')
  }, 60_000)

  it('#28 item 7 `wrangler d1 migrations apply` recorded every version in gatehouse_migrations', async () => {
    const rows = await query('SELECT version FROM gatehouse_migrations ORDER BY version')
    expect(rows.map((row) => row.version)).toEqual(MIGRATIONS.map((migration) => migration.version))
  }, 30_000)

  let refreshToken = ''
  let kid = ''

  it('#28 item 7 a whole sign-in with oauth4webapi: authorize, sign-in page, code, token, userinfo, refresh', async () => {
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const nonce = oauth.generateRandomNonce()
    const url = new URL(as.authorization_endpoint as string)
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: RU,
      scope: 'openid profile email offline_access',
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString()
    const browser = new Browser((request) => fetch(request), [RU])
    const first = await browser.navigate(url.href)
    expect(first.page?.status, first.page?.html).toBe(200)
    expect(first.page?.html).toMatch(/name="password"/)
    const done = await browser.signIn(first.page as NonNullable<typeof first.page>, 'alice', 'alice-password')
    if (!done.callback) throw new Error(`no redirect after sign-in:\n${done.page?.html}`)
    const params = oauth.validateAuthResponse(as, web, done.callback, state)

    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      web,
      await oauth.authorizationCodeGrantRequest(as, web, webAuth, params, RU, verifier, opts),
      { expectedNonce: nonce, requireIdToken: true },
    )
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({ iss: issuer, sub: 'demo-user-1', aud: 'web' })
    kid = JSON.parse(atob((tokens.id_token as string).split('.')[0] as string)).kid

    const userinfo = await oauth.processUserInfoResponse(
      as,
      web,
      'demo-user-1',
      await oauth.userInfoRequest(as, web, tokens.access_token, opts),
    )
    expect(userinfo).toMatchObject({ sub: 'demo-user-1', email: 'alice@example.com', given_name: 'Alice' })

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, opts),
    )
    expect(refreshed.refresh_token).toBeTruthy()
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    // The rotated-out token is spent: its reuse is refused.
    const reuse = await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, opts)
    await expect(oauth.processRefreshTokenResponse(as, web, reuse)).rejects.toMatchObject({ error: 'invalid_grant' })
    // That revoked the family: sign in again for a live refresh token to carry over the restart.
    url.searchParams.set('state', `${state}2`)
    const again = await browser.navigate(url.href)
    const callback =
      again.callback ??
      (await browser.signIn(again.page as NonNullable<typeof again.page>, 'alice', 'alice-password')).callback
    const second = oauth.validateAuthResponse(as, web, callback as URL, `${state}2`)
    const secondTokens = await oauth.processAuthorizationCodeResponse(
      as,
      web,
      await oauth.authorizationCodeGrantRequest(as, web, webAuth, second, RU, verifier, opts),
      { expectedNonce: nonce },
    )
    refreshToken = secondTokens.refresh_token as string
    expect(refreshToken).toBeTruthy()
  }, 60_000)

  it('#28 item 7 client credentials with the secret from the Worker’s env', async () => {
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      service,
      oauth.ClientSecretBasic(SERVICE_SECRET),
      new URLSearchParams({ scope: 'api1' }),
      opts,
    )
    const tokens = await oauth.processClientCredentialsResponse(as, service, response)
    expect(decodeJwt(tokens.access_token)).toMatchObject({ iss: issuer, sub: 'reporting-job', aud: 'api1' })
    const wrong = await oauth.clientCredentialsGrantRequest(
      as,
      service,
      oauth.ClientSecretBasic('not-the-secret'),
      new URLSearchParams({ scope: 'api1' }),
      opts,
    )
    expect(wrong.status).toBe(401)
  }, 30_000)

  it('#28 item 7 the state is in D1: clients, keys and tokens are rows there', async () => {
    const [counts] = await query(
      'SELECT (SELECT count(*) FROM gatehouse_clients) AS clients, (SELECT count(*) FROM gatehouse_signing_keys) AS keys, (SELECT count(*) FROM gatehouse_refresh_tokens) AS refresh_tokens',
    )
    expect(counts).toMatchObject({ clients: 2 })
    expect(Number(counts?.keys)).toBeGreaterThan(0)
    expect(Number(counts?.refresh_tokens)).toBeGreaterThan(0)
  }, 30_000)

  it('#28 item 7 the Cron Trigger prunes: the scheduled handler deletes expired rows from D1', async () => {
    await query(
      "INSERT INTO gatehouse_replays (key, expires_at) VALUES ('cf-example-expired', 1), ('cf-example-live', 99999999999)",
    )
    const response = await fetch(`${issuer}/cdn-cgi/local/scheduled`)
    expect(response.status, await response.text()).toBe(200)
    const rows = await query("SELECT key FROM gatehouse_replays WHERE key LIKE 'cf-example-%'")
    expect(rows.map((row) => row.key)).toEqual(['cf-example-live'])
    expect(running?.output().stderr ?? '').not.toMatch(/pruning the store failed|the store has no prune/)
  }, 30_000)

  it('#28 item 7 after a restart on the same D1, the refresh token and the signing keys are still there', async () => {
    await stop()
    await start()
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, refreshToken, opts),
    )
    expect(refreshed.access_token).toBeTruthy()
    const jwks = (await (await fetch(as.jwks_uri as string)).json()) as { keys: Array<{ kid: string }> }
    expect(jwks.keys.map((key) => key.kid)).toContain(kid)
  }, 90_000)
})
