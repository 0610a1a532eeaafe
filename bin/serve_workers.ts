/**
 * `npm run start:workers`: the standalone server on workerd, Cloudflare's Workers runtime, locally
 * through Miniflare (no Cloudflare account). Same flags and environment as `npm start`: --config
 * FILE (or GATEHOUSE_CONFIG), --demo, PORT, HOST, ISSUER, LOG_FORMAT, METRICS; the file is read and
 * checked here, in Node, and handed to the Worker (bin/serve_workers_entry.ts, bundled with
 * esbuild) as bindings. GATEHOUSE_INSPECTOR_PORT opens workerd's DevTools inspector on that port
 * (default: none, so that several can run at once). SIGTERM or SIGINT stops workerd and exits.
 *
 * The store: GATEHOUSE_STORE=d1, the default: a local D1 (binding DB) kept in GATEHOUSE_DATA_DIR
 * (default ./gatehouse-data, under workers/), migrated at start; two processes on one folder are
 * two instances of one deployment (workerd's SQLite is shared through the file). Without --config
 * it is seeded with the demo only with --demo, as `npm start` on a persistent store.
 * GATEHOUSE_STORE=memory: the in-memory store (one local isolate, so one memory), demo seeded.
 *
 * Needs Node 22 or later (Miniflare's requirement); `npm start` itself runs on Node 20.
 */
import { mkdir, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Miniflare } from 'miniflare'
import { isLoopback } from '../src/security/index.ts'
import type { Runtime } from './runtime.ts'
import { onParentExit } from './parent_exit.ts'
import { DEMO } from './seed.ts'
import { PATHS } from './start_app.ts'
import { seededLines } from './start_listen.ts'
import { readAddress, readConfigFile, readConfigPath, readDemoFlag, readSettings } from './start_options.ts'
import { bundleWorker, createMiniflare, miniflareOptions } from './workerd.ts'

const ENTRY = fileURLToPath(new URL('./serve_workers_entry.ts', import.meta.url))

const runtime: Runtime = {
  name: 'workers',
  args: process.argv.slice(2),
  env: (name) => process.env[name],
  readTextFile: (path) => readFile(path, 'utf8'),
  serve: () => Promise.reject(new Error('workerd listens, not this process')),
  onSignal: (signal, listener) => process.on(signal, listener),
  exit: (code) => process.exit(code),
}

const { log, fail, settings } = readSettings(runtime)
const major = Number(process.versions.node.split('.')[0])
if (major < 22)
  fail(`npm run start:workers needs Node 22 or later (Miniflare runs workerd), this is Node ${process.versions.node}`)
if (settings.METRICS_PORT !== undefined)
  fail('METRICS_PORT is not available on workerd: use METRICS=true (/metrics on PORT)')
const configPath = readConfigPath(runtime, log, fail)
const { port, hostname } = readAddress(runtime, fail)
const file = await readConfigFile(runtime, configPath, fail)
const demo = readDemoFlag(runtime, log)
if (file && demo) {
  fail('--demo (GATEHOUSE_DEMO) seeds the demo clients when no configuration file is given; the file lists the clients')
}

type LocalStore = {
  type: 'memory' | 'd1' | 'postgres'
  describe: string
  persist?: string
  bindings?: Record<string, string>
}

/**
 * #28 item 4: PostgreSQL (GATEHOUSE_STORE=postgres, or DATABASE_URL without GATEHOUSE_STORE), as
 * `npm start` reads it: DATABASE_URL and GATEHOUSE_PG_SCHEMA go to the Worker as bindings, and it
 * connects over workerd's TCP sockets (nodejs_compat), a client per request.
 */
function choosePostgres(kind: string | undefined): LocalStore | undefined {
  const url = runtime.env('DATABASE_URL') || undefined
  if (kind !== 'postgres' && (kind !== undefined || url === undefined)) return undefined
  if (url === undefined) return fail('GATEHOUSE_STORE=postgres needs DATABASE_URL')
  const where = URL.canParse(url) ? new URL(url) : fail('DATABASE_URL is not a URL (postgres://user@host:5432/db)')
  const schema = runtime.env('GATEHOUSE_PG_SCHEMA') || undefined
  return {
    type: 'postgres',
    describe: `PostgreSQL store at ${where.hostname}:${where.port || 5432}${where.pathname} (schema ${schema ?? 'public'}, a client per request)`,
    bindings: { DATABASE_URL: url, ...(schema ? { GATEHOUSE_PG_SCHEMA: schema } : {}) },
  }
}

/** The store of the local Worker, from the environment (as `npm start` reads it), checked here. */
function chooseStore(): LocalStore {
  const kind = runtime.env('GATEHOUSE_STORE') || undefined
  const postgres = choosePostgres(kind)
  if (postgres) return postgres
  if (kind !== undefined && kind !== 'memory' && kind !== 'd1') {
    fail(`GATEHOUSE_STORE must be d1, memory or postgres for start:workers, got ${JSON.stringify(kind)}`)
  }
  if (file?.store !== undefined && file.store.type !== 'memory') {
    fail(`the configuration file's store (${file.store.type}) is not available on workerd: remove "store" from it`)
  }
  if (kind === 'memory' || (kind === undefined && file?.store?.type === 'memory')) {
    return { type: 'memory', describe: 'in-memory store (one local isolate)' }
  }
  const dataDir = resolve(runtime.env('GATEHOUSE_DATA_DIR') || './gatehouse-data')
  return { type: 'd1', describe: `local D1 store in ${join(dataDir, 'workers')}`, persist: join(dataDir, 'workers') }
}
const store = chooseStore()
const issuer = runtime.env('ISSUER') ?? file?.issuer ?? `http://localhost:${port}`
// The demo seed belongs to the in-memory store; a persistent store keeps it, so it takes --demo.
const seed = !file && (store.type === 'memory' || demo)

