/**
 * Spawning the real start scripts: a JSON configuration file in a temp dir, a free port, a child
 * process in its own process group, readiness by polling discovery, and a SIGTERM stop that must
 * end the process within a few seconds. No `.test` suffix: used by the runtime test files.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { node22Binary } from '../storage/sqlite_node22.ts'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const RU = 'http://127.0.0.1:9/callback'
export const PLRU = 'http://127.0.0.1:9/logged-out'

/** Stands for a Node 22+ binary in a runtime row's command (`npm run start:workers` needs Node 22: Miniflare). */
export const NODE_22 = '<node 22+>'

/** The `workers` row of the runtime matrix: workerd through Miniflare, launched by Node 22+. */
export const WORKERS_COMMAND = [NODE_22, '--import', 'tsx', 'bin/serve_workers.ts']

/** A binary of the project's dev dependencies. */
export const bin = (name: string): string => join(ROOT, 'node_modules/.bin', name)

/** A row of the runtime matrix: the standalone server's command on one runtime. */
export interface RuntimeRow {
  name: string
  command: string[]
  // Runtime gaps go here as flags with a reason, e.g. `skipLogout: true, // Bun does not …`.
  // None are needed at present: every runtime passes every flow.
}

/** The runtime matrix every runtime test runs on. */
export const RUNTIMES: RuntimeRow[] = [
  { name: 'node', command: [bin('tsx'), 'bin/serve_node.ts'] },
  { name: 'bun', command: [bin('bun'), 'run', 'bin/serve_bun.ts'] },
  { name: 'deno', command: [bin('deno'), 'run', '--allow-net', '--allow-env', '--allow-read', 'bin/serve_deno.ts'] },
  // #28: workerd (Cloudflare's Workers runtime) through `npm run start:workers`, on its default
  // store, a local D1 (in the fresh GATEHOUSE_DATA_DIR `launch` gives each process).
  { name: 'workers', command: WORKERS_COMMAND },
]

/**
 * A Node 22+ binary: this one when it is, else GATEHOUSE_NODE22 or the one in .tools/node22 (as the
 * SQLite and D1 tests find it), else the registry's platform package of Node 22, cached under
 * ~/.cache/gatehouse-test (as test/package/pack.test.ts gets other majors).
 */
export async function node22(): Promise<string> {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath
  const given = node22Binary()
  if (given !== undefined) return given
  const dir = join(homedir(), '.cache/gatehouse-test', 'node-22')
  const pkg = `node-${process.platform}-${process.arch}`
  const binary = join(dir, 'node_modules', pkg, 'bin/node')
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'package.json'), '{"private":true}')
    await new Promise<void>((resolveInstall, reject) => {
      execFile('npm', ['install', '--no-save', '--ignore-scripts', `${pkg}@22`], { cwd: dir }, (err) =>
        err ? reject(err) : resolveInstall(),
      )
    })
  }
  return binary
}

/** `command` with NODE_22 replaced by a Node 22+ binary. */
export async function runnable(command: string[]): Promise<string[]> {
  return command[0] === NODE_22 ? [await node22(), ...command.slice(1)] : command
}

