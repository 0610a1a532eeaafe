/**
 * Picks and opens the store of `npm start`. In order: GATEHOUSE_STORE (memory, postgres, redis,
 * pglite, sqlite) with the variables below, else DATABASE_URL (PostgreSQL), else REDIS_CLUSTER_NODES,
 * REDIS_SENTINELS or REDIS_URL (Redis, in this order), else the configuration file's `store`, else memory.
 *
 * PostgreSQL: DATABASE_URL, GATEHOUSE_PG_SCHEMA (default public); migrations run at start (the
 * other CLI commands only check that there is none pending: they never change the schema).
 * Redis: REDIS_URL, GATEHOUSE_REDIS_PREFIX (default `gatehouse:`). A Redis Cluster (#43):
 * REDIS_CLUSTER_NODES, comma-separated `host:port` seed nodes; it wins over REDIS_SENTINELS and
 * REDIS_URL. Redis Sentinel (#43): REDIS_SENTINELS, comma-separated `host:port` sentinels, with
 * REDIS_SENTINEL_NAME, the master name they monitor (required with it); it wins over REDIS_URL.
 * With it, REDIS_PASSWORD (the primary's and replicas' `requirepass`) and REDIS_SENTINEL_PASSWORD
 * (the sentinels' own), each when set.
 * Writes that must survive a failover wait for replicas (#43 item 4): REDIS_WAIT_REPLICAS
 * (default 0), REDIS_WAIT_TIMEOUT (milliseconds, default 250).
 * PGlite: GATEHOUSE_DATA_DIR (default ./gatehouse-data); migrations run at start.
 * SQLite (#28): the file gatehouse.db in GATEHOUSE_DATA_DIR (default ./gatehouse-data), created with
 * the folder; migrations run at start. Needs Node ≥ 22.5, Bun or Deno. GATEHOUSE_SQLITE_SYNCHRONOUS
 * (full, the default, or normal, #44 item 3): what a commit waits for; it wins over the file's.
 * The database drivers are imported only when their store is chosen.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { StoreConfig } from '../src/config/index.ts'
import type { Store } from '../src/storage/index.ts'

/** The store configuration the environment and the file ask for. */
export function chooseStore(env: (name: string) => string | undefined, file: StoreConfig | undefined): StoreConfig {
  const kind = env('GATEHOUSE_STORE')
  const databaseUrl = env('DATABASE_URL')
  const redisUrl = env('REDIS_URL')
  const clusterNodes = env('REDIS_CLUSTER_NODES')
  const sentinels = env('REDIS_SENTINELS')
  const schema = env('GATEHOUSE_PG_SCHEMA')
  const prefix = env('GATEHOUSE_REDIS_PREFIX')
  const postgres = (url: string): StoreConfig => ({ type: 'postgres', url, ...(schema ? { schema } : {}) })
  const behaviour = { ...(prefix ? { prefix } : {}), ...replicaWaitEnv(env) }
  const redis = (url: string): StoreConfig => ({ type: 'redis', url, ...behaviour })
  const redisCluster = (nodes: string): StoreConfig => ({
    type: 'redis',
    cluster: parseClusterNodes(nodes),
    ...behaviour,
  })
  const redisSentinel = (nodes: string): StoreConfig => ({
    type: 'redis',
    sentinel: {
      nodes: parseClusterNodes(nodes, 'REDIS_SENTINELS'),
      name: sentinelName(env('REDIS_SENTINEL_NAME')),
      ...(env('REDIS_PASSWORD') ? { password: env('REDIS_PASSWORD') } : {}),
      ...(env('REDIS_SENTINEL_PASSWORD') ? { sentinelPassword: env('REDIS_SENTINEL_PASSWORD') } : {}),
    },
    ...behaviour,
  })
  switch (kind) {
    case undefined:
    case '':
      if (databaseUrl) return postgres(databaseUrl)
      if (clusterNodes) return redisCluster(clusterNodes)
      if (sentinels) return redisSentinel(sentinels)
      if (redisUrl) return redis(redisUrl)
      // The file's Redis store takes REDIS_WAIT_* too (the environment wins, as for every setting).
      if (file?.type === 'redis') return { ...file, ...replicaWaitEnv(env) }
      if (file?.type === 'sqlite') return { ...file, ...sqliteEnv(env) }
      return file ?? { type: 'memory' }
    case 'memory':
      return { type: 'memory' }
    case 'postgres':
      if (!databaseUrl) throw new TypeError('GATEHOUSE_STORE=postgres needs DATABASE_URL')
      return postgres(databaseUrl)
    case 'redis':
      if (clusterNodes) return redisCluster(clusterNodes)
      if (sentinels) return redisSentinel(sentinels)
      if (!redisUrl)
        throw new TypeError('GATEHOUSE_STORE=redis needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS')
      return redis(redisUrl)
    case 'pglite':
      return { type: 'pglite', dataDir: env('GATEHOUSE_DATA_DIR') ?? './gatehouse-data' }
    case 'sqlite':
      return { type: 'sqlite', dataDir: env('GATEHOUSE_DATA_DIR') ?? './gatehouse-data', ...sqliteEnv(env) }
    default:
      throw new TypeError(
        `GATEHOUSE_STORE must be memory, postgres, redis, pglite or sqlite, got ${JSON.stringify(kind)}`,
      )
  }
}

