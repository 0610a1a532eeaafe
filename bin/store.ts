/**
 * Picks and opens the store of `npm start`. In order: GATEHOUSE_STORE (memory, postgres, redis,
 * pglite) with the variables below, else DATABASE_URL (PostgreSQL), else REDIS_URL (Redis), else
 * the configuration file's `store`, else memory.
 *
 * PostgreSQL: DATABASE_URL, GATEHOUSE_PG_SCHEMA (default public); migrations run at start.
 * Redis: REDIS_URL, GATEHOUSE_REDIS_PREFIX (default `gatehouse:`).
 * PGlite: GATEHOUSE_DATA_DIR (default ./gatehouse-data); migrations run at start.
 * The database drivers are imported only when their store is chosen.
 */
import type { StoreConfig } from '../src/config_file.ts'
import type { Store } from '../src/storage/types.ts'

/** The store configuration the environment and the file ask for. */
export function chooseStore(env: (name: string) => string | undefined, file: StoreConfig | undefined): StoreConfig {
  const kind = env('GATEHOUSE_STORE')
  const databaseUrl = env('DATABASE_URL')
  const redisUrl = env('REDIS_URL')
  const schema = env('GATEHOUSE_PG_SCHEMA')
  const prefix = env('GATEHOUSE_REDIS_PREFIX')
  const postgres = (url: string): StoreConfig => ({ type: 'postgres', url, ...(schema ? { schema } : {}) })
  const redis = (url: string): StoreConfig => ({ type: 'redis', url, ...(prefix ? { prefix } : {}) })
  switch (kind) {
    case undefined:
    case '':
      if (databaseUrl) return postgres(databaseUrl)
      if (redisUrl) return redis(redisUrl)
      return file ?? { type: 'memory' }
    case 'memory':
      return { type: 'memory' }
    case 'postgres':
      if (!databaseUrl) throw new TypeError('GATEHOUSE_STORE=postgres needs DATABASE_URL')
      return postgres(databaseUrl)
    case 'redis':
      if (!redisUrl) throw new TypeError('GATEHOUSE_STORE=redis needs REDIS_URL')
      return redis(redisUrl)
    case 'pglite':
      return { type: 'pglite', dataDir: env('GATEHOUSE_DATA_DIR') ?? './gatehouse-data' }
    default:
      throw new TypeError(`GATEHOUSE_STORE must be memory, postgres, redis or pglite, got ${JSON.stringify(kind)}`)
  }
}

/** A description without credentials, for the start-up line. */
export function describeStore(config: StoreConfig): string {
  switch (config.type) {
    case 'memory':
      return 'in-memory store'
    case 'pglite':
      return `PGlite store in ${config.dataDir}`
    default: {
      const url = new URL(config.url)
      const where = `${url.hostname}:${url.port || (config.type === 'postgres' ? 5432 : 6379)}${url.pathname}`
      return config.type === 'postgres'
        ? `PostgreSQL store at ${where} (schema ${config.schema ?? 'public'})`
        : `Redis store at ${where}`
    }
  }
}

/** Opens the store: connects (failing clearly when unreachable) and migrates SQL schemas. */
export async function openStore(config: StoreConfig): Promise<Store | undefined> {
  switch (config.type) {
    case 'memory':
      return undefined // the service's default
    case 'postgres': {
      const { createPostgresStore } = await import('../src/storage/postgres.ts')
      const store = createPostgresStore({ url: config.url, ...(config.schema ? { schema: config.schema } : {}) })
      try {
        await store.connect()
        await store.migrate()
      } catch (err) {
        await store.close().catch(() => {})
        throw err
      }
      return store
    }
    case 'redis': {
      const { createRedisStore } = await import('../src/storage/redis.ts')
      const store = createRedisStore({ url: config.url, ...(config.prefix ? { prefix: config.prefix } : {}) })
      try {
        await store.connect()
      } catch (err) {
        await store.close().catch(() => {})
        throw err
      }
      return store
    }
    case 'pglite': {
      const { createPgliteStore } = await import('../src/storage/pglite.ts')
      const store = createPgliteStore({ dataDir: config.dataDir })
      await store.migrate()
      return store
    }
  }
}