/** The configuration file of the runtime tests: plain secrets and passwords, fast hashing. */
export const CONFIG = {
  secretHashIterations: 1000,
  /** #29: the device flow's polling interval (default 5 s), short so the runtime matrix waits little. */
  deviceCodeInterval: 1,
  /** #41: the CIBA polling interval (default 5 s), short for the same reason. */
  cibaInterval: 1,
  clients: [
    /** An agent that asks the user first (OpenID CIBA, #41): a confidential poll client. */
    {
      clientId: 'rt-ciba',
      clientSecret: 'rt-ciba-secret',
      displayName: 'Runtime CIBA agent',
      permissions: [
        'ept:backchannel_authentication',
        'ept:token',
        'gt:urn:openid:params:grant-type:ciba',
        'scp:openid',
      ],
    },
    {
      clientId: 'rt-service',
      clientSecret: 'rt-service-secret',
      displayName: 'Runtime test service',
      permissions: ['ept:token', 'ept:introspection', 'ept:revocation', 'gt:client_credentials', 'scp:api1'],
    },
    /** A resource server: introspects tokens whose audience is `api1`. */
    { clientId: 'api1', clientSecret: 'api1-secret', permissions: ['ept:introspection'] },
    /** An agent that exchanges tokens (RFC 8693, #29). */
    {
      clientId: 'rt-agent',
      clientSecret: 'rt-agent-secret',
      permissions: ['ept:token', 'gt:urn:ietf:params:oauth:grant-type:token-exchange', 'scp:api1'],
    },
    /** A CLI signing in with the device authorization grant (RFC 8628, #29): a public client. */
    {
      clientId: 'rt-cli',
      permissions: [
        'ept:device_authorization',
        'ept:token',
        'gt:urn:ietf:params:oauth:grant-type:device_code',
        'gt:refresh_token',
        'scp:openid',
        'scp:profile',
        'scp:offline_access',
        'scp:api1',
      ],
    },
    /** Service clients restricted to source networks: loopback (the tests' own) and elsewhere. */
    {
      clientId: 'rt-loopback',
      clientSecret: 'rt-loopback-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
      allowedNetworks: ['127.0.0.0/8', '::1'],
    },
    {
      clientId: 'rt-internal',
      clientSecret: 'rt-internal-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
      allowedNetworks: ['10.0.0.0/8'],
    },
    {
      clientId: 'rt-web',
      clientSecret: 'rt-web-secret',
      displayName: 'Runtime test web app',
      permissions: [
        'ept:authorization',
        'ept:token',
        'ept:logout',
        'ept:revocation',
        'ept:introspection',
        'gt:authorization_code',
        'gt:refresh_token',
        'rst:code',
        'scp:openid',
        'scp:profile',
        'scp:email',
        'scp:api1',
      ],
      redirectUris: [RU],
      postLogoutRedirectUris: [PLRU],
    },
  ],
  users: [
    {
      sub: 'user-1',
      username: 'alice',
      password: 'alice-password',
      email: 'alice@example.com',
      email_verified: true,
      given_name: 'Alice',
      family_name: 'Example',
    },
  ],
}

