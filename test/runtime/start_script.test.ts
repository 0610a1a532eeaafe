/**
 * `npm start` as an operator runs it: the --config flag reaches the script, a bad file stops it
 * with the field named, PORT and ISSUER are used byte for byte, and the demo setup works as printed.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { CONFIG, type Running, freePort, launch, waitUntilServing, writeConfig } from './server.ts'

const NPM_START = ['npm', 'start', '--']
const options = { [oauth.allowInsecureRequests]: true }

const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** Starts `npm start -- ...args` on a free port; stopped (and checked to exit) after the test. */
async function start(args: string[], env: Record<string, string> = {}) {
  const port = await freePort()
  const issuer = env.ISSUER ?? `http://127.0.0.1:${port}`
  const server = launch([...NPM_START, ...args], { HOST: '127.0.0.1', PORT: String(port), ISSUER: issuer, ...env })
  cleanups.push(() => stopped(server))
  // PGlite compiles its WebAssembly at start: on a loaded CI machine that once took over 20 s.
  const wait = env.GATEHOUSE_STORE === 'pglite' ? 60_000 : 20_000
  await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`, wait)
  return { server, port, issuer }
}

async function stopped(server: Running) {
  const exit = await server.stop()
  expect(exit.code === 0 || exit.signal !== null, `exit ${JSON.stringify(exit)}\n${server.output().stderr}`).toBe(true)
}

function config(value: unknown) {
  const file = writeConfig(value)
  cleanups.push(file.remove)
  return file.path
}

async function discover(issuer: string) {
  const url = new URL(issuer)
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options))
}

describe('npm start', () => {
  it('#40 item 5: the demo seed has demo-cli (public, device flow) and demo-agent (token exchange) for programs outside the process', async () => {
    const { issuer } = await start([])
    const as = await discover(issuer)
    const cli = { client_id: 'demo-cli' }
    const device = await oauth.processDeviceAuthorizationResponse(
      as,
      cli,
      await oauth.deviceAuthorizationRequest(as, cli, oauth.None(), { scope: 'openid offline_access api1' }, options),
    )
    expect(device.verification_uri).toBe(`${issuer}/connect/verify`)
    // A token exchange by demo-agent gets past client authentication and the grant permission to
    // the subject token itself (an unknown one here: invalid_request, not unauthorized_client).
    const agent = { client_id: 'demo-agent' }
    const response = await oauth.genericTokenEndpointRequest(
      as,
      agent,
      oauth.ClientSecretBasic('demo-agent-secret'),
      'urn:ietf:params:oauth:grant-type:token-exchange',
      { subject_token: 'not-a-token', subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' },
      options,
    )
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: string }).error).toBe('invalid_request')
  })

  it('#40 item 5: a --config file whose clients sign users in but that lists no users says that alice is gone and what to add', async () => {
    const path = config({ ...CONFIG, users: undefined })
    const { server } = await start(['--config', path])
    expect(server.output().stderr).toContain(
      `${path} lists no "users": the built-in sign-in page signs nobody in. The demo user alice belongs to the demo seed, which --config replaces: add "users" to the file`,
    )
  })

  it('passes --config through: the file’s client gets a token', async () => {
    const path = config({
      ...CONFIG,
      clients: [
        {
          clientId: 'only-in-this-file',
          clientSecret: 'file-secret',
          permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
        },
      ],
    })
    const { issuer } = await start(['--config', path])
    const as = await discover(issuer)
    const client = { client_id: 'only-in-this-file' }
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic('file-secret'),
      new URLSearchParams({ scope: 'api1' }),
      options,
    )
    const result = await oauth.processClientCredentialsResponse(as, client, response)
    expect(result.access_token).toBeTypeOf('string')
    // the file replaced the demo setup
    const demo = await oauth.clientCredentialsGrantRequest(
      as,
      { client_id: 'demo-service' },
      oauth.ClientSecretBasic('demo-service-secret'),
      new URLSearchParams({ scope: 'api1' }),
      options,
    )
    await expect(oauth.processClientCredentialsResponse(as, { client_id: 'demo-service' }, demo)).rejects.toMatchObject(
      {
        status: 401, // invalid_client, surfaced by oauth4webapi as the WWW-Authenticate challenge
      },
    )
  })

  it('exits non-zero naming the bad field of a bad configuration file', async () => {
    const path = config({
      ...CONFIG,
      clients: [{ clientId: 'bad', clientSecret: 'bad-secret', permissions: ['bogus'] }],
    })
    const server = launch([...NPM_START, '--config', path], { HOST: '127.0.0.1', PORT: String(await freePort()) })
    cleanups.push(() => void server.stop().catch(() => undefined))
    const exit = await Promise.race([
      server.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`still running:\n${server.output().stderr}`)), 15_000),
      ),
    ])
    expect(exit.code).not.toBe(0)
    expect(exit.code).not.toBeNull()
    expect(server.output().stderr).toContain(path)
    expect(server.output().stderr).toMatch(/clients\.0\.permissions(\.0)?: unknown permission/)
  })

  it('#40 item 6: a client the service refuses names the file and the client, not just "invalid client registration"', async () => {
    const path = config({
      ...CONFIG,
      clients: [
        {
          clientId: 'remote-web',
          clientSecret: 'remote-web-secret',
          permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
          redirectUris: ['http://app.example.com/callback'],
        },
      ],
    })
    const server = launch([...NPM_START, '--config', path], { HOST: '127.0.0.1', PORT: String(await freePort()) })
    cleanups.push(() => void server.stop().catch(() => undefined))
    const exit = await Promise.race([
      server.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`still running:\n${server.output().stderr}`)), 15_000),
      ),
    ])
    expect(exit.code).not.toBe(0)
    expect(server.output().stderr).toContain(
      `${path}: client remote-web cannot be loaded: redirectUris: http://app.example.com/callback must use https (http only for loopback hosts)`,
    )
  })

  it.each([
    [
      'PostgreSQL',
      { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' },
      /cannot connect to PostgreSQL at 127\.0\.0\.1:1/,
    ],
    ['Redis', { REDIS_URL: 'redis://127.0.0.1:1' }, /cannot connect to Redis at 127\.0\.0\.1:1/],
  ])('a %s store that cannot be reached stops start-up with a clear message', async (_name, env, message) => {
    const server = launch([...NPM_START, '--config', config(CONFIG)], {
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      ...env,
    })
    cleanups.push(() => void server.stop().catch(() => undefined))
    const exit = await Promise.race([
      server.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`still running:\n${server.output().stderr}`)), 20_000),
      ),
    ])
    expect(exit.code).toBe(1)
    expect(server.output().stderr).toMatch(message)
  })

  it('the embedded PGlite store survives a restart: keys, clients and tokens carry on', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-pglite-start-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const path = config(CONFIG)
    const port = await freePort()
    const env = {
      GATEHOUSE_STORE: 'pglite',
      GATEHOUSE_DATA_DIR: dir,
      PORT: String(port),
      ISSUER: `http://127.0.0.1:${port}`,
    }
    const first = await start(['--config', path], env)
    const as = await discover(first.issuer)
    const client = { client_id: 'rt-service' }
    const auth = oauth.ClientSecretBasic('rt-service-secret')
    const issued = await oauth.processClientCredentialsResponse(
      as,
      client,
      await oauth.clientCredentialsGrantRequest(as, client, auth, new URLSearchParams(), options),
    )
    await stopped(first.server)
    cleanups.pop()
    await start(['--config', path], env)
    const introspected = await oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(as, client, auth, issued.access_token, options),
    )
    expect(introspected).toMatchObject({ active: true, client_id: 'rt-service' })
  }, 150_000)

  it('uses PORT and ISSUER byte for byte, endpoints under an issuer with a path', async () => {
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}/tenant-a`
    await start(['--config', config(CONFIG)], { PORT: String(port), ISSUER: issuer })
    const as = await discover(issuer)
    expect(as.issuer).toBe(issuer)
    const endpoints = Object.entries(as).filter(([name]) => name.endsWith('_endpoint') || name === 'jwks_uri')
    expect(endpoints.map(([name]) => name)).toEqual(
      expect.arrayContaining(['authorization_endpoint', 'token_endpoint', 'jwks_uri', 'end_session_endpoint']),
    )
    for (const [name, value] of endpoints) expect(value, name).toMatch(new RegExp(`^${issuer}/`))
    // RFC 8414 §3.1: the well-known path inserted before the issuer's path
    const rfc8414 = await fetch(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server/tenant-a`)
    expect(rfc8414.status).toBe(200)
    expect(((await rfc8414.json()) as { issuer: string }).issuer).toBe(issuer)
  })

  it('without --config, the demo client gets a token with the printed curl parameters', async () => {
    const { server, issuer } = await start([])
    let line: string | undefined
    for (let tries = 0; tries < 50 && !line; tries++) {
      line = server
        .output()
        .stdout.split('\n')
        .find((l) => l.trim().startsWith('curl '))
      if (!line) await new Promise((r) => setTimeout(r, 100))
    }
    expect(line, server.output().stdout).toBeDefined()
    // curl -s -u ID:SECRET -d NAME=VALUE ... URL
    const words = (line as string).trim().split(/\s+/)
    const url = words.at(-1) as string
    expect(url).toBe(`${issuer}/connect/token`)
    const body = new URLSearchParams()
    let user = ''
    for (let i = 1; i < words.length - 1; i++) {
      if (words[i] === '-u') user = words[++i] as string
      else if (words[i] === '-d') {
        const [name = '', value = ''] = (words[++i] as string).split('=')
        body.set(name, value)
      }
    }
    expect(user.startsWith('demo-service:')).toBe(true)
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Basic ${btoa(user)}`, 'content-type': 'application/x-www-form-urlencoded' },
      body,
    })
    const result = (await response.json()) as Record<string, unknown>
    expect(response.status, JSON.stringify(result)).toBe(200)
    expect(result).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), expires_in: expect.any(Number) })
    expect(result.access_token).toBeTypeOf('string')
  })
})

/** The status of a client_credentials request of the demo client. */
async function demoServiceStatus(issuer: string): Promise<number> {
  const response = await fetch(`${issuer}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa('demo-service:demo-service-secret')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=api1',
  })
  await response.body?.cancel()
  return response.status
}

