/**
 * @module worker/store
 * Which store a Worker's service uses, read from its `env` (bindings and variables), in the order
 * `npm start` reads its environment (bin/store.ts): GATEHOUSE_STORE, else DATABASE_URL, else memory.
 *
 * - `GATEHOUSE_STORE=d1` with a D1 binding (`DB`, or the binding GATEHOUSE_D1_BINDING names): the
 *   persistent store of a Worker. Its consume-once writes are single statements, so every isolate
 *   of a deployment shares codes, sessions, refresh tokens and signing keys.
 * - A Hyperdrive binding (`HYPERDRIVE`, or the binding GATEHOUSE_HYPERDRIVE_BINDING names), else
 *   `DATABASE_URL` (`GATEHOUSE_STORE=postgres`, schema GATEHOUSE_PG_SCHEMA): PostgreSQL over TCP
 *   sockets, one client per event (src/storage/postgres_worker.ts). It needs `nodejs_compat`, so
 *   it is opened by gatehouse-oidc/adapters/workers-postgres, which passes its driver to
 *   `openWorkerStore`; adapters/workers.ts, which has none, says so.
 * - `GATEHOUSE_STORE=memory`, or nothing: the in-memory store, per isolate. One local workerd
 *   (`npm run start:workers`) has one isolate; on Cloudflare each isolate would have its own
 *   codes, sessions and keys, so it is for trying it out only.
 *
 * A store that cannot be opened fails with a message saying why, rather than falling back to memory.
 */
import { type D1DatabaseLike, createD1Store } from '../storage/d1.ts'
import type { SqlStore, Store } from '../storage/index.ts'

/** The store a Worker's `env` asks for. */
export type WorkerStoreChoice =
  | { type: 'memory' }
  | { type: 'd1'; binding: string; database: unknown }
  | WorkerPostgresChoice

/** PostgreSQL: the URL (a Hyperdrive binding's connection string or DATABASE_URL) and where it came from. */
export interface WorkerPostgresChoice {
  type: 'postgres'
  url: string
  schema?: string
  /** `DATABASE_URL`, or `Hyperdrive binding NAME`. */
  source: string
}

type Env = Record<string, unknown>

function text(env: Env, name: string): string | undefined {
  const value = env[name]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** Reads the store choice from `env`; throws a TypeError naming the variable when it is wrong. */
export function chooseWorkerStore(env: Env): WorkerStoreChoice {
  const kind = text(env, 'GATEHOUSE_STORE')
  const postgres = (): WorkerPostgresChoice | undefined => {
    const schema = text(env, 'GATEHOUSE_PG_SCHEMA')
    const named = text(env, 'GATEHOUSE_HYPERDRIVE_BINDING')
    const hyperdrive = env[named ?? 'HYPERDRIVE'] as { connectionString?: unknown } | undefined
    const fromBinding = typeof hyperdrive?.connectionString === 'string' ? hyperdrive.connectionString : undefined
    if (named && !fromBinding) {
      throw new TypeError(
        `GATEHOUSE_HYPERDRIVE_BINDING=${named} needs a Hyperdrive binding of that name (wrangler: [[hyperdrive]] binding = "${named}")`,
      )
    }
    const url = fromBinding ?? text(env, 'DATABASE_URL')
    if (!url) return undefined
    const source = fromBinding ? `Hyperdrive binding ${named ?? 'HYPERDRIVE'}` : 'DATABASE_URL'
    return { type: 'postgres', url, source, ...(schema ? { schema } : {}) }
  }
  const d1 = (): WorkerStoreChoice => {
    const binding = text(env, 'GATEHOUSE_D1_BINDING') ?? 'DB'
    const database = env[binding]
    if (database === undefined || database === null) {
      throw new TypeError(
        `GATEHOUSE_STORE=d1 needs a D1 binding named ${binding} (wrangler: [[d1_databases]] binding = "${binding}")`,
      )
    }
    return { type: 'd1', binding, database }
  }
  switch (kind) {
    case undefined:
      return postgres() ?? { type: 'memory' }
    case 'memory':
      return { type: 'memory' }
    case 'd1':
      return d1()
    case 'postgres': {
      const choice = postgres()
      if (!choice)
        throw new TypeError('GATEHOUSE_STORE=postgres needs a Hyperdrive binding (HYPERDRIVE) or DATABASE_URL')
      return choice
    }
    default:
      throw new TypeError(`GATEHOUSE_STORE must be memory, d1 or postgres on Workers, got ${JSON.stringify(kind)}`)
  }
}

/** A description without credentials, for logs. */
export function describeWorkerStore(choice: WorkerStoreChoice): string {
  switch (choice.type) {
    case 'memory':
      return 'in-memory store (per isolate)'
    case 'd1':
      return `D1 store (binding ${choice.binding})`
    case 'postgres': {
      const url = new URL(choice.url)
      const where =
        choice.source === 'DATABASE_URL'
          ? `at ${url.hostname}:${url.port || 5432}${url.pathname}`
          : `through ${choice.source}`
      return `PostgreSQL store ${where} (schema ${choice.schema ?? 'public'}, a client per request)`
    }
  }
}

/** The drivers a Worker module brings (gatehouse-oidc/adapters/workers-postgres: PostgreSQL). */
export interface WorkerStoreDrivers {
  /** The PostgreSQL store for `choice`, not yet connected (src/storage/postgres_worker.ts). */
  postgres?: (choice: WorkerPostgresChoice) => SqlStore & { connect(): Promise<void> }
}

/**
 * Opens the chosen store: undefined for memory (the service's default). D1: its pending migrations
 * are applied here, once per isolate, as `npm start` applies them (one batch; of isolates starting
 * at once, one applies them and the others find none pending); a database migrated beforehand with
 * `wrangler d1 migrations apply` costs one read. PostgreSQL: connected and migrated here, once per
 * isolate, through the driver `drivers.postgres` (gatehouse-oidc/adapters/workers-postgres).
 */
export async function openWorkerStore(
  choice: WorkerStoreChoice,
  drivers: WorkerStoreDrivers = {},
): Promise<Store | undefined> {
  switch (choice.type) {
    case 'memory':
      return undefined
    case 'd1': {
      const store = createD1Store({ database: choice.database as D1DatabaseLike })
      await store.migrate()
      return store
    }
    case 'postgres': {
      if (!drivers.postgres) {
        throw new TypeError(
          `${choice.source}: PostgreSQL from a Worker needs createWorker and workerStore from gatehouse-oidc/adapters/workers-postgres (and the nodejs_compat compatibility flag)`,
        )
      }
      const store = drivers.postgres(choice)
      try {
        await store.connect()
        await store.migrate()
      } catch (err) {
        await store.close().catch(() => {})
        throw err
      }
      return store
    }
  }
}
