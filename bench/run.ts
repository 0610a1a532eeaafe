/**
 * `npm run bench`: Gatehouse against node-oidc-provider and the ideal ceiling, side by side in
 * one run, on loopback. For every round, scenario and server (servers in rotating order per
 * round) it starts a FRESH server process pinned to core 0, a separate load process (autocannon,
 * bench/load.ts) pinned to core 1, warms up, measures, records the server's peak RSS and stops
 * it. Medians over rounds go to stdout and bench/RESULTS.md. See bench/README.md.
 *
 * Besides the load cells it measures cold starts (`cold_start`: bench/cold_start.ts spawns servers
 * and times the first 200), full browser sign-ins (`signin_flow`: bench/signin_load.ts instead of
 * autocannon) and the size of stored records (`store_size`: bench/store_size.ts, once per run).
 *
 * Flags: --quick (smoke run, ~2 min), --only=ID,ID (servers), --scenario=ID,ID, --out=FILE (the
 * report's file instead of bench/RESULTS.md, e.g. for a partial run), --preset=stores (#44 item 5,
 * `npm run bench:stores`: exactly the cells #44's targets are judged on, their two tables, written
 * to bench/results-stores.md), --check (exit non-zero when a #44 target is not met: for a quiet
 * machine only).
 * Environment: BENCH_SECONDS (measured, default 10), BENCH_WARMUP (5), BENCH_ROUNDS (3),
 * BENCH_CONNECTIONS (16), BENCH_STORE_TOKENS (1,000,000), BENCH_COLD_STARTS (5),
 * BENCH_SIGNIN_USERS (8), BENCH_SIZE_COUNTS (100000,1000000), BENCH_CODE_RATE (round 1's guess of
 * the code-redemption rates: the codes pre-created per cell), DATABASE_URL, REDIS_URL,
 * GATEHOUSE_NODE22 (a Node ≥ 22.5 for the workerd and SQLite rows, as .ci/run exports it).
 * The Redis Cluster rows (#43) need no variable: the run starts a local cluster of three masters
 * with a replica each (test/helpers/redis_cluster.ts, `redis-server` and `redis-cli`) the first
 * time one of them is measured, and stops it at the end.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { availableParallelism, release, tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { type LocalRedisCluster, hasRedisServer, startRedisCluster } from '../test/helpers/redis_cluster.ts'
import type { ColdResult, ColdSpec } from './cold_start.ts'
import type { ProofAlg } from './dpop_proofs.ts'
import { API_RESOURCE, API_SCOPE, SERVICE_CLIENT, basicAuth } from './fixtures.ts'
import type { Flavor, LoadResult, LoadSpec, Scenario } from './load.ts'
import {
  type Cell,
  type ColdCell,
  type ReportInput,
  type Sample,
  type SizeCell,
  bridgeTable,
  coldTable,
  cpuTable,
  dpopTable,
  mainTable,
  pairTable,
  SAME_RUNTIME_TARGET,
  ratioTable,
  sameRuntimeTable,
  type StoreRow,
  TARGETS_44,
  failedTargets,
  judgeTargets,
  signinTable,
  sizeTable,
  storeTable,
  storesTable,
  summarize,
  targetSummary,
  targetsTable,
} from './report.ts'
import type { SizeResult, SizeSpec } from './store_size.ts'
import type { ReloadSpec } from './workers_reload.ts'

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
  coldStarts: envNumber('BENCH_COLD_STARTS', quick ? 3 : 5),
  signinUsers: envNumber('BENCH_SIGNIN_USERS', 8),
  /** Round 1's guess of every code-redemption rate (sizes the pre-created codes); default per server. */
  codeRate: process.env.BENCH_CODE_RATE ? envNumber('BENCH_CODE_RATE', 3000) : undefined,
  sizeCounts: (process.env.BENCH_SIZE_COUNTS
    ? process.env.BENCH_SIZE_COUNTS.split(',').map(Number)
    : [100_000, quick ? 100_000 : 1_000_000]
  ).filter((n, i, all) => Number.isSafeInteger(n) && n > 0 && all.indexOf(n) === i),
}

// ---------------------------------------------------------------------------------------------
// Scenarios and servers

interface ScenarioDef {
  id: string
  label: string
  load: Scenario
  /** Refresh tokens the server seeds before listening (store-size scenarios, memory store only). */
  seed?: number
  /** Environment the scenario adds to each server it starts (the sign-in flow's configuration). */
  serverEnv?: Record<string, string>
  /** Not a load cell: cold starts or store sizes, measured by their own section below. */
  special?: 'cold' | 'size'
  /** The DPoP proofs' algorithm (client_credentials_dpop; default ES256). */
  proofAlg?: ProofAlg
}

