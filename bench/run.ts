/**
 * `npm run bench`: Gatehouse against node-oidc-provider and the ideal ceiling, side by side in
 * one run, on loopback. For every round, scenario and server (servers in rotating order per
 * round) it starts a FRESH server process pinned to core 0, a separate load process (autocannon,
 * bench/load.ts) pinned to core 1, warms up, measures, records the server's peak RSS and stops
 * it. Medians over rounds go to stdout and bench/RESULTS.md. See bench/README.md.
 *
 * Flags: --quick (smoke run, ~2 min), --only=ID,ID (servers), --scenario=ID,ID.
 * Environment: BENCH_SECONDS (measured, default 10), BENCH_WARMUP (5), BENCH_ROUNDS (3),
 * BENCH_CONNECTIONS (16), BENCH_STORE_TOKENS (1,000,000), DATABASE_URL, REDIS_URL.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { availableParallelism, release, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { Flavor, LoadResult, LoadSpec, Scenario } from './load.ts'
import {
  type Cell,
  type ReportInput,
  type Sample,
  bridgeTable,
  mainTable,
  ratioTable,
  storeTable,
  summarize,
} from './report.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
const quick = args.includes('--quick')
const listFlag = (name: string) =>
  args
    .find((a) => a.startsWith(`${name}=`))
    ?.slice(name.length + 1)
    .split(',')
const envNumber = (name: string, fallback: number) => {
  const value = process.env[name]
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(value)}`)
  return n
}

const settings = {
  warmupSeconds: envNumber('BENCH_WARMUP', quick ? 1 : 5),
  seconds: envNumber('BENCH_SECONDS', quick ? 2 : 10),
  rounds: envNumber('BENCH_ROUNDS', quick ? 1 : 3),
  connections: envNumber('BENCH_CONNECTIONS', 16),
  storeTokens: envNumber('BENCH_STORE_TOKENS', quick ? 100_000 : 1_000_000),
}

// ---------------------------------------------------------------------------------------------
// Scenarios and servers

interface ScenarioDef {
  id: string
  label: string
  load: Scenario
  /** Refresh tokens the server seeds before listening (store-size scenarios, memory store only). */
  seed?: number
}

const SCENARIOS: ScenarioDef[] = [
  { id: 'client_credentials', label: 'client_credentials (ES256 JWT)', load: 'client_credentials' },
  { id: 'introspection', label: 'introspection, valid access token', load: 'introspection' },
  { id: 'authorization_code', label: 'code redemption (PKCE)', load: 'authorization_code' },
  { id: 'refresh_token', label: 'refresh (rotation)', load: 'refresh_token' },
  { id: 'bridge', label: 'trivial form → JSON handler (Node bridges)', load: 'trivial' },
  { id: 'store_1k', label: 'introspection, 1,000 refresh tokens in store', load: 'introspection_store', seed: 1000 },
  {
    id: 'store_big',
    label: `introspection, ${settings.storeTokens.toLocaleString('en-US')} refresh tokens in store`,
    load: 'introspection_store',
    seed: settings.storeTokens,
  },
]

interface ServerDef {
  id: string
  label: string
  flavor: Flavor
  command: string[]
  env?: Record<string, string>
  scenarios: string[]
  /** Set when the server cannot run here: every row says why. */
  skip?: string
}

const node = [process.execPath, '--import', 'tsx']
const bun = join(root, 'node_modules/.bin/bun')
const deno = join(root, 'node_modules/.bin/deno')
const USER_FLOWS = ['client_credentials', 'introspection', 'authorization_code', 'refresh_token']

/** A shared-store row runs only when its server's URL is set. */
async function storeSkip(_store: string, variable: string): Promise<string | undefined> {
  return process.env[variable] ? undefined : `skipped: ${variable} not set`
}

