/**
 * @module storage/d1
 * The D1 store: the SQL store's statements and migrations in the SQLite dialect, on a Cloudflare
 * D1 binding (`env.DB`). The persistent store of a Worker: every isolate of a deployment (and every
 * location) talks to one database, so codes, sessions, refresh tokens and signing keys are shared.
 *
 * D1 has no interactive transactions. Nothing here needs one: a one-time consume or a rotation is
 * one `batch()` of statements without logic between them (a guarded `UPDATE … RETURNING`, the
 * conditional insert of the next generation, a read), which D1 runs as one transaction, and the
 * migrations are one batch too. So the consume-once guarantee is SQLite's: one writer at a time,
 * exactly one `UPDATE … WHERE consumed_at IS NULL` finds the row.
 *
 * A statement refused because the database is busy with another writer (`SQLITE_BUSY`) is retried
 * for up to `busyTimeout`: it did not run, so running it again is safe. On Cloudflare a database is
 * one Durable Object that runs its queries one after another, so this is rare there; it is common
 * locally when two workerd processes share one persisted D1 (two `start:workers` on one folder).
 * D1's other failures (overloaded, reset, network lost, an internal error — which is also how
 * Miniflare reports a lock conflict met after a batch committed) are not retried, since a write's
 * outcome is then unknown: they fail as StoreUnavailableError (503), as do busy errors after the
 * retries. A consume that fails so is never reported as won: the client sees a 503, not a token. Queries go to the primary (no `withSession()`), so a read
 * follows the writes before it; D1 read replicas are not used.
 *
 * @see https://developers.cloudflare.com/d1/worker-api/d1-database/#batch
 * @see https://developers.cloudflare.com/d1/observability/debug-d1/#error-list
 */
import { sqliteDialect, toSqliteParameters } from './sql/dialect.ts'
import { type SqlClient, type SqlStore, createSqlStore } from './sql/store.ts'
import { bindable, isBusy, pause } from './sqlite_driver.ts'

/** The part of a D1 prepared statement the store uses. */
export interface D1PreparedStatementLike {
  bind(...values: unknown[]): D1PreparedStatementLike
  all(): Promise<{ results: unknown[] }>
}

/** The part of a D1 binding (`D1Database`) the store uses. */
export interface D1DatabaseLike {
  prepare(query: string): D1PreparedStatementLike
  batch(statements: D1PreparedStatementLike[]): Promise<Array<{ results: unknown[] }>>
}

export interface D1StoreOptions {
  /** The D1 binding, e.g. `env.DB` (wrangler: `[[d1_databases]] binding = "DB"`). */
  database: D1DatabaseLike
  /** Milliseconds a statement keeps retrying while the database is busy. Default 2000. */
  busyTimeout?: number
  /** Clock in epoch seconds. */
  now?: () => number
}

/** D1's messages for a database that failed, not a statement (Cloudflare's error list). */
const TRANSIENT =
  /D1 DB is overloaded|Network connection lost|storage caused object to be reset|reset because its code was updated|\binternal error\b|storage operation exceeded timeout/i

function isUnavailable(err: unknown): boolean {
  const message = (err as { message?: unknown } | null)?.message
  return isBusy(err) || (typeof message === 'string' && TRANSIENT.test(message))
}

function d1Client(database: D1DatabaseLike, busyTimeout: number): SqlClient {
  const converted = new Map<string, { text: string; count: number }>()

  function statement(text: string, params: unknown[]): D1PreparedStatementLike {
    let entry = converted.get(text)
    if (!entry) {
      entry = toSqliteParameters(text)
      converted.set(text, entry)
    }
    const prepared = database.prepare(entry.text)
    return entry.count === 0 ? prepared : prepared.bind(...params.slice(0, entry.count).map(bindable))
  }

  /** Runs `work` again after a short pause while the database is busy (the statement did not run). */
  async function retrying<R>(work: () => Promise<R>): Promise<R> {
    const deadline = Date.now() + busyTimeout
    for (let attempt = 0; ; attempt++) {
      try {
        return await work()
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err
        await pause(Math.min(2 ** attempt * 5, 100) * (0.5 + Math.random()))
      }
    }
  }

  return {
    query: (text, params = []) =>
      retrying(async () => (await statement(text, params).all()).results) as Promise<never[]>,
    batch: (statements, params) =>
      retrying(async () => {
        const results = await database.batch(statements.map((text) => statement(text, params)))
        return results.map((result) => result.results)
      }),
    transaction: () =>
      Promise.reject(new TypeError('D1 has no interactive transactions: the SQLite dialect uses batch()')),
    close: async () => {},
  }
}

/**
 * Creates the D1 store on a binding. Call `migrate()` once per isolate before first use (the
 * Worker adapter does: `workerStore(env)`), or apply the same SQL with `wrangler d1 migrations
 * apply`. The tables are plain `gatehouse_*` tables of the database.
 */
export function createD1Store(options: D1StoreOptions): SqlStore {
  const database = options.database as Partial<D1DatabaseLike> | undefined
  if (typeof database?.prepare !== 'function' || typeof database.batch !== 'function') {
    throw new TypeError('database must be a D1 binding (env.DB): an object with prepare() and batch()')
  }
  return createSqlStore(d1Client(options.database, options.busyTimeout ?? 2000), {
    dialect: sqliteDialect(),
    ...(options.now ? { now: options.now } : {}),
    isUnavailable,
    // No query shared between concurrent lookups: in a Worker, concurrent lookups belong to
    // different requests, and a request waiting on another's D1 query hangs when that request
    // ends first (workerd cancels it: "the Worker's code had hung").
    batchScope: () => ({}),
  })
}
