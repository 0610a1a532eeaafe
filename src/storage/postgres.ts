/**
 * @module storage/postgres
 * The PostgreSQL store on postgres.js (runs on Node, Bun and Deno). Call `migrate()` (or
 * `npm run migrate`) before first use; `connect()` checks the server is reachable.
 *
 * A database that cannot be reached fails fast (#27 item 10): connecting gives up after
 * `connectTimeout`, a query without an answer after `queryTimeout` (postgres.js has no query
 * timeout of its own, and a `statement_timeout` only covers a slow server, not a silent network),
 * and reconnecting waits at most a second. A query that expired leaves its connection behind it
 * busy for good (postgres.js pipelines further queries onto it), so the pool is replaced: new
 * queries go to a fresh pool while the old one finishes what it can and is closed.
 */
import type postgres from 'postgres'
import { importOptional } from '../optional_import.ts'
import { StoreUnavailableError } from '../errors.ts'
import { createDeadlines } from './deadline.ts'
import { isUnavailable } from './postgres_errors.ts'
import { type SqlClient, type SqlStore, createSqlStore } from './sql/store.ts'

const { default: connectPostgres } = await importOptional(
  () => import('postgres'),
  'postgres',
  'gatehouse-oidc/storage/postgres',
)

export interface PostgresStoreOptions {
  /** Connection URL, e.g. `postgres://user@127.0.0.1:5432/db`. */
  url: string
  /** Schema for the tables. Default `public`. */
  schema?: string
  /** Pool size. Default 10. */
  max?: number
  /** Seconds to wait for a connection (TCP and start-up). Default 2. */
  connectTimeout?: number
  /**
   * Seconds a query (or a transaction, as a whole) may wait for its answer, queueing for a
   * connection included; then it fails with StoreUnavailableError (the service answers 503) and
   * the pool is replaced. Default 2; 0 turns the deadline off. `migrate()` has none.
   */
  queryTimeout?: number
  /**
   * Prepared statements: each statement is parsed and planned once per connection, and then costs
   * one round trip instead of two (postgres.js otherwise describes every parameterised query
   * before running it). Default true. Set false behind a pooler that cannot keep them (PgBouncer
   * in transaction mode before 1.21, or without `max_prepared_statements`).
   */
  prepare?: boolean
  now?: () => number
}

function wrap(sql: postgres.Sql | postgres.TransactionSql, prepare: boolean): SqlClient {
  return {
    // `unsafe` does not prepare unless asked (its text may be built from input; ours never is).
    query: (text, params = []) => sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare }) as never,
    transaction: (fn) => (sql as postgres.Sql).begin((tx) => fn(wrap(tx, prepare))) as never,
    close: async () => {
      await (sql as postgres.Sql).end({ timeout: 5 })
    },
  }
}

/** Reconnection delays in seconds: short, so the store is back within a second of the database. */
function backoff(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1)
}

/** Creates the store; the pool connects lazily. */
export function createPostgresStore(options: PostgresStoreOptions): SqlStore & { connect(): Promise<void> } {
  const prepare = options.prepare ?? true
  const queryTimeout = options.queryTimeout ?? 2
  const open = () =>
    connectPostgres(options.url, {
      max: options.max ?? 10,
      connect_timeout: options.connectTimeout ?? 2,
      onnotice: () => {},
      prepare,
      backoff,
    })
  let sql = open()
  let closing = false
  const retiring = new Set<Promise<void>>()
  /** Replaces the pool whose query expired (once: later expiries on it find it replaced). */
  function replace(pool: postgres.Sql): void {
    if (pool !== sql || closing) return
    sql = open()
    // Queries still in flight on the old pool get as long again to finish; then it is destroyed.
    const ended = pool.end({ timeout: queryTimeout }).catch(() => {})
    retiring.add(ended)
    void ended.then(() => retiring.delete(ended))
  }
  const deadlines =
    queryTimeout > 0
      ? createDeadlines({
          timeoutMs: queryTimeout * 1000,
          onExpire: (pool: postgres.Sql) => {
            markDown()
            replace(pool)
          },
        })
      : undefined
  // Fail fast while the database is unreachable: once a query got no answer in time, queries fail
  // at once while a probe (`select 1` under the deadline, every quarter second) waits for the
  // database; the first answer closes the breaker. Without it, a request making two queries would
  // wait out two deadlines, and queued requests would each wait out theirs. Errors that come fast
  // (a refused connection) need no breaker; one slow connection attempt must not open it for all.
  let down = false
  const unreachable = () =>
    Object.assign(new Error('the database did not answer lately; failing fast until it does'), {
      code: 'UNREACHABLE',
    })
  function markDown(): void {
    if (down || closing || !deadlines) return
    down = true
    void probe(deadlines)
  }
  async function probe(timed: NonNullable<typeof deadlines>): Promise<void> {
    while (down && !closing) {
      const pool = sql
      try {
        await timed.race(pool`select 1`, pool)
        down = false
      } catch {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 250)
          ;(timer as { unref?: () => void }).unref?.()
        })
      }
    }
  }
  const guarded = <T>(work: (pool: postgres.Sql) => PromiseLike<T>): Promise<T> => {
    const pool = sql
    if (!deadlines) return work(pool) as Promise<T>
    if (down) return Promise.reject(unreachable())
    return deadlines.race(work(pool), pool)
  }
  // The store's client: every query and transaction on the current pool, under the deadline.
  const client: SqlClient = {
    query: (text, params = []) =>
      guarded((pool) => pool.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare })) as never,
    transaction: (fn) => guarded((pool) => pool.begin((tx) => fn(wrap(tx, prepare)))) as never,
    close: async () => {
      closing = true
      await Promise.all([sql.end({ timeout: 5 }), ...retiring])
    },
  }
  const storeOptions = {
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
    ...(options.now ? { now: options.now } : {}),
    isUnavailable,
    // postgres.js encodes a jsonb parameter itself: records go as objects, encoded once (#44).
    driverEncodesJson: true,
  }
  const store = createSqlStore(client, storeOptions)
  // Migrations may legitimately take long (an index on a big table, another instance's lock).
  const migrator = createSqlStore(
    { ...client, transaction: (fn) => sql.begin((tx) => fn(wrap(tx, prepare))) as never },
    storeOptions,
  )
  return Object.assign(store, {
    migrate: migrator.migrate,
    /** Fails with a clear StoreUnavailableError when the server cannot be reached. */
    async connect(): Promise<void> {
      try {
        await guarded((pool) => pool`select 1`)
      } catch (cause) {
        const where = new URL(options.url)
        throw new StoreUnavailableError(
          `cannot connect to PostgreSQL at ${where.hostname}:${where.port || 5432}: ${(cause as Error).message}`,
          { cause },
        )
      }
    },
  })
}