const SERVERS: ServerDef[] = [
  {
    id: 'gatehouse-node',
    label: 'Gatehouse · Node · memory',
    flavor: 'gatehouse',
    command: [...node, '--expose-gc', 'bench/servers/gatehouse_node.ts'],
    scenarios: [...USER_FLOWS, 'store_1k', 'store_big'],
  },
  {
    id: 'gatehouse-node-inline',
    label: 'Gatehouse · Node · memory, inline signing',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { SIGNER: 'inline' },
    scenarios: ['client_credentials'],
  },
  {
    id: 'gatehouse-node-postgres',
    label: 'Gatehouse · Node · PostgreSQL',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { STORE: 'postgres' },
    scenarios: USER_FLOWS,
    skip: await storeSkip('createPostgresStore', 'DATABASE_URL'),
  },
  {
    id: 'gatehouse-node-redis',
    label: 'Gatehouse · Node · Redis',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { STORE: 'redis' },
    scenarios: USER_FLOWS,
    skip: await storeSkip('createRedisStore', 'REDIS_URL'),
  },
  {
    id: 'gatehouse-bun',
    label: 'Gatehouse · Bun · memory',
    flavor: 'gatehouse',
    command: [bun, 'run', 'bench/servers/gatehouse_bun.ts'],
    scenarios: USER_FLOWS,
  },
  {
    id: 'gatehouse-deno',
    label: 'Gatehouse · Deno · memory',
    flavor: 'gatehouse',
    command: [
      deno,
      'run',
      '--allow-net',
      '--allow-env',
      '--allow-read',
      '--allow-write',
      'bench/servers/gatehouse_deno.ts',
    ],
    scenarios: USER_FLOWS,
  },
  {
    id: 'oidc-provider',
    label: 'node-oidc-provider',
    flavor: 'oidc-provider',
    command: [...node, 'bench/servers/oidc_provider.ts'],
    scenarios: USER_FLOWS,
  },
  {
    id: 'ceiling-jose',
    label: 'ceiling: node:http + jose',
    flavor: 'ceiling',
    command: [...node, 'bench/servers/ceiling_node.ts'],
    env: { SIGNER: 'jose' },
    scenarios: ['client_credentials', 'introspection'],
  },
  {
    id: 'ceiling-crypto',
    label: 'ceiling: node:http + node:crypto',
    flavor: 'ceiling',
    command: [...node, 'bench/servers/ceiling_node.ts'],
    env: { SIGNER: 'crypto' },
    scenarios: ['client_credentials', 'introspection'],
  },
  {
    id: 'ceiling-crypto-batch',
    label: 'ceiling: node:http + node:crypto, batched signing',
    flavor: 'ceiling',
    command: [...node, 'bench/servers/ceiling_node.ts'],
    env: { SIGNER: 'crypto-batch' },
    scenarios: ['client_credentials'],
  },
  ...(['bare', 'gatehouse', 'hattip', 'hattip-buffered'] as const).map(
    (bridge): ServerDef => ({
      id: `bridge-${bridge}`,
      label: {
        bare: 'bare node:http',
        gatehouse: 'adapters/node.ts (@hono/node-server)',
        hattip: '@hattip/adapter-node',
        'hattip-buffered': '@hattip/adapter-node, fast-fetch + buffered rawBody',
      }[bridge],
      flavor: 'bridge',
      command: [...node, 'bench/servers/bridge_node.ts'],
      env: { BRIDGE: bridge },
      scenarios: ['bridge'],
    }),
  ),
]

const onlyServers = listFlag('--only')
const onlyScenarios = listFlag('--scenario')
const servers = SERVERS.filter((s) => !onlyServers || onlyServers.includes(s.id))
const scenarios = SCENARIOS.filter((s) => !onlyScenarios || onlyScenarios.includes(s.id))

// ---------------------------------------------------------------------------------------------
// Processes