/** GATEHOUSE_SQLITE_SYNCHRONOUS, checked (#44 item 3). */
function sqliteEnv(env: (name: string) => string | undefined): { synchronous?: 'full' | 'normal' } {
  const value = env('GATEHOUSE_SQLITE_SYNCHRONOUS')
  if (value === undefined || value === '') return {}
  if (value !== 'full' && value !== 'normal') {
    throw new TypeError(`GATEHOUSE_SQLITE_SYNCHRONOUS must be full or normal, got ${JSON.stringify(value)}`)
  }
  return { synchronous: value }
}

/** REDIS_WAIT_REPLICAS and REDIS_WAIT_TIMEOUT, as the store options they set (the store checks their range). */
function replicaWaitEnv(env: (name: string) => string | undefined): { waitReplicas?: number; waitTimeout?: number } {
  const integer = (name: string): number | undefined => {
    const value = env(name)
    if (value === undefined || value === '') return undefined
    if (!/^\d{1,6}$/.test(value)) throw new TypeError(`${name} must be a whole number, got ${JSON.stringify(value)}`)
    return Number(value)
  }
  const waitReplicas = integer('REDIS_WAIT_REPLICAS')
  const waitTimeout = integer('REDIS_WAIT_TIMEOUT')
  return {
    ...(waitReplicas !== undefined ? { waitReplicas } : {}),
    ...(waitTimeout !== undefined ? { waitTimeout } : {}),
  }
}

/**
 * REDIS_CLUSTER_NODES (or REDIS_SENTINELS, `variable`): comma-separated `host:port` nodes, checked (a
 * TypeError names a bad one).
 */
export function parseClusterNodes(value: string, variable = 'REDIS_CLUSTER_NODES'): string[] {
  const nodes = value
    .split(',')
    .map((node) => node.trim())
    .filter((node) => node !== '')
  if (nodes.length === 0) throw new TypeError(`${variable} must list host:port nodes, separated by commas`)
  for (const node of nodes) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/.test(node)) {
      throw new TypeError(`${variable}: each node must be host:port, got ${JSON.stringify(node)}`)
    }
  }
  return nodes
}

/** REDIS_SENTINEL_NAME: the master name the sentinels monitor, required with REDIS_SENTINELS. */
function sentinelName(value: string | undefined): string {
  const name = value?.trim() ?? ''
  if (name === '') {
    throw new TypeError(
      'REDIS_SENTINELS needs REDIS_SENTINEL_NAME, the name of the master the sentinels monitor (sentinel monitor <name> …)',
    )
  }
  return name
}

/** A description without credentials, for the start-up line. */
export function describeStore(config: StoreConfig): string {
  switch (config.type) {
    case 'memory':
      return 'in-memory store'
    case 'pglite':
      return `PGlite store in ${config.dataDir}`
    case 'sqlite':
      return `SQLite store in ${sqliteFile(config.dataDir)}`
    case 'redis': {
      if (config.cluster) return `Redis Cluster store at ${config.cluster.join(',')}`
      if (config.sentinel) {
        return `Redis Sentinel store at ${config.sentinel.nodes.join(',')} (master ${config.sentinel.name})`
      }
      const url = new URL(config.url as string)
      return `Redis store at ${url.hostname}:${url.port || 6379}${url.pathname}`
    }
    default: {
      const url = new URL(config.url)
      const where = `${url.hostname}:${url.port || 5432}${url.pathname}`
      return `PostgreSQL store at ${where} (schema ${config.schema ?? 'public'})`
    }
  }
}

