/**
 * Server CPU time per request at a fixed request rate: a steadier measure than requests/s on a
 * virtual machine whose speed drifts. Each server runs pinned to core 0 and is sent `--rate`
 * requests/s (below every server's saturation) by autocannon on core 1; the CPU the server process
 * used during the measured seconds (all threads, and its main thread alone, from /proc) is divided
 * by the requests it answered. Rounds alternate the servers; the table shows medians.
 *
 *   npx tsx bench/cpu_cost.ts [--rate=6000] [--seconds=6] [--rounds=3]
 *     [--scenario=client_credentials,introspection,store_1k,store_big] [--only=gatehouse-node,…]
 *
 * store_1k / store_big introspect a random one of 1,000 / BENCH_STORE_TOKENS (default 1,000,000)
 * refresh tokens seeded into Gatehouse's memory store (Gatehouse on Node only): the flat-cost
 * check of `npm run bench` as CPU per request, which drifts less than requests/s.
 *
 * A diagnostic beside `npm run bench` (which measures saturation): it shows what one request
 * costs, not how the server behaves when it is the bottleneck. Linux only (/proc, taskset).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { API_RESOURCE, API_SCOPE, SERVICE_CLIENT, WEB_CLIENT, basicAuth, seedTokenValue } from './fixtures.ts'
import { firstSeededBody, randomSeededToken } from './seeded_requests.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const flag = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback

interface Server {
  id: string
  file: string
  env: Record<string, string>
  token: string
  introspect?: string
  /** node-oidc-provider issues a JWT only for a resource indicator. */
  resource?: boolean
  /** Can seed refresh tokens (SEED_REFRESH_TOKENS) for the store scenarios. */
  seeds?: boolean
}

/** Refresh tokens seeded per store scenario. */
const SEEDS: Record<string, number> = {
  store_1k: 1000,
  store_big: Number(process.env.BENCH_STORE_TOKENS ?? 1_000_000),
}

const SERVERS: Server[] = [
  {
    id: 'gatehouse-node',
    file: 'bench/servers/gatehouse_node.ts',
    env: {},
    token: '/connect/token',
    introspect: '/connect/introspect',
    seeds: true,
  },
  {
    id: 'gatehouse-node-inline',
    file: 'bench/servers/gatehouse_node.ts',
    env: { SIGNER: 'inline' },
    token: '/connect/token',
    introspect: '/connect/introspect',
  },
  { id: 'oidc-provider', file: 'bench/servers/oidc_provider.ts', env: {}, token: '/token', resource: true },
  {
    id: 'ceiling-jose',
    file: 'bench/servers/ceiling_node.ts',
    env: { SIGNER: 'jose' },
    token: '/token',
    introspect: '/introspect',
  },
  {
    id: 'ceiling-crypto',
    file: 'bench/servers/ceiling_node.ts',
    env: { SIGNER: 'crypto' },
    token: '/token',
    introspect: '/introspect',
  },
  {
    id: 'ceiling-crypto-batch',
    file: 'bench/servers/ceiling_node.ts',
    env: { SIGNER: 'crypto-batch' },
    token: '/token',
  },
]

/** CPU seconds of a process: all threads, and the main thread (its own task). */
function cpu(pid: number): { all: number; main: number } {
  const ticks = (stat: string) => {
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  }
  const main = ticks(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'))
  let all = 0
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      all += ticks(readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8'))
    } catch {
      // a thread that ended meanwhile
    }
  }
  return { all, main }
}

function startServer(server: Server, port: number, seed: number): Promise<{ child: ChildProcess; pid: number }> {
  const child = spawn('taskset', ['-c', '0', process.execPath, '--import', 'tsx', server.file], {
    cwd: root,
    env: {
      ...process.env,
      ...server.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      NODE_ENV: 'production',
      ...(seed > 0 ? { SEED_REFRESH_TOKENS: String(seed) } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += String(chunk)
      const line = out.split('\n').find((l) => l.startsWith('READY '))
      if (line) resolve({ child, pid: Number((JSON.parse(line.slice(6)) as { pid?: number }).pid ?? child.pid) })
    })
    child.once('exit', (code) => reject(new Error(`${server.id} exited (${code}) before READY`)))
  })
}

