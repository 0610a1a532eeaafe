/**
 * @module worker_store
 * Which store a Worker's service uses, read from its `env` (bindings and variables), in the order
 * `npm start` reads its environment (bin/store.ts): GATEHOUSE_STORE, else DATABASE_URL, else memory.
 *
 * - `GATEHOUSE_STORE=d1` with a D1 binding (`DB`, or the binding GATEHOUSE_D1_BINDING names): the
 *   persistent store of a Worker. Its consume-once writes are single statements, so every isolate
 *   of a deployment shares codes, sessions, refresh tokens and signing keys.
 * - `DATABASE_URL` (`GATEHOUSE_STORE=postgres`): PostgreSQL over TCP sockets (Hyperdrive).
 * - `GATEHOUSE_STORE=memory`, or nothing: the in-memory store, per isolate. One local workerd
 *   (`npm run start:workers`) has one isolate; on Cloudflare each isolate would have its own
 *   codes, sessions and keys, so it is for trying it out only.
 *
 * The PostgreSQL store is not in this version's Worker yet: choosing it fails with a message saying
 * so, rather than falling back to memory.
 */
import { type D1DatabaseLike, createD1Store } from './storage/d1.ts'
import type { Store } from './storage/types.ts'

/** The store a Worker's `env` asks for. */
export type WorkerStoreChoice =
  | { type: 'memory' }
  | { type: 'd1'; binding: string; database: unknown }
  | { type: 'postgres'; url: string }

type Env = Record<string, unknown>

function text(env: Env, name: string): string | undefined {
  const value = env[name]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** Reads the store choice from `env`; throws a TypeError naming the variable when it is wrong. */
export function chooseWorkerStore(env: Env): WorkerStoreChoice {
  const kind = text(env, 'GATEHOUSE_STORE')
  const databaseUrl = text(env, 'DATABASE_URL')
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
      return databaseUrl ? { type: 'postgres', url: databaseUrl } : { type: 'memory' }
    case 'memory':
      return { type: 'memory' }
    case 'd1':
      return d1()
    case 'postgres':
      if (!databaseUrl) throw new TypeError('GATEHOUSE_STORE=postgres needs DATABASE_URL')
      return { type: 'postgres', url: databaseUrl }
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
      return `PostgreSQL store at ${url.hostname}:${url.port || 5432}${url.pathname}`
    }
  }
}

/**
 * Opens the chosen store: undefined for memory (the service's default). D1: its pending migrations
 * are applied here, once per isolate, as `npm start` applies them (one batch; of isolates starting
 * at once, one applies them and the others find none pending); a database migrated beforehand with
 * `wrangler d1 migrations apply` costs one read.
 */
export async function openWorkerStore(choice: WorkerStoreChoice): Promise<Store | undefined> {
  switch (choice.type) {
    case 'memory':
      return undefined
    case 'd1': {
      const store = createD1Store({ database: choice.database as D1DatabaseLike })
      await store.migrate()
      return store
    }
    case 'postgres':
      throw new TypeError(
        'DATABASE_URL: the PostgreSQL store does not run inside Workers in this version yet; unset DATABASE_URL (or GATEHOUSE_STORE=memory) to try the Worker on one isolate',
      )
  }
}
