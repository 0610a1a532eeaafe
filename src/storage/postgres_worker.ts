/**
 * @module storage/postgres_worker
 * The PostgreSQL store inside Cloudflare Workers (and workerd): postgres.js over TCP sockets
 * (`cloudflare:sockets`, with the `nodejs_compat` compatibility flag), directly or through a
 * Hyperdrive binding's connection string. Same statements, migrations and consume-once guarantees
 * as storage/postgres.ts; what differs is where connections live.
 *
 * Workers refuse to use a socket opened by one request from another, so there is no isolate-wide
 * pool: every event (request, scheduled run) gets its own postgres.js client, created on its first
 * query, in the event's RequestScope (storage/request_scope.ts), and closed after the response
 * through `waitUntil` (adapters/workers_postgres.ts keeps the scope). This is what Cloudflare
 * recommends with Hyperdrive, which keeps the pool of database connections on its side: a new
 * client per request costs a connection to Hyperdrive's nearby proxy, not to the database.
 *
 * An unreachable database fails fast, as on Node: connecting gives up after `connectTimeout`, a
 * query after `queryTimeout` (its connection is then dropped from the event's scope, so the
 * event's next query connects anew), and for a second after a timeout the store fails at once
 * (StoreUnavailableError, 503) instead of making every request wait the timeout out again.
 *
 * @see https://developers.cloudflare.com/hyperdrive/examples/connect-to-postgres/postgres-drivers-and-libraries/postgres-js/
 */
import type postgres from 'postgres'
import { StoreUnavailableError } from '../errors.ts'
import { importOptional } from '../optional_import.ts'
import { DeadlineExceededError } from './deadline.ts'
import { isUnavailable } from './postgres_errors.ts'
import type { RequestScope } from './request_scope.ts'
import { type SqlClient, type SqlStore, createSqlStore } from './sql/store.ts'

const { default: connectPostgres } = await importOptional(
  () => import('postgres'),
  'postgres',
  'gatehouse-oidc/adapters/workers-postgres',
)

export interface WorkerPostgresStoreOptions {
  /** Connection URL: `env.HYPERDRIVE.connectionString`, or the database's own (DATABASE_URL). */
  url: string
  /** Schema for the tables. Default `public`. */
  schema?: string
  /**
   * The current event's scope, where the store keeps the event's connections. Undefined outside
   * an event: the store then refuses to run (a connection shared across requests fails on Workers).
   */
  scope: () => RequestScope | undefined
  /**
   * Connections per event. Default 5: a Worker has six simultaneous open connections per request,
   * so one stays free for `fetch`.
   */
  max?: number
  /** Seconds to wait for a connection (TCP and start-up). Default 2. */
  connectTimeout?: number
  /** Seconds a query (a transaction, as a whole) may wait for its answer; 0: no deadline. Default 2. */
  queryTimeout?: number
  /** Prepared statements (see storage/postgres.ts). Default true (Hyperdrive supports them). */
  prepare?: boolean
  /**
   * postgres.js's `socket` option: opens a connected socket from its options. On workerd,
   * adapters/workerd_socket.ts (whose errors after a close do not become unhandled rejections).
   */
  socket?: (options: never) => Promise<unknown>
  now?: () => number
}

/** Milliseconds the store fails at once after a query or a connection timed out. */
const FAIL_FAST_MS = 1000

/**
 * Parameters as postgres.js sends them without the server's array types: a list (the store's
 * `= ANY($n::text[])`) as an array literal in text, which the statement's cast reads. So a
 * connection needs no `fetch_types` query first: one round trip less for every request.
 */
function parameters(params: unknown[]): postgres.ParameterOrJSON<never>[] {
  return params.map((value) =>
    Array.isArray(value) ? `{${value.map((item) => `"${String(item).replace(/["\\]/g, '\\$&')}"`).join(',')}}` : value,
  ) as postgres.ParameterOrJSON<never>[]
}

function wrap(sql: postgres.TransactionSql, prepare: boolean): SqlClient {
  return {
    query: (text, params = []) => sql.unsafe(text, parameters(params), { prepare }) as never,
    transaction: () => Promise.reject(new TypeError('nested transactions are not used by the SQL store')),
    close: async () => {},
  }
}