async function measureOnce(server: Server, scenario: string, rate: number, seconds: number) {
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const seed = SEEDS[scenario] ?? 0
  const { child, pid } = await startServer(server, port, seed)
  try {
    const base = `http://127.0.0.1:${port}`
    const headers = { authorization: basicAuth(SERVICE_CLIENT), 'content-type': 'application/x-www-form-urlencoded' }
    const ccBody = new URLSearchParams({
      grant_type: 'client_credentials',
      scope: API_SCOPE,
      ...(server.resource ? { resource: API_RESOURCE } : {}),
    }).toString()
    // One request outside the measurement (the first client authentication pays the slow hash).
    const first = await fetch(base + server.token, { method: 'POST', headers, body: ccBody })
    const { access_token: token } = (await first.json()) as { access_token?: string }
    if (!first.ok || !token) throw new Error(`${server.id}: token request failed (${first.status})`)
    let options: autocannon.Options
    if (seed > 0) {
      const webHeaders = { ...headers, authorization: basicAuth(WEB_CLIENT) }
      const check = await fetch(base + server.introspect, {
        method: 'POST',
        headers: webHeaders,
        body: new URLSearchParams({ token: seedTokenValue(seed - 1) }).toString(),
      })
      if (!((await check.json()) as { active?: boolean }).active) throw new Error(`${server.id}: seeded token inactive`)
      options = {
        url: base + server.introspect,
        method: 'POST',
        headers: webHeaders,
        body: firstSeededBody(),
        setupClient: randomSeededToken(seed) as unknown as autocannon.Options['setupClient'],
      }
    } else {
      const [path, body] =
        scenario === 'introspection'
          ? [server.introspect as string, new URLSearchParams({ token }).toString()]
          : [server.token, ccBody]
      options = { url: base + path, method: 'POST', headers, body }
    }
    const run = (duration: number) => autocannon({ ...options, connections: 16, overallRate: rate, duration })
    await run(3) // warm-up
    const before = cpu(pid)
    const result = await run(seconds)
    const after = cpu(pid)
    const ok = result['2xx']
    if (ok === 0 || result.non2xx > 0)
      throw new Error(`${server.id}: ${result.non2xx} non-2xx of ${result.requests.total}`)
    return {
      all: ((after.all - before.all) * 1e6) / ok,
      main: ((after.main - before.main) * 1e6) / ok,
      rps: ok / seconds,
    }
  } finally {
    child.kill('SIGTERM')
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

async function main() {
  const rate = Number(flag('rate', '6000'))
  const seconds = Number(flag('seconds', '6'))
  const rounds = Number(flag('rounds', '3'))
  const scenarios = flag('scenario', 'client_credentials').split(',').filter(Boolean)
  const only = flag('only', '').split(',').filter(Boolean)
  const cells = scenarios.flatMap((scenario) =>
    SERVERS.filter(
      (s) =>
        (only.length === 0 || only.includes(s.id)) &&
        (scenario !== 'introspection' || s.introspect) &&
        (SEEDS[scenario] === undefined || s.seeds),
    ).map((server) => ({ scenario, server, samples: [] as { all: number; main: number; rps: number }[] })),
  )
  for (let round = 0; round < rounds; round++) {
    // Rotate the order each round, so that a slow minute of the VM does not always hit one cell.
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[(i + round) % cells.length] as (typeof cells)[number]
      const sample = await measureOnce(cell.server, cell.scenario, rate, seconds)
      cell.samples.push(sample)
      process.stderr.write(
        `round ${round + 1} ${cell.scenario} ${cell.server.id}: ${sample.all.toFixed(1)} us/request (main thread ${sample.main.toFixed(1)}) at ${Math.round(sample.rps)} req/s\n`,
      )
    }
  }
  console.log(`\n${rate} req/s, ${seconds} s × ${rounds} rounds (medians), CPU time per request\n`)
  console.log('| scenario | server | CPU µs / request | main thread µs / request | req/s |')
  console.log('|---|---|--:|--:|--:|')
  for (const { scenario, server, samples } of cells) {
    console.log(
      `| ${scenario} | ${server.id} | ${median(samples.map((s) => s.all)).toFixed(1)} | ${median(samples.map((s) => s.main)).toFixed(1)} | ${Math.round(median(samples.map((s) => s.rps)))} |`,
    )
  }
}

// The load must not share the server's core: run this script itself on core 1.
if (process.env.CPU_COST_PINNED !== '1') {
  const child = spawn('taskset', ['-c', '1', process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, CPU_COST_PINNED: '1' },
  })
  child.on('exit', (code) => process.exit(code ?? 1))
} else {
  await main()
}