/** `taskset` pinning when it exists and there are two cores to split. */
const pinning = (() => {
  if (availableParallelism() < 2) return false
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
const pinned = (core: number, command: string[]) => (pinning ? ['taskset', '-c', String(core), ...command] : command)

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Spawns a command and resolves with the first stdout line starting with `prefix`. */
function waitForLine(child: ChildProcess, prefix: string, timeoutMs: number, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    const fail = (reason: string) => {
      clearTimeout(timer)
      reject(
        new Error(`${what}: ${reason}${stderr.trim() ? `\n${stderr.trim().split('\n').slice(-8).join('\n')}` : ''}`),
      )
    }
    const timer = setTimeout(() => fail(`no ${prefix} line after ${timeoutMs / 1000} s`), timeoutMs)
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
    lines.on('line', (line) => {
      if (!line.startsWith(prefix)) return
      clearTimeout(timer)
      resolve(line.slice(prefix.length).trim())
    })
    child.once('exit', (code, signal) => fail(`exited (${signal ?? code}) before ${prefix}`))
    child.once('error', (err) => fail(err.message))
  })
}

function start(command: string[], env: Record<string, string>): ChildProcess {
  const [file, ...rest] = command as [string, ...string[]]
  return spawn(file, rest, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

/** Peak resident set size (VmHWM) of a live process, bytes. */
function peakRss(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? Number(match[1]) * 1024 : Number.NaN
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100
  } catch {
    return 100
  }
})()

/** Busy and total time of one CPU since boot, seconds (/proc/stat). */
function cpuTimes(core: number): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`cpu${core} `))
  const [user, nice, system, idle, iowait, irq, softirq, steal] = (line ?? '').split(/\s+/).slice(1, 9).map(Number)
  const busy = [user, nice, system, irq, softirq, steal].reduce((a: number, b) => a + (b ?? 0), 0)
  return { busy: busy / CLOCK_TICKS, total: (busy + (idle ?? 0) + (iowait ?? 0)) / CLOCK_TICKS }
}

