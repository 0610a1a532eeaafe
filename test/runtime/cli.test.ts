/**
 * `npx gatehouse` as an operator runs it: the package's `bin` spawned as a real process (and once
 * through npx itself). Against a configuration file with the in-memory store, the client commands
 * edit the file and `gatehouse serve` serves it; against PostgreSQL (DATABASE_URL) and Redis
 * (REDIS_URL), each on a fresh schema or key prefix, a client registered by the CLI gets tokens
 * from an `npm start` server on the same store, through secret rotation, removal and key rotation.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createRedisStore } from '../../src/storage/redis.ts'
import { CONFIG, ROOT, freePort, launch, waitUntilServing, writeConfig } from './server.ts'

const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
/**
 * What `npx gatehouse` runs, from the sources (the package's bin is dist/bin/cli.js, built from
 * bin/cli.ts; test/package/pack.test.ts runs that one through npx in an installed package).
 */
const BIN = [join(ROOT, 'node_modules/.bin/tsx'), join(ROOT, 'bin/cli.ts')]

const PERMISSIONS = ['--permission', 'ept:token', '--permission', 'gt:client_credentials', '--permission', 'scp:api1']
/** The runtime tests' configuration: fast secret hashing, a user, three clients. */
const BASE = { ...CONFIG, secretHashIterations: 1000 }
/** How long a running server may serve a client from its cache (5 s), and a margin. */
const CLIENT_CACHE_MS = 6000

interface Result {
  code: number | null
  stdout: string
  stderr: string
}

/** The test process's environment without the store selection (as server.ts's launch does). */
function inherited(): Record<string, string | undefined> {
  const env = { ...process.env }
  for (const name of Object.keys(env)) {
    if (name === 'DATABASE_URL' || name === 'REDIS_URL' || name.startsWith('GATEHOUSE_')) delete env[name]
  }
  return env
}

/** Runs `gatehouse ...args` to completion from a directory outside the project. */
function gatehouse(args: string[], env: Record<string, string> = {}, input?: string): Promise<Result> {
  return command([...BIN, ...args], tmpdir(), env, input)
}

function command(argv: string[], cwd: string, env: Record<string, string>, input?: string): Promise<Result> {
  const [file, ...args] = argv as [string, ...string[]]
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd,
      env: { ...inherited(), NO_COLOR: '1', ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${argv.join(' ')} did not finish within 45 s\n${stderr}`))
    }, 45_000)
    child.once('error', reject)
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    if (input !== undefined) child.stdin?.end(input)
  })
}

/** A run that succeeded, with its output in the failure message otherwise. */
async function ok(args: string[], env: Record<string, string> = {}, input?: string): Promise<Result> {
  const result = await gatehouse(args, env, input)
  expect(result.code, `gatehouse ${args.join(' ')}\n${result.stderr}`).toBe(0)
  expect(result.stderr).not.toMatch(/\n\s+at /) // never a stack trace
  return result
}

/** A failed run: its status and the error line. */
async function fails(args: string[], status: 1 | 2, message: RegExp, env: Record<string, string> = {}) {
  const result = await gatehouse(args, env)
  expect(result.code, `gatehouse ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(status)
  expect(result.stderr).toMatch(/^gatehouse: /m)
  expect(result.stderr).toMatch(message)
  expect(result.stderr).not.toMatch(/\n\s+at /)
  return result
}

/** The one line a command printed on stdout: a secret just generated. */
function printedSecret(result: Result): string {
  const secret = result.stdout.trim()
  expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
  return secret
}

/** The status of a client_credentials request at `issuer`. */
async function tokenStatus(issuer: string, clientId: string, secret: string): Promise<number> {
  const response = await fetch(`${issuer}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`)}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'api1' }),
  })
  await response.body?.cancel()
  return response.status
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A server (`argv`) on a free port; `stop` checks that it exits cleanly, and is idempotent. */
async function serve(argv: string[], env: Record<string, string> = {}) {
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}`
  const server = launch(argv, { HOST: '127.0.0.1', PORT: String(port), ISSUER: issuer, ...env })
  let stopped: Promise<void> | undefined
  const stop = () => {
    stopped ??= server.stop().then((exit) => {
      expect(exit.code === 0 || exit.signal !== null, `exit ${JSON.stringify(exit)}\n${server.output().stderr}`).toBe(
        true,
      )
    })
    return stopped
  }
  try {
    await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`, 40_000)
  } catch (err) {
    await server.stop().catch(() => undefined)
    throw err
  }
  return { server, issuer, stop }
}