const inspector = runtime.env('GATEHOUSE_INSPECTOR_PORT') || undefined
if (inspector !== undefined && (!/^\d{1,5}$/.test(inspector) || Number(inspector) > 65535)) {
  fail(`GATEHOUSE_INSPECTOR_PORT must be a port number, got ${JSON.stringify(inspector)}`)
}

const script = await bundleWorker(ENTRY).catch((err: Error) => fail(`bundling the Worker failed: ${err.message}`))

const bindings: Record<string, string> = {
  ISSUER: issuer,
  GATEHOUSE_STORE: store.type,
  GATEHOUSE_STORE_DESCRIPTION: store.describe,
  LOG_FORMAT: settings.LOG_FORMAT,
  METRICS: settings.METRICS,
  ...(seed ? { GATEHOUSE_SEED: '1' } : {}),
  ...store.bindings, // #28 item 4: DATABASE_URL, GATEHOUSE_PG_SCHEMA
  ...(file && configPath
    ? { GATEHOUSE_CONFIG_TEXT: await readFile(configPath, 'utf8'), GATEHOUSE_CONFIG_PATH: configPath }
    : {}),
}

if (store.persist) await mkdir(store.persist, { recursive: true })
const options = await miniflareOptions({
  host: hostname,
  port,
  ...(inspector !== undefined ? { inspectorPort: Number(inspector) } : {}),
  name: 'gatehouse',
  script,
  bindings,
  d1: store.type === 'd1',
  ...(store.persist ? { persist: store.persist } : {}),
})

/** workerd stops at start when another instance holds the local D1 it opens (SQLite busy). */
const LOCKED = /database is locked|SQLITE_BUSY/

/**
 * Starts workerd. Two instances starting at once on one GATEHOUSE_DATA_DIR (#28 item 5) can find
 * the local D1 locked by the other, and workerd then exits at start: this starts it again, a few
 * times, after a random pause, so that both come up. Any other failure ends the process.
 */
async function launch(): Promise<{ miniflare: Miniflare; url: URL }> {
  for (let attempt = 1; ; attempt++) {
    const instance = await createMiniflare(options)
    try {
      return { miniflare: instance, url: await instance.ready }
    } catch (err) {
      await instance.dispose().catch(() => {})
      const message = (err as Error).message
      if (attempt < 6 && LOCKED.test(message)) {
        log.warn(`workerd found the local D1 in ${store.persist} locked by another instance: starting again`)
        await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 800))
        continue
      }
      return fail(/EADDRINUSE|address already in use/i.test(message) ? `PORT ${port} is in use: ${message}` : message)
    }
  }
}
const { miniflare, url } = await launch()
// The service is built on the isolate's first request: make it now, so that a bad file or
// store shows at start, as with `npm start`.
// A build that failed answers 503 and is tried again by the next request: a few tries, since
// instances starting together on one local D1 can meet each other's writes (SQLITE_BUSY).
let first: Awaited<ReturnType<typeof miniflare.dispatchFetch>> | Error = new Error('not tried')
for (let attempt = 0; attempt < 8; attempt++) {
  if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250 * attempt))
  first = await miniflare.dispatchFetch(new URL('/healthz', url)).catch((err: Error) => err)
  if (first instanceof Error || first.status !== 503) break
  await first.arrayBuffer()
}
if (first instanceof Error || first.status !== 200) {
  await miniflare.dispose().catch(() => {})
  fail(`the Worker did not start: ${first instanceof Error ? first.message : `${first.status} ${await first.text()}`}`)
}

const host = hostname.includes(':') ? `[${hostname}]` : hostname
log.info(`Gatehouse (workerd) listening on http://${host}:${port}, issuer ${issuer}, ${store.describe}`, {
  runtime: 'workerd',
  url: `http://${host}:${port}`,
  issuer,
  store: store.describe,
})
if (configPath) log.info(`Loaded ${configPath}`)
if (seed) {
  // The same lines as `npm start` (#40 item 6); the Worker serves the demo client at /demo too.
  const user = DEMO.users[0]
  const at = new URL(issuer)
  const served = user && (at.protocol === 'https:' || isLoopback(at.hostname)) // as bin/start_plan.ts
  const sample = served
    ? { url: `${at.origin}${PATHS.demo}`, username: user.username, password: user.password }
    : undefined
  for (const line of seededLines(`${issuer}/connect/token`, sample)) log.info(line)
}

let stopping = false
async function stop(): Promise<void> {
  if (stopping) return
  stopping = true
  const grace = setTimeout(() => process.exit(0), Number(settings.SHUTDOWN_TIMEOUT) * 1000 + 2000)
  grace.unref()
  await miniflare.dispose().catch((err: Error) => log.error(`stopping workerd: ${err.message}`))
  log.info('Gatehouse stopped')
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('SIGINT', () => void stop())
onParentExit(() => void stop())