/** The SQLite store's database file in the data folder. */
export function sqliteFile(dataDir: string): string {
  return join(dataDir, 'gatehouse.db')
}

/** The SQL store has migrations pending: a command that does not migrate refuses to use it. */
export class NotMigratedError extends Error {}

/**
 * Fails with NotMigratedError unless every migration is applied: `gatehouse clients list` on a
 * schema nobody migrated must not create its tables (#27 item 13), nor run against half of them.
 */
async function checkMigrated(
  store: { pendingMigrations(): Promise<number[]> },
  config: StoreConfig,
  variables: string,
): Promise<void> {
  const pending = await store.pendingMigrations()
  if (pending.length === 0) return
  throw new NotMigratedError(
    `the ${describeStore(config)} is not migrated (${pending.length} migration(s) pending): run "gatehouse migrate" (or start the server, "gatehouse serve") with the same ${variables}; nothing was changed`,
  )
}

/**
 * Opens the store: connects (failing clearly when unreachable) and, with `migrate` (the server, the
 * default), migrates SQL schemas; without, fails with NotMigratedError when a migration is pending.
 */
export async function openStore(config: StoreConfig, { migrate = true } = {}): Promise<Store | undefined> {
  switch (config.type) {
    case 'memory':
      return undefined // the service's default
    case 'postgres': {
      const { createPostgresStore } = await import('../src/storage/postgres.ts')
      const store = createPostgresStore({ url: config.url, ...(config.schema ? { schema: config.schema } : {}) })
      return prepared(store, async () => {
        await store.connect()
        if (migrate) await store.migrate()
        else await checkMigrated(store, config, 'DATABASE_URL and GATEHOUSE_PG_SCHEMA')
      })
    }
    case 'redis': {
      const { createRedisStore } = await import('../src/storage/redis.ts')
      const where = config.cluster
        ? { cluster: config.cluster }
        : config.sentinel
          ? { sentinel: sentinelConnection(config.sentinel) }
          : { url: config.url as string }
      const { prefix, waitReplicas, waitTimeout } = config
      const store = createRedisStore({
        ...where,
        ...(prefix ? { prefix } : {}),
        ...(waitReplicas !== undefined ? { waitReplicas } : {}),
        ...(waitTimeout !== undefined ? { waitTimeout } : {}),
      })
      return prepared(store, () => store.connect())
    }
    case 'pglite': {
      const { createPgliteStore } = await import('../src/storage/pglite.ts')
      const store = createPgliteStore({ dataDir: config.dataDir })
      return prepared(store, async () => {
        if (migrate) await store.migrate()
        else await checkMigrated(store, config, 'GATEHOUSE_DATA_DIR')
      })
    }
    case 'sqlite': {
      const { createSqliteStore } = await import('../src/storage/sqlite.ts')
      if (migrate) mkdirSync(config.dataDir, { recursive: true })
      const { synchronous } = config
      const store = createSqliteStore({ path: sqliteFile(config.dataDir), ...(synchronous ? { synchronous } : {}) })
      return prepared(store, async () => {
        if (migrate) await store.migrate()
        else await checkMigrated(store, config, 'GATEHOUSE_DATA_DIR')
      })
    }
  }
}

/** The store's Sentinel option from the configuration's (the passwords go to ioredis as they are). */
function sentinelConnection(sentinel: NonNullable<Extract<StoreConfig, { type: 'redis' }>['sentinel']>): {
  nodes: string[]
  name: string
  options: { password?: string; sentinelPassword?: string }
} {
  const { nodes, name, password, sentinelPassword } = sentinel
  return {
    nodes,
    name,
    options: { ...(password ? { password } : {}), ...(sentinelPassword ? { sentinelPassword } : {}) },
  }
}

/** The store once `prepare` (connect, migrate or check) succeeded; closed when it failed. */
async function prepared<S extends Store & { close(): Promise<void> }>(
  store: S,
  prepare: () => Promise<void>,
): Promise<S> {
  try {
    await prepare()
  } catch (err) {
    await store.close().catch(() => {})
    throw err
  }
  return store
}