/** CPU time of a live process, all threads, seconds (/proc/<pid>/stat utime + stime). */
function processCpu(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

/**
 * Share of a core's time used by processes other than ours during a measurement: the machine is
 * shared, and anything else running on the server's or the load's core skews the result.
 */
function foreignShare(
  before: { busy: number; total: number },
  after: { busy: number; total: number },
  ours: number,
): number {
  const total = after.total - before.total
  return total > 0 ? Math.max(0, (after.busy - before.busy - ours) / total) : 0
}

// ---------------------------------------------------------------------------------------------
// One measurement

/** Highest rate seen per cell: sizes the pre-created codes of later rounds. */
const seenRate = new Map<string, number>()

function codesNeeded(scenario: ScenarioDef, server: ServerDef): number {
  if (scenario.load === 'refresh_token') return settings.connections + 10
  if (scenario.load !== 'authorization_code') return 0
  // Enough for the whole run at 1.5× the best rate seen (or a generous guess in round 1).
  const rate = seenRate.get(`${scenario.id}/${server.id}`) ?? 3000
  return Math.ceil(rate * 1.5 * (settings.warmupSeconds + settings.seconds)) + settings.connections + 10
}

async function measure(scenario: ScenarioDef, server: ServerDef, workdir: string): Promise<Sample> {
  const port = await freePort()
  const codesFile = join(workdir, `codes-${server.id}-${scenario.id}.txt`)
  const codes = codesNeeded(scenario, server)
  const child = start(pinned(0, server.command), {
    ...server.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    NODE_ENV: 'production',
    ...(codes > 0 ? { CODES: String(codes), CODES_FILE: codesFile } : {}),
    ...(scenario.seed ? { SEED_REFRESH_TOKENS: String(scenario.seed) } : {}),
  })
  try {
    const ready = JSON.parse((await waitForLine(child, 'READY', 300_000, server.id)) || '{}') as Record<string, unknown>
    const pid = typeof ready.pid === 'number' ? ready.pid : (child.pid as number)
    const spec: LoadSpec = {
      baseUrl: `http://127.0.0.1:${port}`,
      flavor: server.flavor,
      scenario: scenario.load,
      connections: settings.connections,
      warmupSeconds: settings.warmupSeconds,
      seconds: settings.seconds,
      ...(codes > 0 ? { codesFile } : {}),
      ...(scenario.seed ? { seedCount: scenario.seed } : {}),
    }
    const cpu = { server: cpuTimes(0), load: cpuTimes(1), serverCpu: processCpu(pid) }
    const load = start(pinned(1, [...node, 'bench/load.ts']), { LOAD_SPEC: JSON.stringify(spec) })
    const timeout = (settings.warmupSeconds + settings.seconds) * 1000 + 120_000
    const result = JSON.parse(await waitForLine(load, 'RESULT', timeout, `load on ${server.id}`)) as LoadResult
    const foreign = pinning
      ? {
          server: foreignShare(cpu.server, cpuTimes(0), processCpu(pid) - cpu.serverCpu),
          load: foreignShare(cpu.load, cpuTimes(1), result.cpuSeconds),
        }
      : undefined
    await stop(load)
    const key = `${scenario.id}/${server.id}`
    seenRate.set(key, Math.max(seenRate.get(key) ?? 0, result.rps))
    return { ...result, peakRss: peakRss(pid), ready, ...(foreign ? { foreign } : {}) }
  } finally {
    await stop(child)
    await rm(codesFile, { force: true })
  }
}

// ---------------------------------------------------------------------------------------------
// The run

function version(command: string[]): string {
  try {
    return (
      execFileSync(command[0] as string, command.slice(1), { encoding: 'utf8' })
        .split('\n')[0]
        ?.trim() ?? '?'
    )
  } catch {
    return 'not found'
  }
}

function machine(): string[] {
  const cpu = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown'
  const pkg = (name: string) =>
    JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version
  return [
    `- CPU: ${cpu}, ${availableParallelism()} cores; Linux ${release()}`,
    `- Node ${process.version}, Bun ${version([bun, '--version'])}, ${version([deno, '--version'])}`,
    `- oidc-provider ${pkg('oidc-provider')}, jose ${pkg('jose')}, autocannon ${pkg('autocannon')}`,
    `- date: ${new Date().toISOString()}`,
  ]
}

function commandLine(): string {
  const env = Object.entries(process.env)
    .filter(([name]) => name.startsWith('BENCH_') || name === 'DATABASE_URL' || name === 'REDIS_URL')
    .map(([name, value]) => (name.endsWith('_URL') ? `${name}=…` : `${name}=${value}`))
  return [...env, 'npm run bench', ...(args.length ? ['--', ...args] : [])].join(' ')
}

const log = (message: string) => process.stderr.write(`${message}\n`)
const cells: Cell[] = []
for (const scenario of scenarios) {
  for (const server of servers) {
    if (!server.scenarios.includes(scenario.id)) continue
    cells.push({ scenario: scenario.id, server: server.id, samples: [], notes: server.skip ? [server.skip] : [] })
  }
}
const runnable = (cell: Cell) => !SERVERS.find((s) => s.id === cell.server)?.skip
const total = cells.filter(runnable).length * settings.rounds
log(
  `bench: ${total} measurements (${settings.rounds} rounds), ${settings.warmupSeconds} s warm-up + ${settings.seconds} s each, ` +
    `${settings.connections} connections, ${pinning ? 'server on core 0, load on core 1' : 'no CPU pinning (taskset or 2 cores missing)'}`,
)

const workdir = await mkdtemp(join(tmpdir(), 'gatehouse-bench-'))
const started = Date.now()
let done = 0
try {
  for (let round = 0; round < settings.rounds; round++) {
    for (const scenario of scenarios) {
      const row = cells.filter((c) => c.scenario === scenario.id && runnable(c))
      // Rotate the servers' order every round so no server always runs first or last.
      const order = row.map((_, i) => row[(i + round) % row.length] as Cell)
      for (const cell of order) {
        const server = SERVERS.find((s) => s.id === cell.server) as ServerDef
        done++
        try {
          const sample = await measure(scenario, server, workdir)
          cell.samples.push(sample)
          const busy = sample.foreign
            ? `, other processes ${Math.round(sample.foreign.server * 100)}% of core 0 / ${Math.round(sample.foreign.load * 100)}% of core 1`
            : ''
          const flag = sample.exhausted
            ? ' (codes ran out: invalid)'
            : sample.non2xx || sample.errors
              ? ` (${sample.non2xx} non-2xx, ${sample.errors} errors${sample.errorKinds ? ` ${JSON.stringify(sample.errorKinds)}` : ''})`
              : ''
          log(
            `[${done}/${total} ${Math.round((Date.now() - started) / 1000)}s] round ${round + 1} ${scenario.id} · ${server.id}: ` +
              `${Math.round(sample.rps)} req/s, p50 ${sample.p50.toFixed(2)} ms, p99 ${sample.p99.toFixed(2)} ms, ` +
              `peak RSS ${Math.round(sample.peakRss / 1048576)} MB${busy}${flag}`,
          )
        } catch (err) {
          const message = (err as Error).message
          cell.notes.push(`failed: ${message.split('\n')[0]}`)
          log(`[${done}/${total}] round ${round + 1} ${scenario.id} · ${server.id}: FAILED\n${message}`)
        }
      }
    }
  }
} finally {
  await rm(workdir, { recursive: true, force: true })
}

const report: ReportInput = {
  scenarios: scenarios.map(({ id, label }) => ({ id, label })),
  servers: servers.map(({ id, label }) => ({ id, label })),
  cells,
  gatehouse: [
    'gatehouse-node',
    'gatehouse-node-inline',
    'gatehouse-node-postgres',
    'gatehouse-node-redis',
    'gatehouse-bun',
    'gatehouse-deno',
  ],
  peer: 'oidc-provider',
  ceilings: ['ceiling-jose', 'ceiling-crypto', 'ceiling-crypto-batch'],
  stores: scenarios.filter((s) => s.seed).map((s) => ({ scenario: s.id, tokens: s.seed as number })),
  storeServer: 'gatehouse-node',
  bridges: {
    scenario: 'bridge',
    bare: 'bridge-bare',
    servers: ['bridge-gatehouse', 'bridge-hattip', 'bridge-hattip-buffered'],
  },
}
const bridges = bridgeTable(report)
const ratios = ratioTable(report)
const anyStore = report.stores.some(({ scenario }) =>
  cells.some((c) => c.scenario === scenario && c.samples.length > 0),
)
const markdown = [
  '# Benchmark results',
  '',
  `Latest \`npm run bench\` (generated by bench/run.ts; method in bench/README.md). ` +
    `Medians of ${settings.rounds} round(s), each a fresh server process: ${settings.warmupSeconds} s warm-up + ` +
    `${settings.seconds} s measured, ${settings.connections} keep-alive connections, ` +
    `${pinning ? 'server pinned to core 0 and load (autocannon) to core 1' : 'no CPU pinning'}. ` +
    "req/s counts 2xx responses; p50/p99 are their latencies; peak RSS is the server process's VmHWM.",
  '',
  '```sh',
  commandLine(),
  '```',
  '',
  ...machine(),
  `- wall time: ${Math.round((Date.now() - started) / 1000)} s`,
  '',
  '## Throughput and latency',
  '',
  mainTable(report),
  '',
  ...(ratios.split('\n').length > 2 ? ['## Ratios (requests/s)', '', ratios] : []),
  ...(anyStore
    ? ['', '## Store size: flat cost and memory per refresh token (Gatehouse · Node · memory)', '', storeTable(report)]
    : []),
  ...(bridges ? ['', '## Node bridges: a trivial fetch handler against bare node:http', '', bridges] : []),
  '',
].join('\n')

const resultsFile = join(root, 'bench/RESULTS.md')
writeFileSync(resultsFile, markdown)
try {
  // The project's formatter lints bench/ too: write the tables the way it would (aligned columns).
  execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', resultsFile], { stdio: 'ignore' })
} catch {
  // Unformatted Markdown renders the same.
}
process.stdout.write(`\n${readFileSync(resultsFile, 'utf8')}`)
log('bench: wrote bench/RESULTS.md')
const failed = cells.filter((c) => runnable(c) && summarize(c) === undefined)
if (failed.length > 0) process.exitCode = 1