/** Creates the store; connections are made per event, on its first query. */
export function createWorkerPostgresStore(
  options: WorkerPostgresStoreOptions,
): SqlStore & { connect(): Promise<void> } {
  const prepare = options.prepare ?? true
  const timeoutMs = (options.queryTimeout ?? 2) * 1000
  /** This store's key in every scope (several stores may share one scope). */
  const key = {}
  let downUntil = 0

  function current(): { scope: RequestScope; sql: postgres.Sql } {
    const scope = options.scope()
    if (!scope) {
      throw new TypeError(
        'the PostgreSQL Worker store was used outside a Worker event: create the Worker with createWorker from gatehouse-oidc/adapters/workers-postgres',
      )
    }
    const sql = scope.use(key, () => {
      const client = connectPostgres(options.url, {
        max: options.max ?? 5,
        connect_timeout: options.connectTimeout ?? 2,
        onnotice: () => {},
        fetch_types: false, // see parameters()
        prepare,
        ...(options.socket ? ({ socket: options.socket } as object) : {}),
      })
      return { value: client, close: () => client.end({ timeout: 5 }) }
    })
    return { scope, sql }
  }

  /** `work` on the event's client, under the deadline; a timeout drops the client and fails fast a while. */
  function guarded<T>(work: (sql: postgres.Sql) => PromiseLike<T>, deadline = timeoutMs > 0): Promise<T> {
    if (Date.now() < downUntil) {
      return Promise.reject(
        Object.assign(new Error('the database did not answer lately; failing fast for a second'), {
          code: 'UNREACHABLE',
        }),
      )
    }
    const { scope, sql } = current()
    const timedOut = (err: unknown) => {
      const code = (err as { code?: unknown } | null)?.code
      if (code === 'QUERY_TIMEOUT' || code === 'CONNECT_TIMEOUT') {
        downUntil = Date.now() + FAIL_FAST_MS
        void scope.drop(key)
      }
      throw err
    }
    const succeeded = (value: T) => {
      downUntil = 0
      return value
    }
    if (!deadline) return Promise.resolve(work(sql)).then(succeeded, timedOut)
    let timer: ReturnType<typeof setTimeout> | undefined
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DeadlineExceededError(timeoutMs)), timeoutMs)
    })
    return Promise.race([work(sql), expired])
      .finally(() => clearTimeout(timer))
      .then(succeeded, timedOut)
  }

  const client: SqlClient = {
    query: (text, params = []) => guarded((sql) => sql.unsafe(text, parameters(params), { prepare })) as never,
    transaction: (fn) => guarded((sql) => sql.begin((tx) => fn(wrap(tx, prepare)))) as never,
    // The connections belong to the events' scopes, which close them.
    close: async () => {},
  }
  const storeOptions = {
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
    ...(options.now ? { now: options.now } : {}),
    isUnavailable,
    // postgres.js encodes a jsonb parameter itself: records go as objects, encoded once (#44).
    driverEncodesJson: true,
    // Revocation lookups share a query only within a request: its connection serves no other.
    batchScope: options.scope,
  }
  const store = createSqlStore(client, storeOptions)
  // Migrations may take long (another isolate holds the lock): no deadline.
  const migrator = createSqlStore(
    { ...client, transaction: (fn) => guarded((sql) => sql.begin((tx) => fn(wrap(tx, prepare))), false) as never },
    storeOptions,
  )
  return Object.assign(store, {
    migrate: migrator.migrate,
    /** Fails with a clear StoreUnavailableError when the server cannot be reached. */
    async connect(): Promise<void> {
      try {
        await guarded((sql) => sql`select 1`)
      } catch (cause) {
        if (cause instanceof TypeError) throw cause
        const where = new URL(options.url)
        throw new StoreUnavailableError(
          `cannot connect to PostgreSQL at ${where.hostname}:${where.port || 5432}: ${(cause as Error).message}`,
          { cause },
        )
      }
    },
  })
}