function tempConfig(value: unknown): string {
  const file = writeConfig(value)
  cleanups.push(file.remove)
  return file.path
}

describe('gatehouse command line', () => {
  it('shows help for every command, on stdout, with status 0', async () => {
    const top = await ok(['--help'])
    for (const name of [
      'serve',
      'clients add',
      'clients list',
      'clients remove',
      'clients rotate-secret',
      'keys list',
      'keys rotate',
    ]) {
      expect(top.stdout).toContain(name)
    }
    expect((await ok(['help', 'clients', 'rotate-secret'])).stdout).toMatch(/--grace SECONDS/)
    expect((await ok(['clients', 'add', '--help'])).stdout).toMatch(/^Usage: gatehouse clients add --id ID/)
    expect((await ok(['help', 'keys'])).stdout).toMatch(/keys rotate/)
    expect((await ok(['--help'])).stdout).toMatch(/migrate {2,}apply the SQL migrations/)
    expect((await ok(['migrate', '--help'])).stdout).toMatch(/^Usage: gatehouse migrate/)
    expect((await ok(['serve', '--help'])).stdout).toMatch(/PORT/)
    expect((await ok(['--version'])).stdout.trim()).toBe(PACKAGE.version)
  })

  it('rejects an unknown command, flag or argument with a message, the usage and status 2', async () => {
    const flag = await fails(['clients', 'add', '--bogus'], 2, /^gatehouse: unknown option --bogus\n/)
    expect(flag.stderr).toContain('Usage: gatehouse clients add')
    const unknown = await fails(['frobnicate'], 2, /unknown command "frobnicate"/)
    expect(unknown.stderr).toContain('Usage: gatehouse <command>')
    await fails(['clients', 'rename'], 2, /unknown command "clients rename"/)
    await fails(['clients', 'list', 'extra'], 2, /unexpected argument "extra"/)
    await fails(['clients', 'remove'], 2, /missing ID/)
    await fails(['clients', 'add', '--id', 'x'], 2, /at least one --permission/)
    await fails(['clients', 'add', '--id', 'x', '--permission', 'bogus'], 2, /--permission "bogus": unknown permission/)
    await fails(
      ['clients', 'add', '--id', 'x', '--permission', 'gt:urn:ietf:params:oauth:grant-type:token-exchange'],
      2,
      /token-exchange needs a secret: add --generate-secret/,
    )
    await fails(['clients', 'rotate-secret', 'x', '--grace', 'soon'], 2, /--grace must be a number of seconds/)
    await fails(['keys', 'rotate', '--alg', 'HS256'], 2, /--alg must be one of/)
    expect((await gatehouse([])).code).toBe(2)
  })

  it('#28 item 7 migrate --print writes the migrations as SQL and opens no store; --from picks the later ones', async () => {
    // A PostgreSQL URL nothing listens on: --print must not connect to it.
    const env = { DATABASE_URL: 'postgres://ops@127.0.0.1:1/test', GATEHOUSE_PG_SCHEMA: 'gh_print' }
    const sqlite = (await ok(['migrate', '--print', 'sqlite'], env)).stdout
    expect(sqlite).toMatch(/^CREATE TABLE IF NOT EXISTS gatehouse_clients \(/m)
    expect(sqlite).toContain('INSERT INTO gatehouse_migrations (version, name) VALUES (1, ')
    const postgres = (await ok(['migrate', '--print', 'postgres'], env)).stdout
    expect(postgres).toContain('CREATE SCHEMA IF NOT EXISTS "gh_print";')
    expect(postgres).toContain('"gh_print".gatehouse_clients')
    const later = (await ok(['migrate', '--print', 'sqlite', '--from', '2'], env)).stdout
    expect(later).not.toContain('VALUES (1, ')
    expect(later).toContain('VALUES (2, ')
    await fails(['migrate', '--from', '2'], 2, /--from needs --print/)
    await fails(['migrate', '--print', 'mysql'], 2, /--print must be one of sqlite, postgres/)
    await fails(['migrate', '--print', 'sqlite', '--from', 'two'], 2, /--from must be a version number/)
  })

  it.each([
    [
      'PostgreSQL',
      { DATABASE_URL: 'postgres://ops:hunter2@127.0.0.1:1/test' },
      /cannot connect to PostgreSQL at 127\.0\.0\.1:1/,
    ],
    ['Redis', { REDIS_URL: 'redis://ops:hunter2@127.0.0.1:1' }, /cannot connect to Redis at 127\.0\.0\.1:1/],
  ])('a %s store that cannot be reached fails with status 1 and no password', async (_name, env, message) => {
    const result = await fails(['clients', 'list'], 1, message, env)
    expect(result.stderr).not.toContain('hunter2')
  })

  it('#40 item 5: clients add on the in-memory store without a file says why (another process) and what to do (demo clients, --config, a persistent store)', async () => {
    const result = await fails(['clients', 'add', '--id', 'my-cli', '--permission', 'ept:token'], 1, /in-memory store/)
    expect(result.stderr).toContain("inside the running server's process, which this command cannot reach")
    expect(result.stderr).toContain('demo-cli (device flow) and demo-agent (token exchange)')
    expect(result.stderr).toContain('--config FILE')
    expect(result.stderr).toContain('GATEHOUSE_STORE=sqlite')
  })

  describe('with the in-memory store: the configuration file', () => {
    it('#29 token exchange: clients add knows the token exchange permission', async () => {
      const path = tempConfig(BASE)
      const exchange = 'gt:urn:ietf:params:oauth:grant-type:token-exchange'
      const added = await ok([
        'clients',
        'add',
        '--config',
        path,
        '--id',
        'agent',
        '--generate-secret',
        '--permission',
        'ept:token',
        '--permission',
        exchange,
        '--permission',
        'scp:api1',
      ])
      expect(added.stderr).toMatch(/Added client "agent" \(confidential\)/)
      const file = JSON.parse(readFileSync(path, 'utf8')) as typeof BASE
      expect(file.clients.at(-1)).toMatchObject({ clientId: 'agent', permissions: ['ept:token', exchange, 'scp:api1'] })
    })

    it('#29 device flow: clients add knows the device permissions, and a public client (no secret) may hold them', async () => {
      const path = tempConfig(BASE)
      const device = 'gt:urn:ietf:params:oauth:grant-type:device_code'
      const help = await ok(['clients', 'add', '--help'])
      expect(help.stdout).toContain('ept:device_authorization')
      expect(help.stdout).toContain(device)
      const added = await ok([
        'clients',
        'add',
        '--config',
        path,
        '--id',
        'my-cli',
        '--permission',
        'ept:device_authorization',
        '--permission',
        'ept:token',
        '--permission',
        device,
        '--permission',
        'scp:openid',
      ])
      expect(added.stderr).toMatch(/Added client "my-cli" \(public\)/)
      const file = JSON.parse(readFileSync(path, 'utf8')) as typeof BASE
      expect(file.clients.at(-1)).toMatchObject({
        clientId: 'my-cli',
        permissions: ['ept:device_authorization', 'ept:token', device, 'scp:openid'],
      })
    })

    it('#30 back-channel logout: clients add --backchannel-logout-uri and --backchannel-logout-session-required go to the file', async () => {
      const path = tempConfig(BASE)
      const uri = 'https://app.example.test/backchannel-logout'
      const flags = ['--id', 'bcl-app', '--backchannel-logout-uri', uri, '--backchannel-logout-session-required']
      const added = await ok(['clients', 'add', '--config', path, ...flags, '--permission', 'ept:authorization'])
      expect(JSON.parse(readFileSync(path, 'utf8')).clients.at(-1)).toMatchObject({
        clientId: 'bcl-app',
        backchannelLogoutUri: uri,
        backchannelLogoutSessionRequired: true,
      })
      expect(added.stderr).toMatch(/Added client "bcl-app"/)
      await fails(
        [
          'clients',
          'add',
          '--config',
          path,
          '--id',
          'x',
          '--permission',
          'ept:authorization',
          '--backchannel-logout-uri',
          'http://app.example.test/bcl',
        ],
        2,
        /backchannel-logout-uri|backchannelLogoutUri/,
      )
    })

    it('clients add, list, rotate-secret and remove edit the file; gatehouse serve serves it', async () => {
      const path = tempConfig(BASE)
      const config = ['--config', path]
      const added = await ok([
        'clients',
        'add',
        ...config,
        '--id',
        'cli-job',
        '--name',
        'CLI job',
        '--generate-secret',
        ...PERMISSIONS,
      ])
      const first = printedSecret(added)
      expect(added.stderr).toMatch(/Added client "cli-job" \(confidential\)/)
      const file = JSON.parse(readFileSync(path, 'utf8')) as typeof BASE
      // the rest of the file as it was; the new client with the secret's hash, never the secret
      expect(file.users).toEqual(BASE.users)
      expect(file.clients.slice(0, -1)).toEqual(BASE.clients)
      expect(file.clients.at(-1)).toMatchObject({
        clientId: 'cli-job',
        displayName: 'CLI job',
        clientSecret: expect.stringMatching(/^pbkdf2-sha256\$1000\$/),
      })
      expect(readFileSync(path, 'utf8')).not.toContain(first)

      const again = await ok(['clients', 'add', ...config, '--id', 'cli-job', '--generate-secret', ...PERMISSIONS])
      expect(again.stdout).toBe('')
      expect(again.stderr).toMatch(/"cli-job" already exists: skipped/)

      const list = await ok(['clients', 'list', ...config])
      expect(list.stdout).toMatch(/^ID\s+TYPE\s+NAME\s+PERMISSIONS\s+SECRETS$/m)
      expect(list.stdout).toMatch(
        /^cli-job\s+confidential\s+CLI job\s+ept:token gt:client_credentials scp:api1\s+\S{16}$/m,
      )
      expect(list.stdout).not.toMatch(/pbkdf2|rt-service-secret/)
      const listed = JSON.parse((await ok(['clients', 'list', ...config, '--json'])).stdout) as { clientId: string }[]
      const expected = [...BASE.clients.map((client) => client.clientId), 'cli-job'].sort()
      expect(listed.map((client) => client.clientId)).toEqual(expected)

      const running = await serve([...BIN, 'serve', ...config])
      cleanups.push(running.stop)
      expect(running.server.output().stdout).toMatch(/Gatehouse \(node\) listening on/)
      expect(await tokenStatus(running.issuer, 'cli-job', first)).toBe(200)

      const rotated = await ok(['clients', 'rotate-secret', 'cli-job', ...config])
      const second = printedSecret(rotated)
      expect(rotated.stderr).toMatch(/restarts/)
      // the running server keeps the file it started with; a restart loads the new secret only
      expect(await tokenStatus(running.issuer, 'cli-job', first)).toBe(200)
      await running.stop()
      const restarted = await serve([...BIN, 'serve', ...config])
      cleanups.push(restarted.stop)
      expect(await tokenStatus(restarted.issuer, 'cli-job', second)).toBe(200)
      expect(await tokenStatus(restarted.issuer, 'cli-job', first)).toBe(401)

      await ok(['clients', 'remove', 'cli-job', ...config])
      expect((JSON.parse(readFileSync(path, 'utf8')) as typeof BASE).clients).toEqual(BASE.clients)
      await fails(['clients', 'remove', 'cli-job', ...config], 1, /client "cli-job" is not in/)
    }, 90_000)

    it('a secret can come from stdin, and is then not printed', async () => {
      const path = tempConfig(BASE)
      const result = await ok(
        ['clients', 'add', '--config', path, '--id', 'piped', '--secret', '-', ...PERMISSIONS],
        {},
        'a-secret-from-stdin\n',
      )
      expect(result.stdout).toBe('')
      const running = await serve([...BIN, 'serve', '--config', path])
      cleanups.push(running.stop)
      expect(await tokenStatus(running.issuer, 'piped', 'a-secret-from-stdin')).toBe(200)
    })

    it('without a configuration file there is nothing to edit; keys commands explain why they cannot work', async () => {
      await fails(['clients', 'add', '--id', 'x', '--generate-secret', ...PERMISSIONS], 1, /--config FILE/)
      const path = tempConfig(BASE)
      await fails(['keys', 'list', '--config', path], 1, /signing keys live only inside a running server process/)
      const rotate = await fails(['keys', 'rotate', '--config', path], 1, /running server process/)
      expect(rotate.stderr).toMatch(/GATEHOUSE_STORE=pglite, DATABASE_URL or REDIS_URL/)
    })
  })
})

const tag = `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`

const stores = [
  {
    name: 'PostgreSQL',
    url: process.env.DATABASE_URL,
    /** Only serve and migrate change the schema (#27 item 13): the client commands need it migrated. */
    migrate: true,
    env: (url: string) => ({ GATEHOUSE_STORE: 'postgres', DATABASE_URL: url, GATEHOUSE_PG_SCHEMA: `gh_cli_${tag}` }),
    async cleanup(url: string) {
      const sql = postgres(url, { max: 1, onnotice: () => {} })
      await sql.unsafe(`DROP SCHEMA IF EXISTS "gh_cli_${tag}" CASCADE`)
      await sql.end()
    },
  },
  {
    name: 'Redis',
    url: process.env.REDIS_URL,
    migrate: false,
    env: (url: string) => ({ GATEHOUSE_STORE: 'redis', REDIS_URL: url, GATEHOUSE_REDIS_PREFIX: `gh-cli-${tag}:` }),
    async cleanup(url: string) {
      const store = createRedisStore({ url, prefix: `gh-cli-${tag}:` })
      await store.connect()
      await store.clear()
      await store.close()
    },
  },
]

interface SecretView {
  id: string
  expiresAt?: number
}
interface KeyView {
  kid: string
  alg: string
  activatesAt: number
  retiresAt?: number
}

describe.each(stores)('gatehouse on a $name store', ({ url, env: storeEnv, migrate, cleanup }) => {
  const env = url ? storeEnv(url) : {}
  const args: string[] = []
  let config: ReturnType<typeof writeConfig> | undefined
  let running: Awaited<ReturnType<typeof serve>> | undefined
  const secrets: string[] = []

  beforeAll(() => {
    if (!url) return
    config = writeConfig(BASE)
    args.push('--config', config.path)
  })

  afterAll(async () => {
    await running?.stop()
    config?.remove()
    if (url) await cleanup(url)
  })

  const listClient = async (id: string) => {
    const clients = JSON.parse((await ok(['clients', 'list', ...args, '--json'], env)).stdout) as {
      clientId: string
      secrets: SecretView[]
    }[]
    return clients.find((client) => client.clientId === id)
  }

  it.runIf(url)(
    'clients add: the printed secret gets a token from an npm start server on that store',
    async () => {
      if (migrate) await ok(['migrate', ...args], env)
      const added = await ok(['clients', 'add', ...args, '--id', 'cli-job', '--generate-secret', ...PERMISSIONS], env)
      secrets.push(printedSecret(added))
      expect(added.stderr).toMatch(/^Using the (PostgreSQL|Redis) store at /)
      expect(added.stderr).toMatch(/Registered client "cli-job" \(confidential\)/)
      const again = await ok(['clients', 'add', ...args, '--id', 'cli-job', '--generate-secret', ...PERMISSIONS], env)
      expect(again.stdout).toBe('')
      expect(again.stderr).toMatch(/already exists: skipped/)
      const listed = await ok(['clients', 'list', ...args], env)
      expect(listed.stdout).toMatch(
        /^cli-job\s+confidential\s+cli-job\s+ept:token gt:client_credentials scp:api1\s+\S{16}$/m,
      )
      expect(listed.stdout + (await ok(['clients', 'list', ...args, '--json'], env)).stdout).not.toMatch(/pbkdf2/)

      running = await serve(['npm', 'start', '--', ...args], env)
      expect(await tokenStatus(running.issuer, 'cli-job', secrets[0] as string)).toBe(200)
    },
    90_000,
  )

  it.runIf(url)(
    'clients rotate-secret: the new secret works, the old one during the grace period',
    async () => {
      const issuer = running?.issuer as string
      const before = nowSeconds()
      const rotated = await ok(['clients', 'rotate-secret', 'cli-job', ...args], env)
      secrets.push(printedSecret(rotated))
      const client = await listClient('cli-job')
      expect(client?.secrets).toHaveLength(2)
      const [old, added] = (client?.secrets ?? []) as [SecretView, SecretView]
      expect(old.expiresAt).toBeGreaterThanOrEqual(before + 86_400)
      expect(added.expiresAt).toBeUndefined()
      expect(rotated.stderr).toContain(`Retired secret ${old.id}`)
      await sleep(CLIENT_CACHE_MS) // the running server's client cache
      expect(await tokenStatus(issuer, 'cli-job', secrets[1] as string)).toBe(200)
      expect(await tokenStatus(issuer, 'cli-job', secrets[0] as string)).toBe(200)
    },
    60_000,
  )

  it.runIf(url)(
    'clients rotate-secret --grace 0: the old secrets stop working',
    async () => {
      const issuer = running?.issuer as string
      const rotated = await ok(['clients', 'rotate-secret', 'cli-job', '--grace', '0', '--json', ...args], env)
      const result = JSON.parse(rotated.stdout) as { added: { id: string; secret: string }; retired: SecretView[] }
      expect(result.retired).toHaveLength(2)
      secrets.push(result.added.secret)
      await sleep(CLIENT_CACHE_MS)
      expect(await tokenStatus(issuer, 'cli-job', secrets[2] as string)).toBe(200)
      expect(await tokenStatus(issuer, 'cli-job', secrets[1] as string)).toBe(401)
      expect(await tokenStatus(issuer, 'cli-job', secrets[0] as string)).toBe(401)
    },
    60_000,
  )

  it.runIf(url)(
    '#17.3 clients rotate-secret refuses a client the configuration file lists (the file decides its secret)',
    async () => {
      await fails(['clients', 'rotate-secret', 'rt-service', ...args], 1, /listed in .*change clientSecret there/, env)
    },
  )

  it.runIf(url)('keys rotate publishes new keys that keys list shows', async () => {
    const before = JSON.parse((await ok(['keys', 'list', ...args, '--json'], env)).stdout) as KeyView[]
    const signing = before.find((key) => key.alg === 'ES256' && key.retiresAt === undefined) as KeyView
    expect(signing).toBeDefined()
    const rotated = await ok(['keys', 'rotate', '--alg', 'ES256', ...args, '--json'], env)
    const [created, ...more] = JSON.parse(rotated.stdout) as KeyView[]
    expect(more).toEqual([])
    expect(created).toMatchObject({ alg: 'ES256', activatesAt: expect.any(Number) })
    expect(rotated.stderr).toMatch(/Published 1 new key/)
    const after = JSON.parse((await ok(['keys', 'list', ...args, '--json'], env)).stdout) as KeyView[]
    expect(after.map((key) => key.kid)).toEqual(expect.arrayContaining([...before.map((key) => key.kid), created?.kid]))
    expect(after.find((key) => key.kid === signing.kid)?.retiresAt).toBe(created?.activatesAt)
    const table = (await ok(['keys', 'list', ...args], env)).stdout
    expect(table).toMatch(new RegExp(`^${created?.kid}\\s+ES256\\s+next\\s`, 'm'))
    expect(table).not.toMatch(/"d"|privateJwk/)
  })

  it.runIf(url)(
    'clients remove: the client is gone',
    async () => {
      await ok(['clients', 'remove', 'cli-job', ...args], env)
      expect(await listClient('cli-job')).toBeUndefined()
      await fails(['clients', 'remove', 'cli-job', ...args], 1, /client "cli-job" does not exist/, env)
      await sleep(CLIENT_CACHE_MS)
      expect(await tokenStatus(running?.issuer as string, 'cli-job', secrets[2] as string)).toBe(401)
    },
    60_000,
  )
})

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000)
}