/** Writes `config` as JSON into a new temp dir; returns the file path and a cleanup. */
export function writeConfig(config: unknown): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-runtime-'))
  const path = join(dir, 'gatehouse.json')
  writeFileSync(path, JSON.stringify(config, null, 2))
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      if (address === null || typeof address === 'string') return reject(new Error('no port'))
      server.close(() => resolvePort(address.port))
    })
  })
}

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface Running {
  child: ChildProcess
  /** Everything the process wrote so far. */
  output(): { stdout: string; stderr: string }
  /** Resolves when the process has exited. */
  exited: Promise<Exit>
  /** SIGTERM to the process group; resolves with how it exited, rejects after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<Exit>
}

/** The test process's environment without the store selection (CI sets DATABASE_URL for the store tests). */
function inherited(): Record<string, string | undefined> {
  const env = { ...process.env }
  for (const name of Object.keys(env)) {
    if (
      ['DATABASE_URL', 'REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS', 'REDIS_SENTINEL_NAME'].includes(name) ||
      name.startsWith('GATEHOUSE_')
    ) {
      delete env[name]
    }
  }
  return env
}

/** Spawns `command` in its own process group (so a stop reaches npm, tsx and their children). */
export function launch(command: string[], env: Record<string, string>, cwd: string = ROOT): Running {
  const [file, ...args] = command as [string, ...string[]]
  // A persistent store's folder (start:workers keeps its local D1 there by default): a fresh one
  // per process, removed when it exits, unless the test shares one on purpose.
  const dataDir = env.GATEHOUSE_DATA_DIR === undefined ? mkdtempSync(join(tmpdir(), 'gatehouse-data-')) : undefined
  const child = spawn(file, args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...inherited(),
      NO_COLOR: '1',
      DENO_NO_UPDATE_CHECK: '1',
      ...(dataDir ? { GATEHOUSE_DATA_DIR: dataDir } : {}),
      ...env,
    },
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<Exit>((resolveExit) => {
    child.once('exit', (code, signal) => resolveExit({ code, signal }))
    child.once('error', (err) => {
      stderr += `spawn failed: ${err.message}\n`
      resolveExit({ code: null, signal: null })
    })
  })
  let finished = false
  void exited.then(() => {
    finished = true
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })
  return {
    child,
    output: () => ({ stdout, stderr }),
    exited,
    async stop(timeoutMs = 5000) {
      if (!finished && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGTERM')
        } catch {
          // already gone
        }
      }
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          if (child.pid !== undefined) {
            try {
              process.kill(-child.pid, 'SIGKILL')
            } catch {
              // already gone
            }
          }
          reject(new Error(`${command.join(' ')} did not exit within ${timeoutMs} ms of SIGTERM\n${stderr}`))
        }, timeoutMs)
      })
      try {
        return await Promise.race([exited, timeout])
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

/**
 * Polls `url` until it answers 200. Fails with the process's output when it exits first or does
 * not answer within `timeoutMs`.
 */
export async function waitUntilServing(running: Running, url: string, timeoutMs = 20_000): Promise<void> {
  let exit: Exit | undefined
  void running.exited.then((value) => {
    exit = value
  })
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < deadline) {
    if (exit) {
      const { stdout, stderr } = running.output()
      throw new Error(
        `the server exited (code ${exit.code}, signal ${exit.signal}) before serving ${url}\nstderr:\n${stderr}\nstdout:\n${stdout}`,
      )
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) })
      if (response.status === 200) {
        await response.body?.cancel()
        return
      }
      last = `status ${response.status}: ${(await response.text()).slice(0, 200)}`
    } catch (err) {
      last = (err as Error).message
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  const { stdout, stderr } = running.output()
  throw new Error(
    `${url} did not answer within ${timeoutMs} ms (last: ${last})\nstderr:\n${stderr}\nstdout:\n${stdout}`,
  )
}

/** A cookie jar for `fetch` with `redirect: 'manual'`: Set-Cookie in, Cookie out. */
export class CookieJar {
  readonly cookies = new Map<string, string>()

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';')
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      if (attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  /** One request with the jar's cookies; redirects are not followed. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (this.cookies.size > 0) headers.set('cookie', this.header())
    const response = await fetch(url, { ...init, headers, redirect: 'manual' })
    this.store(response)
    return response
  }
}

/** The processes still alive in process group `pgid` (a detached child's group is its pid). */
export async function groupMembers(pgid: number): Promise<string[]> {
  const { execFile } = await import('node:child_process')
  const listing = await new Promise<string>((resolveListing) => {
    execFile('ps', ['-o', 'pid=,stat=,args=', '-g', String(pgid)], (_err, stdout) => resolveListing(stdout))
  })
  // A zombie (stat Z) has exited; only its parent has not collected it yet.
  return listing
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^\d+\s+Z/.test(line))
}

/**
 * Sends `signal` to the launched process alone (not its group: what a supervisor or a container
 * runtime does with the PID it started) and resolves once no process of its group is left and
 * `url` no longer answers; rejects after `timeoutMs` with what is still running.
 */
export async function stopsOnSignalToLeader(
  running: Running,
  url: string,
  signal: NodeJS.Signals = 'SIGTERM',
  timeoutMs = 15_000,
): Promise<void> {
  const pid = running.child.pid as number
  process.kill(pid, signal)
  const deadline = Date.now() + timeoutMs
  let left: string[] = []
  let answering = true
  while (Date.now() < deadline) {
    left = await groupMembers(pid)
    answering = await fetch(url, { signal: AbortSignal.timeout(1000) })
      .then(async (response) => {
        await response.body?.cancel()
        return true
      })
      .catch(() => false)
    if (left.length === 0 && !answering) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(
    `${signal} to ${pid} left ${answering ? `${url} answering and ` : ''}these processes running:\n${left.join('\n')}\n${running.output().stderr}`,
  )
}