describe('#27 item 13 the demo seed', () => {
  it('#27 item 13 the start banner names both demo clients', async () => {
    const { server } = await start([])
    const lines = server.output().stdout
    expect(lines).toMatch(/seeded the demo clients "demo-service" .*"demo-web"/)
  })

  const url = process.env.DATABASE_URL
  it.runIf(url)(
    '#27 item 13 on PostgreSQL the demo clients take --demo (with a warning), and a later start with --config removes them',
    async () => {
      const postgres = (await import('postgres')).default
      const schema = `gh_demo_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`
      cleanups.push(async () => {
        const sql = postgres(url as string, { max: 1, onnotice: () => {} })
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await sql.end()
      })
      const env = { DATABASE_URL: url as string, GATEHOUSE_PG_SCHEMA: schema }

      // No file, no --demo: no demo clients in a persistent store, and a line saying how to add clients.
      const plain = await start([], env)
      expect(await demoServiceStatus(plain.issuer)).toBe(401)
      expect(plain.server.output().stderr).toMatch(
        /No clients configured: .*--config FILE.*gatehouse clients add.*--demo/,
      )
      expect(plain.server.output().stdout).not.toMatch(/seeded the demo/)
      await stopped(plain.server)
      cleanups.pop()

      // --demo: seeded, with a warning.
      const seeded = await start(['--demo'], env)
      expect(await demoServiceStatus(seeded.issuer)).toBe(200)
      expect(seeded.server.output().stderr).toMatch(
        /--demo: the demo clients demo-service, demo-web, demo-cli and demo-agent are in the PostgreSQL store/,
      )
      await stopped(seeded.server)
      cleanups.pop()

      // #40 item 6: restarted without --demo, the clients are there but alice is not: the log says why.
      const restarted = await start([], env)
      expect(await demoServiceStatus(restarted.issuer)).toBe(200)
      expect(restarted.server.output().stdout).toMatch(
        /serving the 4 clients in the PostgreSQL store .*, and no users: users are options of a start, not stored, so the demo user alice exists only in a --demo start/,
      )
      await stopped(restarted.server)
      cleanups.pop()

      // A configuration file that does not list them: they are removed, and the log says so.
      const configured = await start(['--config', config(CONFIG)], env)
      expect(await demoServiceStatus(configured.issuer)).toBe(401)
      expect(configured.server.output().stderr).toMatch(/client demo-service: removed \(a demo client/)
    },
    120_000,
  )
})