describe('#27 item 13 only serve and migrate change the store’s schema', () => {
  const schema = `gh_cli_nm_${tag}`
  const url = process.env.DATABASE_URL

  afterAll(async () => {
    if (!url) return
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await sql.end()
  })

  it.runIf(url)(
    '#27 item 13 on a PostgreSQL schema nobody migrated, clients list and keys list say "not migrated" and create nothing; after gatehouse migrate they work',
    async () => {
      const env = { DATABASE_URL: url as string, GATEHOUSE_PG_SCHEMA: schema }
      for (const args of [
        ['clients', 'list'],
        ['keys', 'list'],
        ['clients', 'remove', 'x'],
      ]) {
        await fails(args, 1, new RegExp(`schema ${schema}\\) is not migrated .*run "gatehouse migrate"`), env)
      }
      const sql = postgres(url as string, { max: 1, onnotice: () => {} })
      try {
        expect(await sql`SELECT 1 FROM information_schema.schemata WHERE schema_name = ${schema}`).toHaveLength(0)
      } finally {
        await sql.end()
      }
      expect((await ok(['migrate'], env)).stdout).toMatch(/applied migration/)
      expect((await ok(['clients', 'list'], env)).stderr).toMatch(/No clients\./)
    },
    60_000,
  )

  it('#27 item 13 on a PGlite directory that does not exist, clients list says so and creates nothing', async () => {
    const dir = join(tmpdir(), `gatehouse-nm-${tag}`)
    await fails(['clients', 'list'], 1, /does not exist: run "gatehouse migrate"/, {
      GATEHOUSE_STORE: 'pglite',
      GATEHOUSE_DATA_DIR: dir,
    })
    expect(existsSync(dir)).toBe(false)
  }, 60_000)
})
