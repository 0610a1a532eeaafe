/**
 * @module storage/postgres
 * The PostgreSQL store on postgres.js (runs on Node, Bun and Deno). Call `migrate()` (or
 * `npm run migrate`) before first use; `connect()` checks the server is reachable.
 */
import type postgres from 'postgres'
import { importOptional } from '../optional_import.ts'
import { StoreUnavailableError } from '../errors.ts'
import { type SqlClient, type SqlStore, createSqlStore } from './sql/store.ts'

const { default: connectPostgres } = await importOptional(
  () => import('postgres'),
  'postgres',
  'gatehouse/storage/postgres',
)

export interface PostgresStoreOptions {
  /** Connection URL, e.g. `postgres://user@127.0.0.1:5432/db`. */
  url: string
  /** Schema for the tables. Default `public`. */
  schema?: string
  /** Pool size. Default 10. */
  max?: number
  /** Seconds to wait for a connection. Default 10. */
  connectTimeout?: number
  /**
   * Prepared statements: each statement is parsed and planned once per connection, and then costs
   * one round trip instead of two (postgres.js otherwise describes every parameterised query
   * before running it). Default true. Set false behind a pooler that cannot keep them (PgBouncer
   * in transaction mode before 1.21, or without `max_prepared_statements`).
   */
  prepare?: boolean
  now?: () => number
}

/** SQLSTATE classes that mean the database, not the query, failed. */
function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; errno?: string }
  const code = String(e?.code ?? '')
  if (/^(08|53|57|58)/.test(code)) return true // connection, resources, operator intervention, system
  return [
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
    'EPIPE',
    'ENOTFOUND',
    'CONNECTION_CLOSED',
    'CONNECTION_ENDED',
    'CONNECTION_DESTROYED',
    'CONNECT_TIMEOUT',
  ].includes(code)
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

/** Creates the store; the pool connects lazily. */
export function createPostgresStore(options: PostgresStoreOptions): SqlStore & { connect(): Promise<void> } {
  const sql = connectPostgres(options.url, {
    max: options.max ?? 10,
    connect_timeout: options.connectTimeout ?? 10,
    onnotice: () => {},
    prepare: options.prepare ?? true,
  })
  const store = createSqlStore(wrap(sql, options.prepare ?? true), {
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
    ...(options.now ? { now: options.now } : {}),
    isUnavailable,
  })
  return Object.assign(store, {
    /** Fails with a clear StoreUnavailableError when the server cannot be reached. */
    async connect(): Promise<void> {
      try {
        await sql`select 1`
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