const SCENARIOS: ScenarioDef[] = [
  { id: 'client_credentials', label: 'client_credentials (ES256 JWT)', load: 'client_credentials' },
  // #21: the same with a DPoP proof per request (ES256, pre-signed by the load process): the server
  // verifies it, spends its jti in the store and binds the token (cnf.jkt, token_type DPoP).
  {
    id: 'client_credentials_dpop',
    label: 'client_credentials with DPoP (ES256 proof → DPoP-bound ES256 JWT)',
    load: 'client_credentials_dpop',
  },
  // The same with RSA proofs (PS256, as FAPI 2.0 allows): the proof's signature check is most of
  // what DPoP adds, and an RSA-2048 verification costs ~22 µs where a P-256 one costs ~62 µs
  // (bench/sign_cost.mjs), so this row shows what the rest of the DPoP work costs.
  {
    id: 'client_credentials_dpop_ps256',
    label: 'client_credentials with DPoP (PS256 proof → DPoP-bound ES256 JWT)',
    load: 'client_credentials_dpop',
    proofAlg: 'PS256',
  },
  { id: 'introspection', label: 'introspection, valid access token', load: 'introspection' },
  { id: 'authorization_code', label: 'code redemption (PKCE)', load: 'authorization_code' },
  { id: 'refresh_token', label: 'refresh (rotation)', load: 'refresh_token' },
  // The same flows with every token EdDSA-signed on both sides (#20): the ID token through the web
  // client's registered alg (Gatehouse `idTokenSignedResponseAlg`, the peer's
  // `id_token_signed_response_alg`), the access tokens through the service's alg. They show each
  // runtime's cost without the RSA and P-256 signatures, whose floors bench/sign_cost.mjs measures.
  {
    id: 'client_credentials_eddsa',
    label: 'client_credentials (EdDSA JWT)',
    load: 'client_credentials',
    serverEnv: { ACCESS_TOKEN_ALG: 'EdDSA' },
  },
  {
    id: 'authorization_code_eddsa',
    label: 'code redemption (PKCE), EdDSA ID and access tokens',
    load: 'authorization_code',
    serverEnv: { ACCESS_TOKEN_ALG: 'EdDSA', ID_TOKEN_ALG: 'EdDSA' },
  },
  {
    id: 'refresh_token_eddsa',
    label: 'refresh (rotation), EdDSA ID and access tokens',
    load: 'refresh_token',
    serverEnv: { ACCESS_TOKEN_ALG: 'EdDSA', ID_TOKEN_ALG: 'EdDSA' },
  },
  { id: 'bridge', label: 'trivial form → JSON handler (Node bridges)', load: 'trivial' },
  { id: 'store_1k', label: 'introspection, 1,000 refresh tokens in store', load: 'introspection_store', seed: 1000 },
  {
    id: 'store_big',
    label: `introspection, ${settings.storeTokens.toLocaleString('en-US')} refresh tokens in store`,
    load: 'introspection_store',
    seed: settings.storeTokens,
  },
  {
    id: 'signin_flow',
    label: 'browser sign-in: authorize → login POST → code → token (flows/s)',
    load: 'signin_flow',
    serverEnv: { SIGNIN: '1' },
  },
  {
    id: 'cold_start',
    label: 'cold start: process start → first client_credentials 200',
    load: 'client_credentials',
    special: 'cold',
  },
  {
    id: 'store_size',
    label: 'bytes per session and per refresh token in the store',
    load: 'client_credentials',
    special: 'size',
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
  /** A fresh, empty GATEHOUSE_DATA_DIR for every server process (SQLite file, local D1). */
  dataDir?: boolean
  /** Its store lives in the server process (SQLite, D1 in workerd): no database processes to count. */
  inProcessStore?: boolean
  /** Round 1's guess of its code-redemption rate, which sizes the pre-created codes (default 3,000/s). */
  codeRate?: number
  /** #43: runs on the local Redis Cluster this run starts (its seed nodes in REDIS_CLUSTER_NODES). */
  redisCluster?: boolean
}

const node = [process.execPath, '--import', 'tsx']
const bun = join(root, 'node_modules/.bin/bun')
const deno = join(root, 'node_modules/.bin/deno')
const USER_FLOWS = ['client_credentials', 'introspection', 'authorization_code', 'refresh_token']
const EDDSA_FLOWS = ['client_credentials_eddsa', 'authorization_code_eddsa', 'refresh_token_eddsa']
/** #21: DPoP-bound client_credentials, beside the plain one. */
const DPOP_FLOWS = ['client_credentials_dpop']

/** #31: what the same-runtime ceilings answer (the ratio table "÷ ceiling of the same runtime"). */
const CEILING_FLOWS = ['client_credentials', 'authorization_code', 'refresh_token']

/** #28 item 8: the workerd + D1 and Node + SQLite rows, beside Node + PostgreSQL. */
const EMBEDDED_FLOWS = ['client_credentials', 'authorization_code', 'refresh_token']

/**
 * A Node ≥ 22.5 (Miniflare runs workerd under Node 22+; node:sqlite needs 22.5): GATEHOUSE_NODE22,
 * as .ci/run exports it, else this Node when it is one.
 */
const node22 = ((): { path?: string; skip?: string } => {
  const candidates = [process.env.GATEHOUSE_NODE22, process.execPath].filter((c): c is string => Boolean(c))
  for (const path of candidates) {
    try {
      const [major = 0, minor = 0] = execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' })
        .trim()
        .split('.')
        .map(Number)
      if (major > 22 || (major === 22 && minor >= 5)) return { path }
    } catch {
      // not runnable
    }
  }
  return { skip: 'skipped: needs Node ≥ 22.5 (set GATEHOUSE_NODE22)' }
})()
const node22Command = [node22.path ?? 'node', '--import', 'tsx']

/** #43 item 5: the Redis Cluster rows, beside single-node Redis (code redemption and refresh). */
const CLUSTER_FLOWS = ['authorization_code', 'refresh_token']
const clusterSkip = hasRedisServer
  ? undefined
  : 'skipped: redis-server or redis-cli not found (the bench starts a local Redis Cluster with them)'

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
    scenarios: [
      ...USER_FLOWS,
      ...DPOP_FLOWS,
      'client_credentials_dpop_ps256',
      ...EDDSA_FLOWS,
      'signin_flow',
      'store_1k',
      'store_big',
    ],
  },
  {
    id: 'gatehouse-node-cheap-password',
    label: 'Gatehouse · Node · memory, 1-iteration password hash',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { PASSWORD_ITERATIONS: '1' },
    scenarios: ['signin_flow'],
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
    id: 'gatehouse-node-inline-dpop',
    label: 'Gatehouse · Node · memory, proofs checked inline',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { DPOP_VERIFIER: 'inline' },
    scenarios: ['client_credentials_dpop'],
  },
  {
    id: 'gatehouse-node-postgres',
    label: 'Gatehouse · Node · PostgreSQL',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { STORE: 'postgres' },
    scenarios: [...USER_FLOWS, ...DPOP_FLOWS, ...EDDSA_FLOWS.slice(1), 'signin_flow'],
    skip: await storeSkip('createPostgresStore', 'DATABASE_URL'),
  },
  {
    // #44 item 3: the memory store on the Node that runs the SQLite cell (node:sqlite needs Node ≥
    // 22.5), so that SQLite ÷ memory compares two stores on one runtime, not Node 22 with Node 20.
    id: 'gatehouse-node22',
    label: 'Gatehouse · Node 22 · memory',
    flavor: 'gatehouse',
    command: [...node22Command, '--expose-gc', 'bench/servers/gatehouse_node.ts'],
    inProcessStore: true,
    scenarios: EMBEDDED_FLOWS,
    ...(node22.skip ? { skip: node22.skip } : {}),
  },
  {
    id: 'gatehouse-node-sqlite',
    label: 'Gatehouse · Node · SQLite',
    flavor: 'gatehouse',
    command: [...node22Command, 'bench/servers/gatehouse_node.ts'],
    env: { STORE: 'sqlite' },
    dataDir: true,
    inProcessStore: true,
    codeRate: 2000,
    scenarios: EMBEDDED_FLOWS,
    ...(node22.skip ? { skip: node22.skip } : {}),
  },
  {
    // `npm run start:workers` with the bench clients in its configuration file; workerd does the
    // work (bench/servers/gatehouse_workers.ts reports its pid).
    id: 'gatehouse-workers-d1',
    label: 'Gatehouse · workerd · D1',
    flavor: 'gatehouse',
    command: [...node22Command, 'bench/servers/gatehouse_workers.ts'],
    dataDir: true,
    inProcessStore: true,
    codeRate: 300,
    scenarios: EMBEDDED_FLOWS,
    ...(node22.skip ? { skip: node22.skip } : {}),
  },
  {
    // #31: the same with the in-memory store (start:workers' GATEHOUSE_STORE=memory, one isolate):
    // the workerd row of "÷ ceiling of the same runtime", against `ceiling-workers`.
    id: 'gatehouse-workers',
    label: 'Gatehouse · workerd · memory',
    flavor: 'gatehouse',
    command: [...node22Command, 'bench/servers/gatehouse_workers.ts'],
    env: { STORE: 'memory' },
    dataDir: true,
    inProcessStore: true,
    codeRate: 600,
    scenarios: CEILING_FLOWS,
    ...(node22.skip ? { skip: node22.skip } : {}),
  },
  {
    id: 'gatehouse-node-redis',
    label: 'Gatehouse · Node · Redis',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { STORE: 'redis', REDIS_CLUSTER_NODES: '', REDIS_WAIT_REPLICAS: '' },
    scenarios: USER_FLOWS,
    skip: await storeSkip('createRedisStore', 'REDIS_URL'),
  },
  {
    // #43 item 5: the same server on a local Redis Cluster (3 masters, a replica each) the run
    // starts, read from REDIS_CLUSTER_NODES as the standalone server reads it.
    id: 'gatehouse-node-redis-cluster',
    label: 'Gatehouse · Node · Redis Cluster (3 masters + 3 replicas)',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { STORE: 'redis', REDIS_WAIT_REPLICAS: '' },
    redisCluster: true,
    scenarios: CLUSTER_FLOWS,
    ...(clusterSkip ? { skip: clusterSkip } : {}),
  },
  {
    // #43 item 4's cost: the same with REDIS_WAIT_REPLICAS=1 (the writes that must survive a
    // failover wait for one replica; REDIS_WAIT_TIMEOUT the store's default), judged against the
    // cluster row without WAIT.
    id: 'gatehouse-node-redis-cluster-wait',
    label: 'Gatehouse · Node · Redis Cluster, WAIT for 1 replica',
    flavor: 'gatehouse',
    command: [...node, 'bench/servers/gatehouse_node.ts'],
    env: { STORE: 'redis', REDIS_WAIT_REPLICAS: '1' },
    redisCluster: true,
    scenarios: CLUSTER_FLOWS,
    ...(clusterSkip ? { skip: clusterSkip } : {}),
  },
  {
    id: 'gatehouse-bun',
    label: 'Gatehouse · Bun · memory',
    flavor: 'gatehouse',
    command: [bun, 'run', 'bench/servers/gatehouse_bun.ts'],
    scenarios: [...USER_FLOWS, ...DPOP_FLOWS, ...EDDSA_FLOWS],
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
    scenarios: [...USER_FLOWS, ...DPOP_FLOWS, ...EDDSA_FLOWS],
  },
  {
    // #31: the A/B of Deno's signing path: ES256 and RS256 through Deno's node:crypto instead of
    // WebCrypto (the shipped `denoServiceOptions()`), everything else the same.
    id: 'gatehouse-deno-node-rsa',
    label: 'Gatehouse · Deno · memory, ES256 and RS256 through node:crypto',
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
    env: { DENO_SIGNER: 'node-rsa' },
    scenarios: CEILING_FLOWS,
  },
  {
    id: 'oidc-provider',
    label: 'node-oidc-provider',
    flavor: 'oidc-provider',
    command: [...node, 'bench/servers/oidc_provider.ts'],
    scenarios: [...USER_FLOWS, ...DPOP_FLOWS, ...EDDSA_FLOWS, 'signin_flow'],
  },
  {
    // The peer on the same PostgreSQL (bench/servers/oidc_provider_pg.ts): the like-for-like
    // comparison of Gatehouse's PostgreSQL rows, beside the issue's (the peer in memory).
    id: 'oidc-provider-postgres',
    label: 'node-oidc-provider · PostgreSQL',
    flavor: 'oidc-provider',
    command: [...node, 'bench/servers/oidc_provider.ts'],
    env: { STORE: 'postgres' },
    scenarios: ['introspection', 'authorization_code', 'refresh_token', ...EDDSA_FLOWS.slice(1)],
    skip: await storeSkip('createPostgresStore', 'DATABASE_URL'),
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
    scenarios: ['client_credentials', 'introspection', ...DPOP_FLOWS],
  },
  {
    id: 'ceiling-crypto-batch',
    label: 'ceiling: node:http + node:crypto, batched signing (and proof checks)',
    flavor: 'ceiling',
    command: [...node, 'bench/servers/ceiling_node.ts'],
    env: { SIGNER: 'crypto-batch' },
    scenarios: ['client_credentials', ...DPOP_FLOWS, 'client_credentials_dpop_ps256', ...CEILING_FLOWS.slice(1)],
  },
  // #31: each runtime's own ceiling (ceiling_core.ts behind the runtime's server), so that every
  // Gatehouse row is judged against what its runtime can do, not against Node's cryptography.
  {
    id: 'ceiling-bun',
    label: `ceiling · Bun: Bun.serve + ${process.env.CEILING_BUN_SIGNER ? `SIGNER=${process.env.CEILING_BUN_SIGNER}` : 'node:crypto, batched signing'}`,
    flavor: 'ceiling',
    command: [bun, 'run', 'bench/servers/ceiling_bun.ts'],
    ...(process.env.CEILING_BUN_SIGNER ? { env: { SIGNER: process.env.CEILING_BUN_SIGNER } } : {}),
    scenarios: CEILING_FLOWS,
  },
  {
    id: 'ceiling-deno',
    label: `ceiling · Deno: Deno.serve + ${process.env.CEILING_DENO_SIGNER ? `SIGNER=${process.env.CEILING_DENO_SIGNER}` : 'WebCrypto'}`,
    flavor: 'ceiling',
    command: [
      deno,
      'run',
      '--allow-net',
      '--allow-env',
      '--allow-read',
      '--allow-write',
      'bench/servers/ceiling_deno.ts',
    ],
    ...(process.env.CEILING_DENO_SIGNER ? { env: { SIGNER: process.env.CEILING_DENO_SIGNER } } : {}),
    scenarios: CEILING_FLOWS,
  },
  {
    // #31: ceiling_core.ts in a module Worker on workerd (Miniflare, as start:workers runs it).
    id: 'ceiling-workers',
    label: `ceiling · workerd: module Worker + ${process.env.CEILING_WORKERS_SIGNER ? `SIGNER=${process.env.CEILING_WORKERS_SIGNER}` : 'WebCrypto'}`,
    flavor: 'ceiling',
    command: [...node22Command, 'bench/servers/ceiling_workers.ts'],
    ...(process.env.CEILING_WORKERS_SIGNER ? { env: { SIGNER: process.env.CEILING_WORKERS_SIGNER } } : {}),
    codeRate: 1000,
    scenarios: CEILING_FLOWS,
    ...(node22.skip ? { skip: node22.skip } : {}),
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

/**
 * A/B in one run (#31: "a change that claims speed shows old and new in one run"): BENCH_BASE names
 * a checkout of an earlier commit (a `git worktree` with node_modules linked) and adds `<id>-base`
 * for the Gatehouse memory servers on Node, Bun and Deno, each running that checkout's bench server
 * (so its src/), measured in the same rounds as today's and judged against the same ceilings.
 */
const BASE_OF = ['gatehouse-node', 'gatehouse-bun', 'gatehouse-deno']
const benchBase = process.env.BENCH_BASE ? resolve(process.env.BENCH_BASE) : undefined
if (benchBase) {
  let commit = 'base'
  try {
    commit = execFileSync('git', ['-C', benchBase, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
  } catch {
    // not a git checkout: the label says "base"
  }
  for (const server of SERVERS.filter((s) => BASE_OF.includes(s.id))) {
    SERVERS.push({
      ...server,
      id: `${server.id}-base`,
      label: `${server.label} (${commit})`,
      command: server.command.map((part) => (part.startsWith('bench/servers/') ? join(benchBase, part) : part)),
    })
  }
}
/** The `-base` ids BENCH_BASE added (none without it). */
const baseIds = benchBase ? BASE_OF.map((id) => `${id}-base`) : []
/** Each Gatehouse memory row's ceilings on its runtime (a `-base` row shares its original's). */
const CEILINGS_OF: Record<string, string[]> = {
  'gatehouse-node': ['ceiling-jose', 'ceiling-crypto', 'ceiling-crypto-batch'],
  'gatehouse-bun': ['ceiling-bun'],
  'gatehouse-deno': ['ceiling-deno'],
  'gatehouse-workers': ['ceiling-workers'],
}
for (const id of baseIds) CEILINGS_OF[id] = CEILINGS_OF[id.slice(0, -'-base'.length)] ?? []

/** #44 item 5: the stores table's rows (code redemption and refresh), the memory row first. */
const STORE_ROWS: StoreRow[] = [
  { server: 'gatehouse-node', label: 'memory' },
  { server: 'gatehouse-node-postgres', label: 'PostgreSQL' },
  { server: 'gatehouse-node-redis', label: 'Redis' },
  { server: 'gatehouse-node-sqlite', label: 'SQLite' },
  { server: 'oidc-provider-postgres', label: 'node-oidc-provider on PostgreSQL' },
]
const STORE_FLOWS = ['authorization_code', 'refresh_token']

/**
 * `--preset=NAME`: a named set of cells (scenario → servers, in the order they run), no other.
 * `stores` (#44 item 5, `npm run bench:stores`): the cells #44's targets are judged on.
 */
const PRESETS: Record<string, { cells: Record<string, string[]>; out: string }> = {
  stores: {
    cells: {
      // The Gatehouse row beside its ceiling (#31: adjacent cells share the machine's state).
      client_credentials: ['gatehouse-node', 'ceiling-crypto-batch'],
      ...Object.fromEntries(STORE_FLOWS.map((id) => [id, STORE_ROWS.map((row) => row.server)])),
    },
    out: 'bench/results-stores.md',
  },
}
const presetName = listFlag('--preset')?.[0]
const preset = presetName === undefined ? undefined : PRESETS[presetName]
if (presetName !== undefined && !preset)
  throw new Error(`--preset=${presetName}: unknown preset (known: ${Object.keys(PRESETS).join(', ')})`)
const check = args.includes('--check')

const onlyServers = listFlag('--only') ?? (preset ? [...new Set(Object.values(preset.cells).flat())] : undefined)
const onlyScenarios = listFlag('--scenario')
// In the order --only names them, so a Gatehouse row and its ceiling can run back to back: this
// machine's speed drifts over minutes (#31), and adjacent cells share the same state of it.
const servers = onlyServers ? onlyServers.flatMap((id) => SERVERS.filter((s) => s.id === id)) : SERVERS
const scenarios = SCENARIOS.filter(
  (s) => (!onlyScenarios || onlyScenarios.includes(s.id)) && (!preset || s.id in preset.cells),
)
/** Whether the run measures `server` in `scenario`: the server offers it, and the preset (if any) has the cell. */
const inRun = (scenario: ScenarioDef, server: ServerDef) =>
  server.scenarios.includes(scenario.id) && (!preset || Boolean(preset.cells[scenario.id]?.includes(server.id)))

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

/**
 * CPU time of live processes, all threads, seconds (/proc/<pid>/stat utime + stime): the server's
 * process, or all of them when it is several (workerd under its Miniflare launcher).
 */
function processCpu(pids: number[]): number {
  let total = 0
  for (const [i, pid] of pids.entries()) {
    let stat: string
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    } catch (err) {
      if (i === 0 || pids.length === 1) throw err
      continue // a helper process of the server (e.g. esbuild's service) that has exited
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  }
  return total
}

/** The store servers' processes, by command name (their CPU is the database's cost). */
const STORE_PROCESSES = new Set(['postgres', 'redis-server'])

/** CPU time of every PostgreSQL and Redis server process, seconds (gone ones are not counted). */
function storeCpu(): number {
  let total = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      if (!STORE_PROCESSES.has(name)) continue
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
    } catch {
      // exited meanwhile
    }
  }
  return total
}

/**
 * Share of a core's time used by processes other than ours during a measurement: the machine is
 * shared, and anything else running on the server's or the load's core skews the result. These are
 * the foreign shares of the server's and the load's cores, less the cell's own database (#44: a
 * PostgreSQL or Redis server is part of its store cells, not another process; it is not pinned, so
 * its CPU seconds are taken off the load's core first, where it runs while the server's is busy).
 */
function foreignShares(
  before: { server: { busy: number; total: number }; load: { busy: number; total: number } },
  ours: { server: number; load: number },
  database: number,
): { server: number; load: number } {
  const after = { server: cpuTimes(0), load: cpuTimes(1) }
  const seconds = (core: 'server' | 'load') => {
    const total = after[core].total - before[core].total
    return { other: Math.max(0, after[core].busy - before[core].busy - ours[core]), total }
  }
  const server = seconds('server')
  const load = seconds('load')
  const offLoad = Math.min(database, load.other)
  const offServer = Math.min(database - offLoad, server.other)
  const share = (other: number, total: number) => (total > 0 ? other / total : 0)
  return { server: share(server.other - offServer, server.total), load: share(load.other - offLoad, load.total) }
}

// ---------------------------------------------------------------------------------------------
// One measurement

let localCluster: Promise<LocalRedisCluster> | undefined
/**
 * #43: the local Redis Cluster of the cluster rows, started once (unpinned, like the PostgreSQL and
 * Redis servers of the other store rows) and kept for the run; every server process empties its
 * prefix first, as on one node.
 */
function redisCluster(): Promise<LocalRedisCluster> {
  localCluster ??= (async () => {
    const started = Date.now()
    const cluster = await startRedisCluster()
    log(`bench: local Redis Cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s: ${cluster.nodes.join(',')}`)
    return cluster
  })()
  return localCluster
}

/** Highest rate seen per cell: sizes the pre-created codes of later rounds. */
const seenRate = new Map<string, number>()

function codesNeeded(scenario: ScenarioDef, server: ServerDef): number {
  if (scenario.load === 'refresh_token') return settings.connections + 10
  if (scenario.load !== 'authorization_code') return 0
  // Enough for the whole run at 2.5× the best rate seen, or 1.5× a generous guess in round 1 (the
  // EdDSA cells run at about twice the RSA ones). 1.5× the rate seen ran out in short (--quick)
  // runs whose later rounds ran faster than round 1 (a cold first round, a machine that calmed down).
  const guess = settings.codeRate ?? server.codeRate ?? (scenario.serverEnv?.ID_TOKEN_ALG === 'EdDSA' ? 7000 : 3000)
  const seen = seenRate.get(`${scenario.id}/${server.id}`)
  const rate = seen === undefined ? guess * 1.5 : seen * 2.5
  return Math.ceil(rate * (settings.warmupSeconds + settings.seconds)) + settings.connections + 10
}

/** DPoP proofs the load process pre-signs: one per request of the run at 1.5× the best rate seen. */
function proofsNeeded(scenario: ScenarioDef, server: ServerDef): number {
  if (scenario.load !== 'client_credentials_dpop') return 0
  // Round 1 guesses generously (above the plain client_credentials rate on Node); RSA proofs cost
  // the load process ~0.26 ms each to sign, so their guess is nearer the rate seen (~8k/s).
  const rate = seenRate.get(`${scenario.id}/${server.id}`) ?? (scenario.proofAlg === 'PS256' ? 12_000 : 16_000)
  return Math.ceil(rate * 1.5 * (settings.warmupSeconds + settings.seconds)) + settings.connections + 10
}

async function measure(scenario: ScenarioDef, server: ServerDef, workdir: string): Promise<Sample> {
  const port = await freePort()
  const codesFile = join(workdir, `codes-${server.id}-${scenario.id}.txt`)
  const codes = codesNeeded(scenario, server)
  const dataDir = server.dataDir ? await mkdtemp(join(workdir, `data-${server.id}-`)) : undefined
  const cluster = server.redisCluster ? await redisCluster() : undefined
  const child = start(pinned(0, server.command), {
    ...(dataDir ? { GATEHOUSE_DATA_DIR: dataDir } : {}),
    ...(cluster ? { REDIS_CLUSTER_NODES: cluster.nodes.join(',') } : {}),
    ...server.env,
    ...scenario.serverEnv,
    PORT: String(port),
    HOST: '127.0.0.1',
    NODE_ENV: 'production',
    ...(codes > 0 ? { CODES: String(codes), CODES_FILE: codesFile } : {}),
    ...(scenario.seed ? { SEED_REFRESH_TOKENS: String(scenario.seed) } : {}),
  })
  try {
    const ready = JSON.parse((await waitForLine(child, 'READY', 300_000, server.id)) || '{}') as Record<string, unknown>
    // The process that does the work (peak RSS), and all of the server's processes (CPU time).
    const pid = typeof ready.pid === 'number' ? ready.pid : (child.pid as number)
    const pids = Array.isArray(ready.pids) ? (ready.pids as number[]) : [pid]
    const spec: LoadSpec = {
      baseUrl: `http://127.0.0.1:${port}`,
      flavor: server.flavor,
      scenario: scenario.load,
      connections: settings.connections,
      warmupSeconds: settings.warmupSeconds,
      seconds: settings.seconds,
      ...(codes > 0 ? { codesFile } : {}),
      ...(scenario.seed ? { seedCount: scenario.seed } : {}),
      ...(scenario.load === 'signin_flow' ? { connections: settings.signinUsers } : {}),
      ...(scenario.load === 'client_credentials_dpop' ? { proofs: proofsNeeded(scenario, server) } : {}),
      ...(scenario.proofAlg ? { proofAlg: scenario.proofAlg } : {}),
    }
    const database = ['postgres', 'redis'].includes(server.env?.STORE ?? '') || server.redisCluster === true
    const cpu = {
      server: cpuTimes(0),
      load: cpuTimes(1),
      serverCpu: processCpu(pids),
      store: database ? storeCpu() : 0,
    }
    // autocannon cannot follow a multi-step flow: the sign-in scenario has its own closed-loop driver.
    const loader = scenario.load === 'signin_flow' ? 'bench/signin_load.ts' : 'bench/load.ts'
    const load = start(pinned(1, [...node, loader]), { LOAD_SPEC: JSON.stringify(spec) })
    // CPU time of the server and the store at the load's marks: the measured window only.
    const marks: { from?: { server: number; store: number }; to?: { server: number; store: number } } = {}
    createInterface({ input: load.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line === 'MEASURING') marks.from = { server: processCpu(pids), store: storeCpu() }
      if (line === 'MEASURED') marks.to = { server: processCpu(pids), store: storeCpu() }
    })
    const timeout = (settings.warmupSeconds + settings.seconds) * 1000 + 120_000
    const result = JSON.parse(await waitForLine(load, 'RESULT', timeout, `load on ${server.id}`)) as LoadResult
    const perRequest = (seconds: number) => (seconds * 1e6) / Math.max(1, result.requests + result.non2xx)
    const windowCpu =
      marks.from && marks.to
        ? {
            server: perRequest(marks.to.server - marks.from.server),
            store: server.inProcessStore ? Number.NaN : perRequest(marks.to.store - marks.from.store),
          }
        : undefined
    const foreign = pinning
      ? foreignShares(
          cpu,
          { server: processCpu(pids) - cpu.serverCpu, load: result.cpuSeconds },
          database ? storeCpu() - cpu.store : 0,
        )
      : undefined
    await stop(load)
    const key = `${scenario.id}/${server.id}`
    seenRate.set(key, Math.max(seenRate.get(key) ?? 0, result.rps))
    return {
      ...result,
      peakRss: peakRss(pid),
      ready,
      ...(foreign ? { foreign } : {}),
      ...(windowCpu ? { cpu: windowCpu } : {}),
    }
  } finally {
    await stop(child)
    await rm(codesFile, { force: true })
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
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
    .filter(
      ([name]) =>
        name.startsWith('BENCH_') || name === 'DATABASE_URL' || name === 'REDIS_URL' || name === 'GATEHOUSE_NODE22',
    )
    .map(([name, value]) => (name.endsWith('_URL') || name === 'GATEHOUSE_NODE22' ? `${name}=…` : `${name}=${value}`))
  // Under an npm script (`npm run bench:stores`), the script's name and the arguments it did not add.
  const script = process.env.npm_lifecycle_event?.startsWith('bench') ? process.env.npm_lifecycle_event : 'bench'
  const own = script === 'bench' ? [] : (process.env.npm_lifecycle_script ?? '').split(/\s+/)
  const extra = args.filter((a) => !own.includes(a))
  return [...env, `npm run ${script}`, ...(extra.length ? ['--', ...extra] : [])].join(' ')
}

// ---------------------------------------------------------------------------------------------
// Cold starts (scenario cold_start)

/** Where the compiled package goes for the cold-start cells (git-ignored: `dist/`). */
const distDir = join(root, 'bench/dist')
/** The same entry points bundled by esbuild, dependencies included, as serverless platforms deploy. */
const bundleDir = join(root, 'bench/dist-bundle')
interface ColdDef extends ColdCell {
  /** The server id whose `--only` selects this cell. */
  server: string
  command: string[]
  env: Record<string, string>
  needsDist: boolean
  store: 'memory' | 'postgres' | 'd1'
  /** bench/workers_reload.ts instead of cold_start.ts: new workerd processes under one Miniflare. */
  reload?: boolean
}
const coldServer = [join(root, 'bench/servers/cold_start.mjs')]
const COLD: ColdDef[] = (
  [
    ['node', 'dist', [process.execPath, ...coldServer], 'gatehouse-node'],
    ['node', 'bundle', [process.execPath, ...coldServer], 'gatehouse-node'],
    ['node', 'tsx', [...node, ...coldServer], 'gatehouse-node'],
    ['bun', 'dist', [bun, 'run', ...coldServer], 'gatehouse-bun'],
    ['bun', 'ts', [bun, 'run', ...coldServer], 'gatehouse-bun'],
    ['deno', 'ts', [deno, 'run', '--allow-all', ...coldServer], 'gatehouse-deno'],
  ] as const
).flatMap(([runtime, path, command, server]) =>
  (['memory', 'postgres'] as const).map(
    (store): ColdDef => ({
      id: `cold-${runtime}-${path}-${store}`,
      label: `Gatehouse · ${runtime === 'node' ? 'Node' : runtime === 'bun' ? 'Bun' : 'Deno'}`,
      path: {
        dist: 'compiled dist/ JavaScript',
        bundle: 'one esbuild bundle, dependencies included (as serverless platforms deploy)',
        tsx: 'TypeScript sources through `node --import tsx`',
        ts: 'TypeScript sources (the runtime compiles them)',
      }[path],
      storeLabel: store === 'memory' ? 'memory (keys generated at start)' : 'PostgreSQL holding the keys',
      server: store === 'postgres' && server === 'gatehouse-node' ? 'gatehouse-node-postgres' : server,
      command: [...command],
      env: {
        SERVER: 'gatehouse',
        FROM: path === 'dist' || path === 'bundle' ? 'dist' : 'src',
        DIST_DIR: path === 'bundle' ? bundleDir : distDir,
        STORE: store,
        NODE_ENV: 'production',
      },
      needsDist: path === 'dist' || path === 'bundle',
      store,
      starts: [],
      notes: store === 'postgres' && !process.env.DATABASE_URL ? ['skipped: DATABASE_URL not set'] : [],
    }),
  ),
)
// The PBKDF2 floor: the same start with the client secret stored as a 1-iteration hash, so that
// the first request verifies it in microseconds instead of ~150 ms (600,000 iterations, #20).
for (const base of COLD.filter((c) => c.id === 'cold-node-dist-postgres' || c.id === 'cold-node-dist-memory')) {
  COLD.push({
    ...base,
    id: `${base.id}-cheap-secret`,
    storeLabel: `${base.storeLabel}, client secret hashed with 1 PBKDF2 iteration`,
    env: { ...base.env, CHEAP_SECRET: '1' },
    starts: [],
    notes: [...base.notes],
  })
}
for (const path of ['plain', 'tsx'] as const) {
  COLD.push({
    id: `cold-oidc-provider-${path}`,
    label: 'node-oidc-provider · Node',
    path: path === 'plain' ? 'JavaScript, plain `node`' : 'through `node --import tsx`',
    storeLabel: 'memory (keys in its configuration)',
    server: 'oidc-provider',
    command: path === 'plain' ? [process.execPath, ...coldServer] : [...node, ...coldServer],
    env: { SERVER: 'oidc-provider', NODE_ENV: 'production' },
    needsDist: false,
    store: 'memory',
    starts: [],
    notes: [],
  })
}
// #28 item 8: `npm run start:workers` launched, to its first client_credentials token. Its local D1
// (a folder of this run) is migrated and given its keys by cold_start.ts's unmeasured first start,
// as a deployed Worker's isolate finds its D1. The secret's stored hash has 100,000 iterations,
// the most Cloudflare's runtime allows (the Node cells' 600,000 fail there).
COLD.push({
  id: 'cold-workers-d1',
  label: 'Gatehouse · workerd (Miniflare)',
  path: '`npm run start:workers`: Node 22 + tsx launcher, esbuild bundle, Miniflare starts workerd',
  storeLabel: 'local D1 holding the keys, client secret hashed with 100,000 PBKDF2 iterations (the Workers limit)',
  server: 'gatehouse-workers-d1',
  command: [...node22Command, 'bin/serve_workers.ts'],
  env: { GATEHOUSE_STORE: 'd1', DATABASE_URL: '', REDIS_URL: '', NODE_ENV: 'production' },
  needsDist: false,
  store: 'd1',
  starts: [],
  notes: node22.skip ? [node22.skip] : [],
})
COLD.push({
  id: 'cold-workers-d1-reload',
  label: 'Gatehouse · workerd (Miniflare)',
  path: 'a new workerd under a running Miniflare (`setOptions()`): workerd start, bundle compiled, the isolate builds the service',
  storeLabel: 'local D1 holding the keys, client secret hashed with 100,000 PBKDF2 iterations (the Workers limit)',
  server: 'gatehouse-workers-d1',
  command: [...node22Command, 'bench/workers_reload.ts'],
  env: {},
  needsDist: false,
  store: 'd1',
  reload: true,
  starts: [],
  notes: node22.skip ? [node22.skip] : [],
})
const coldCells = COLD.filter((c) => !onlyServers || onlyServers.includes(c.server))

/** Inputs every cold start shares: the client's stored hash (Gatehouse) and the peer's keys. */
async function coldInputs(): Promise<Record<string, string>> {
  const { hashSecret } = await import('../src/security/secrets.ts')
  const { exportJWK, generateKeyPair } = await import('jose')
  const key = async (alg: 'ES256' | 'RS256') => ({
    ...(await exportJWK((await generateKeyPair(alg, { extractable: true })).privateKey)),
    alg,
    use: 'sig',
    kid: `cold-${alg.toLowerCase()}`,
  })
  return {
    CLIENT_ID: SERVICE_CLIENT.id,
    CLIENT_SECRET: SERVICE_CLIENT.secret,
    CLIENT_SECRET_HASH: await hashSecret(SERVICE_CLIENT.secret),
    CHEAP_SECRET_HASH: await hashSecret(SERVICE_CLIENT.secret, 1),
    WORKERS_SECRET_HASH: await hashSecret(SERVICE_CLIENT.secret, 100_000),
    JWKS: JSON.stringify({ keys: [await key('RS256'), await key('ES256')] }),
  }
}

/** Compiles the package into bench/dist once per run (the `npm run build` compiler and config). */
let distBuilt: Promise<string | undefined> | undefined
function buildDist(): Promise<string | undefined> {
  distBuilt ??= (async () => {
    const started = Date.now()
    try {
      execFileSync(
        join(root, 'node_modules/.bin/tsc'),
        [
          '-p',
          'tsconfig.build.json',
          '--outDir',
          distDir,
          '--declaration',
          'false',
          '--declarationMap',
          'false',
          '--sourceMap',
          'false',
        ],
        { cwd: root, stdio: 'pipe' },
      )
      // What a serverless deployment ships: the entry points bundled with their dependencies
      // (Node's ESM loader pays per module: ~150 ms for the ~100 files of dist/ and its
      // dependencies, ~20 ms for one bundle).
      execFileSync(
        join(root, 'node_modules/.bin/esbuild'),
        [
          'src/index.ts',
          'adapters/node.ts',
          'src/storage/postgres.ts',
          '--bundle',
          '--splitting',
          '--format=esm',
          '--platform=node',
          '--target=es2022',
          '--outbase=.',
          `--outdir=${bundleDir}`,
          '--log-level=warning',
        ],
        { cwd: root, stdio: 'pipe' },
      )
      log(`cold_start: compiled the package into bench/dist in ${((Date.now() - started) / 1000).toFixed(1)} s`)
      return undefined
    } catch (err) {
      const output = String((err as { stdout?: Buffer }).stdout ?? (err as Error).message)
      log(`cold_start: tsc failed, dist cells skipped\n${output.slice(0, 2000)}`)
      return `skipped: tsc -p tsconfig.build.json failed (${output.split('\n')[0]?.slice(0, 120)})`
    }
  })()
  return distBuilt
}

let coldShared: Promise<Record<string, string>> | undefined
async function measureCold(cell: ColdDef, workdir: string): Promise<ColdResult> {
  coldShared ??= coldInputs()
  const shared = await coldShared
  const env = {
    ...cell.env,
    ...shared,
    ...(cell.env.CHEAP_SECRET ? { CLIENT_SECRET_HASH: shared.CHEAP_SECRET_HASH as string } : {}),
  }
  const body = new URLSearchParams({
    grant_type: 'client_credentials',
    scope: API_SCOPE,
    ...(cell.server === 'oidc-provider' ? { resource: API_RESOURCE } : {}),
  }).toString()
  const timeout = settings.coldStarts * 70_000 + 120_000
  if (cell.store === 'd1') {
    // start:workers reads the client from its configuration file, as a deployment's would.
    const dataDir = await mkdtemp(join(workdir, `${cell.id}-`))
    const config = join(dataDir, 'gatehouse.json')
    const text = JSON.stringify({
      clients: [
        {
          clientId: SERVICE_CLIENT.id,
          clientSecret: shared.WORKERS_SECRET_HASH,
          permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
        },
      ],
    })
    writeFileSync(config, text)
    Object.assign(env, { GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_CONFIG: config })
    if (cell.reload) {
      const spec: ReloadSpec = {
        starts: settings.coldStarts,
        config: text,
        dataDir,
        authorization: basicAuth(SERVICE_CLIENT),
        body,
        ...(pinning ? { pinCore: 0 } : {}),
      }
      const runner = start(pinned(1, cell.command), { RELOAD_SPEC: JSON.stringify(spec) })
      return JSON.parse(await waitForLine(runner, 'RESULT', timeout, `cold start ${cell.id}`)) as ColdResult
    }
  }
  const spec: ColdSpec = {
    command: pinned(0, cell.command),
    env,
    ...(cell.store === 'postgres' ? { prime: { command: cell.command, env: { ...env, PRIME: '1' } } } : {}),
    cwd: root,
    starts: settings.coldStarts,
    path: cell.server === 'oidc-provider' ? '/token' : '/connect/token',
    authorization: basicAuth(SERVICE_CLIENT),
    body,
  }
  const runner = start(pinned(1, [...node, 'bench/cold_start.ts']), { COLD_SPEC: JSON.stringify(spec) })
  return JSON.parse(await waitForLine(runner, 'RESULT', timeout, `cold start ${cell.id}`)) as ColdResult
}

// ---------------------------------------------------------------------------------------------
// Store sizes (scenario store_size, measured once per run)

const SIZE: SizeCell[] = (['memory', 'postgres', 'redis'] as const).flatMap((store) =>
  (['refresh_token', 'session'] as const).flatMap((record) =>
    settings.sizeCounts.map(
      (count): SizeCell => ({
        id: `size-${store}-${record}-${count}`,
        store,
        record,
        count,
        notes:
          store === 'postgres' && !process.env.DATABASE_URL
            ? ['skipped: DATABASE_URL not set']
            : store === 'redis' && !process.env.REDIS_URL
              ? ['skipped: REDIS_URL not set']
              : [],
      }),
    ),
  ),
)
const sizeServer = { memory: 'gatehouse-node', postgres: 'gatehouse-node-postgres', redis: 'gatehouse-node-redis' }
const sizeCells = SIZE.filter((c) => !onlyServers || onlyServers.includes(sizeServer[c.store]))

async function measureSize(cell: SizeCell): Promise<SizeResult> {
  const spec: SizeSpec = { store: cell.store, record: cell.record, count: cell.count }
  const child = start([...node, '--expose-gc', 'bench/store_size.ts'], { SIZE_SPEC: JSON.stringify(spec) })
  return JSON.parse(await waitForLine(child, 'RESULT', 900_000, `store size ${cell.id}`)) as SizeResult
}

const log = (message: string) => process.stderr.write(`${message}\n`)
const cells: Cell[] = []
for (const scenario of scenarios) {
  for (const server of servers) {
    if (!inRun(scenario, server)) continue
    cells.push({ scenario: scenario.id, server: server.id, samples: [], notes: server.skip ? [server.skip] : [] })
  }
}
const runnable = (cell: Cell) => !SERVERS.find((s) => s.id === cell.server)?.skip
const wantCold = scenarios.some((s) => s.special === 'cold')
const wantSize = scenarios.some((s) => s.special === 'size')
const total =
  (cells.filter(runnable).length + (wantCold ? coldCells.filter((c) => c.notes.length === 0).length : 0)) *
    settings.rounds +
  (wantSize ? sizeCells.filter((c) => c.notes.length === 0).length : 0)
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
      if (scenario.special === 'cold') {
        const row = coldCells.filter((c) => c.notes.length === 0)
        for (const cell of row.map((_, i) => row[(i + round) % row.length] as ColdDef)) {
          done++
          if (cell.needsDist) {
            const failed = await buildDist()
            if (failed) {
              cell.notes.push(failed)
              continue
            }
          }
          try {
            const result = await measureCold(cell, workdir)
            cell.starts.push(...result.starts)
            for (const failure of result.failures) cell.notes.push(`failed: ${failure.split('\n')[0]}`)
            const totals = result.starts.map((x) => Math.round(x.total))
            log(
              `[${done}/${total} ${Math.round((Date.now() - started) / 1000)}s] round ${round + 1} cold_start · ${cell.id}: ` +
                `first 200 after ${totals.join(', ')} ms${result.failures.length ? ` (${result.failures.length} failed: ${result.failures[0]})` : ''}`,
            )
          } catch (err) {
            cell.notes.push(`failed: ${(err as Error).message.split('\n')[0]}`)
            log(`[${done}/${total}] round ${round + 1} cold_start · ${cell.id}: FAILED\n${(err as Error).message}`)
          }
        }
        continue
      }
      if (scenario.special === 'size') {
        if (round > 0) continue
        for (const cell of sizeCells.filter((c) => c.notes.length === 0)) {
          done++
          try {
            cell.result = await measureSize(cell)
            const r = cell.result
            log(
              `[${done}/${total} ${Math.round((Date.now() - started) / 1000)}s] store_size · ${cell.id}: ` +
                `${Math.round(r.bytesPerRecord)} B per record (${r.measure}), seeded in ${r.seedSeconds.toFixed(1)} s (${r.method})`,
            )
          } catch (err) {
            cell.notes.push(`failed: ${(err as Error).message.split('\n')[0]}`)
            log(`[${done}/${total}] store_size · ${cell.id}: FAILED\n${(err as Error).message}`)
          }
        }
        continue
      }
      const row = cells.filter((c) => c.scenario === scenario.id && runnable(c))
      // Rotate the servers' order every round so no server always runs first or last.
      const order = row.map((_, i) => row[(i + round) % row.length] as Cell)
      for (const cell of order) {
        const server = SERVERS.find((s) => s.id === cell.server) as ServerDef
        done++
        try {
          const sample = await measure(scenario, server, workdir)
          cell.samples.push({ ...sample, round })
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
              `${Math.round(sample.rps)} req/s, p50 ${Number(sample.p50).toFixed(2)} ms, p99 ${Number(sample.p99).toFixed(2)} ms, ` +
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
  await (await localCluster?.catch(() => undefined))?.stop()
}

const report: ReportInput = {
  scenarios: scenarios.map(({ id, label }) => ({ id, label })),
  servers: servers.map(({ id, label }) => ({ id, label })),
  cells,
  gatehouse: [
    'gatehouse-node',
    'gatehouse-node-inline',
    'gatehouse-node-cheap-password',
    'gatehouse-node-postgres',
    'gatehouse-node-redis',
    'gatehouse-node-redis-cluster',
    'gatehouse-node-redis-cluster-wait',
    'gatehouse-node-sqlite',
    'gatehouse-workers-d1',
    'gatehouse-workers',
    'gatehouse-bun',
    'gatehouse-deno',
    ...baseIds,
  ],
  peer: 'oidc-provider',
  storePeers: { 'gatehouse-node-postgres': 'oidc-provider-postgres' },
  ceilings: ['ceiling-jose', 'ceiling-crypto', 'ceiling-crypto-batch'],
  sameRuntime: {
    scenarios: CEILING_FLOWS,
    ceilingsOf: CEILINGS_OF,
  },
  stores: scenarios.filter((s) => s.seed).map((s) => ({ scenario: s.id, tokens: s.seed as number })),
  storeServer: 'gatehouse-node',
  bridges: {
    scenario: 'bridge',
    bare: 'bridge-bare',
    servers: ['bridge-gatehouse', 'bridge-hattip', 'bridge-hattip-buffered'],
  },
  dpop: {
    plain: 'client_credentials',
    scenarios: ['client_credentials_dpop', 'client_credentials_dpop_ps256'],
    plainOf: { 'gatehouse-node-inline-dpop': 'gatehouse-node' },
  },
}
/** #43 item 5: each cluster row against the row it is judged by (the cluster; WAIT's cost on it). */
const CLUSTER_PAIRS = [
  { server: 'gatehouse-node-redis-cluster', base: 'gatehouse-node-redis' },
  { server: 'gatehouse-node-redis-cluster-wait', base: 'gatehouse-node-redis-cluster' },
]
const bridges = bridgeTable(report)
const sameRuntime = sameRuntimeTable(report)
const ratios = ratioTable(report)
const dpopCost = dpopTable(report)
const storeCost = cpuTable(
  report,
  ['introspection', 'authorization_code', 'refresh_token', 'authorization_code_eddsa', 'refresh_token_eddsa'],
  [
    'gatehouse-node',
    'gatehouse-node-postgres',
    'gatehouse-node-redis',
    'gatehouse-node-redis-cluster',
    'gatehouse-node-redis-cluster-wait',
    'gatehouse-node-sqlite',
    'gatehouse-workers-d1',
    'oidc-provider',
    'oidc-provider-postgres',
  ],
)
const clusterPairs = pairTable(report, CLUSTER_FLOWS, CLUSTER_PAIRS)
/** #44 item 5: each store against memory, and the issue's targets judged from the same rounds. */
const stores = storesTable(report, STORE_FLOWS, 'gatehouse-node', STORE_ROWS)
const verdicts = judgeTargets(report, TARGETS_44)
const targets = targetsTable(report, verdicts)
const storeSections = [
  ...(targets
    ? [
        '',
        '## #44 targets (same-round ratio, median over rounds; judge on a quiet machine)',
        '',
        targets,
        '',
        `${targetSummary(verdicts)}.`,
      ]
    : []),
  ...(stores
    ? [
        '',
        '## Stores: code redemption and refresh against the memory store (#44)',
        '',
        'Database CPU counts every `postgres` and `redis-server` process of the machine in the measured window (other work on them included: the memory row shows that floor); SQLite runs in the server process.',
        '',
        stores,
      ]
    : []),
]
const signin = signinTable(report, 'signin_flow')
const cold = wantCold ? coldTable(coldCells, settings.coldStarts) : ''
const sizes = wantSize ? sizeTable(sizeCells) : ''
const anyStore = report.stores.some(({ scenario }) =>
  cells.some((c) => c.scenario === scenario && c.samples.length > 0),
)
const header = [
  preset ? `# Benchmark results: --preset=${presetName}` : '# Benchmark results',
  '',
  `Latest \`npm run ${preset ? `bench:${presetName}` : 'bench'}\` (generated by bench/run.ts; method in bench/README.md). ` +
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
]
const markdown = (
  preset
    ? [...header, ...storeSections, '', '## Throughput and latency (every cell of the run)', '', mainTable(report), '']
    : [...header, ...full()]
).join('\n')

/** The full run's sections (without a preset). */
function full(): string[] {
  return [
    '',
    '## Throughput and latency',
    '',
    mainTable(report),
    '',
    ...(ratios.split('\n').length > 2 ? ['## Ratios (requests/s)', '', ratios] : []),
    ...(sameRuntime
      ? [
          '',
          `## ÷ ceiling of the same runtime (#31: target ≥ ${SAME_RUNTIME_TARGET}× for client credentials, code redemption, refresh)`,
          '',
          sameRuntime,
        ]
      : []),
    ...storeSections,
    ...(anyStore
      ? [
          '',
          '## Store size: flat cost and memory per refresh token (Gatehouse · Node · memory)',
          '',
          storeTable(report),
        ]
      : []),
    ...(dpopCost
      ? ['', '## DPoP: cost of a client_credentials request with a proof ÷ without (same server)', '', dpopCost]
      : []),
    ...(clusterPairs
      ? [
          '',
          '## Redis Cluster ÷ single-node Redis, and WAIT ÷ no WAIT on the cluster (#43 items 5 and 4; read the same-round ratio)',
          '',
          clusterPairs,
        ]
      : []),
    ...(storeCost
      ? [
          '',
          '## CPU per request with a shared store (measured window; the database on the same two cores)',
          '',
          storeCost,
        ]
      : []),
    ...(bridges ? ['', '## Node bridges: a trivial fetch handler against bare node:http', '', bridges] : []),
    ...(signin ? ['', '## Browser sign-in: authorize → sign-in form POST → code → token, per second', '', signin] : []),
    ...(cold ? ['', '## Cold start: process start → first client_credentials 200', '', cold] : []),
    ...(sizes ? ['', '## Store size: bytes per session and per refresh token', '', sizes] : []),
    '',
  ]
}

const out = listFlag('--out')?.join(',')
const resultsFile = out ? resolve(root, out) : join(root, preset?.out ?? 'bench/RESULTS.md')
writeFileSync(resultsFile, markdown)
try {
  // The project's formatter lints bench/ too: write the tables the way it would (aligned columns).
  execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', resultsFile], { stdio: 'ignore' })
} catch {
  // Unformatted Markdown renders the same.
}
process.stdout.write(`\n${readFileSync(resultsFile, 'utf8')}`)
log(`bench: wrote ${relative(root, resultsFile)}`)
const failed = cells.filter((c) => runnable(c) && summarize(c) === undefined)
const coldFailed = wantCold && coldCells.some((c) => c.notes.some((n) => n.startsWith('failed')))
const sizeFailed = wantSize && sizeCells.some((c) => c.notes.some((n) => n.startsWith('failed')))
if (failed.length > 0 || coldFailed || sizeFailed) process.exitCode = 1
if (verdicts.length > 0) log(`bench: #44 targets: ${targetSummary(verdicts)}`)
// #44 item 5: only when asked: a busy machine cannot judge a target.
const missed = failedTargets(verdicts)
if (check && missed.length > 0) {
  for (const v of missed)
    log(
      `bench: --check: ${v.target.what}, ${v.target.scenario}: ${v.status}${v.ratio === undefined ? '' : ` (${v.ratio.toFixed(2)}×)`}`,
    )
  process.exitCode = 1
}
