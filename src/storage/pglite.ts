/**
 * @module storage/pglite
 * The embedded persistent store: PGlite (PostgreSQL compiled to WebAssembly) running the same SQL
 * as the PostgreSQL store, in-process. For one instance on one machine that must survive restarts
 * without a database server. Migrations run on `migrate()`.
 */
import type { PGlite, Transaction } from '@electric-sql/pglite'
import { importOptional } from '../optional_import.ts'
import { type SqlClient, type SqlStore, createSqlStore } from './sql/store.ts'

const driver = await importOptional(
  () => import('@electric-sql/pglite'),
  '@electric-sql/pglite',
  'gatehouse-oidc/storage/pglite',
)

export interface PgliteStoreOptions {
  /** Directory of the database files (created if missing); omit for an in-memory database. */
  dataDir?: string
  /** An existing PGlite instance to use instead (the store then does not close it). */
  db?: PGlite
  now?: () => number
}

function wrap(db: PGlite | Transaction, root: PGlite): SqlClient {
  return {
    query: async (text, params = []) => (await db.query(text, params)).rows as never,
    transaction: (fn) =>
      ('transaction' in db ? (db as PGlite).transaction((tx) => fn(wrap(tx, root))) : fn(wrap(db, root))) as never,
    close: () => root.close(),
  }
}

/** Creates the PGlite store. */
export function createPgliteStore(options: PgliteStoreOptions = {}): SqlStore {
  const db = options.db ?? (options.dataDir === undefined ? new driver.PGlite() : new driver.PGlite(options.dataDir))
  const client = wrap(db, db)
  if (options.db) client.close = async () => {}
  return createSqlStore(client, {
    ...(options.now ? { now: options.now } : {}),
    // PGlite runs in-process: a failure is a bug or a broken data directory, not an outage.
    isUnavailable: () => false,
  })
}
