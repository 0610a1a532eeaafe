/**
 * The stores a conformance test can run on: memory always; PostgreSQL when DATABASE_URL is set (a
 * fresh schema per store, dropped by `dispose`); Redis when REDIS_URL is set (a fresh key prefix,
 * deleted by `dispose`); SQLite where the runtime has it (Node ≥ 22.5, Bun, Deno: a fresh file per
 * store; under Node 20, which runs `npm test`, test/storage/sqlite.test.ts runs the SQLite ones
 * again under Node 22). Use with `describe.each(STORES)`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgresClient from 'postgres'
import { createMemoryStore } from '../../src/storage/memory.ts'
import { createPostgresStore } from '../../src/storage/postgres.ts'
import { createRedisStore } from '../../src/storage/redis.ts'
import { loadSqlite } from '../../src/storage/sqlite_driver.ts'
import type { Store } from '../../src/storage/types.ts'
import { uniqueId } from '../storage/contract.ts'
import { runSchema } from '../storage/sql_helpers.ts'

export interface TestStore {
  store: Store
  /** Closes the store and removes what the test wrote. */
  dispose(): Promise<void>
}

export interface StoreKind {
  name: string
  /** A fresh, empty store on the clock `now`. */
  create(now: () => number): Promise<TestStore>
}

const memory: StoreKind = {
  name: 'memory',
  async create(now) {
    return { store: createMemoryStore({ now }), dispose: async () => {} }
  },
}

const postgres: StoreKind = {
  name: 'postgres',
  async create(now) {
    const url = process.env.DATABASE_URL as string
    const schema = runSchema('conf')
    const store = createPostgresStore({ url, schema, now })
    await store.migrate()
    return {
      store,
      async dispose() {
        await store.close()
        const admin = postgresClient(url, { max: 1, onnotice: () => {} })
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await admin.end()
      },
    }
  },
}

const redis: StoreKind = {
  name: 'redis',
  async create(now) {
    const url = process.env.REDIS_URL as string
    const prefix = `${uniqueId('gh-conf')}:`
    const store = createRedisStore({ url, prefix, now })
    await store.connect()
    return {
      store,
      async dispose() {
        await store.clear()
        await store.close()
      },
    }
  },
}

/** The runtime's SQLite, when it has one (the store module only then: it fails to import on Node 20). */
const hasSqlite = await loadSqlite('test').then(
  () => true,
  () => false,
)

const sqlite: StoreKind = {
  name: 'sqlite',
  async create(now) {
    const { createSqliteStore } = await import('../../src/storage/sqlite.ts')
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-conf-sqlite-'))
    const store = createSqliteStore({ path: join(dir, 'gatehouse.db'), now })
    await store.migrate()
    return {
      store,
      async dispose() {
        await store.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
}

/**
 * Every store kind, each marked `skip` when its variable is unset, for suites that show a store
 * they cannot reach as skipped: `describe.each(STORE_CHOICES)` with `it.skipIf(kind.skip)`.
 */
export const STORE_CHOICES: Array<StoreKind & { skip: boolean }> = [
  { ...memory, skip: false },
  { ...postgres, skip: !process.env.DATABASE_URL },
  { ...redis, skip: !process.env.REDIS_URL },
]

/** Memory, plus PostgreSQL and Redis where their variables are set. */
export const STORES: StoreKind[] = [
  memory,
  ...(process.env.DATABASE_URL ? [postgres] : []),
  ...(process.env.REDIS_URL ? [redis] : []),
  ...(hasSqlite ? [sqlite] : []),
]
