/**
 * @module storage/sqlite
 * The SQLite store: the SQL store's statements and migrations in the SQLite dialect, on the
 * runtime's own driver (`node:sqlite` on Node ≥ 22.5 and Deno, `bun:sqlite` on Bun). The persistent
 * store for one machine: one database file, in WAL mode so that several processes on the machine
 * share it (readers never wait for the writer; writers take turns). Call `migrate()` before first
 * use (`BEGIN IMMEDIATE` makes concurrent migrators take turns).
 *
 * Both drivers are synchronous, so every operation runs whole before another starts in this
 * process; across processes SQLite runs one writer at a time. A one-time consume or rotation is one
 * transaction of statements with no logic between them (`BEGIN IMMEDIATE … COMMIT`, the unit a D1
 * `batch()` runs too). A database busy with another process's write (SQLITE_BUSY) is retried
 * here, briefly waiting inside SQLite and then without blocking the event loop, for up to
 * `busyTimeout`; only then does the operation fail, as StoreUnavailableError (503), never a 500.
 * A code redemption and a refresh are each one such transaction (#44 item 3, sql/redeem_sqlite.ts):
 * one commit, so one WAL sync under `synchronous` `full` (the default; `normal` skips it).
 *
 * @see https://www.sqlite.org/wal.html
 * @see https://www.sqlite.org/rescode.html#busy
 */
import { type SqliteDatabase, type SqliteStatement, bindable, isBusy, loadSqlite, pause } from './sqlite_driver.ts'
import { sqliteDialect, toSqliteParameters } from './sql/dialect.ts'
import { type SqlClient, type SqlStore, createSqlStore } from './sql/store.ts'

const open = await loadSqlite('gatehouse-oidc/storage/sqlite')

export interface SqliteStoreOptions {
  /** The database file (created if missing, with `-wal` and `-shm` files beside it). */
  path: string
  /** Milliseconds an operation keeps retrying while another process holds the write lock. Default 5000. */
  busyTimeout?: number
  /**
   * What a commit waits for (#44 item 3), SQLite's `PRAGMA synchronous` in WAL mode. `full`, the
   * default: every commit syncs the WAL to disk, so a committed write (a consumed code, a
   * revocation) survives a power loss or an OS crash. `normal`: the WAL is synced only at
   * checkpoints, so commits are cheaper, and a power loss or OS crash can lose the last committed
   * transactions (a revocation undone, a consumed code unconsumed); a crash of the process loses
   * nothing, and the file is never corrupted either way.
   * @see https://www.sqlite.org/pragma.html#pragma_synchronous
   */
  synchronous?: SqliteSynchronous
  /** Clock in epoch seconds. */
  now?: () => number
}

/** The durability settings of `SqliteStoreOptions.synchronous`. */
export type SqliteSynchronous = 'full' | 'normal'

/** The values of `synchronous` (the configuration file and GATEHOUSE_SQLITE_SYNCHRONOUS take the same). */
const SQLITE_SYNCHRONOUS: readonly SqliteSynchronous[] = ['full', 'normal']

/** Milliseconds SQLite itself waits for a lock before answering busy (it blocks the thread meanwhile). */
const INNER_WAIT_MS = 25

/** The SqlClient over one synchronous connection. */
function sqliteClient(db: SqliteDatabase, busyTimeout: number, synchronous: SqliteSynchronous): SqlClient {
  const prepared = new Map<string, { statement: SqliteStatement; count: number }>()
  let opened = false
  /** Set while `transaction()` runs: other callers wait for it (its statements interleave with awaits). */
  let held: Promise<void> | undefined

  function run(text: string, params: unknown[]): unknown[] {
    let entry = prepared.get(text)
    if (!entry) {
      const converted = toSqliteParameters(text)
      entry = { statement: db.prepare(converted.text), count: converted.count }
      prepared.set(text, entry)
    }
    return entry.statement.all(...params.slice(0, entry.count).map(bindable))
  }

  function ensureOpen(): void {
    if (opened) return
    db.exec(`PRAGMA busy_timeout = ${INNER_WAIT_MS}`)
    db.exec('PRAGMA journal_mode = WAL')
    // Per connection, so at every open; the value is one of SQLITE_SYNCHRONOUS (checked).
    db.exec(`PRAGMA synchronous = ${synchronous.toUpperCase()}`)
    opened = true
  }

  /** Runs `work` (synchronous, atomic), again after a short pause while the database is busy. */
  async function retrying<R>(work: () => R): Promise<R> {
    const deadline = Date.now() + busyTimeout
    for (let attempt = 0; ; attempt++) {
      while (held) await held
      try {
        ensureOpen()
        return work()
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err
        await pause(Math.min(2 ** attempt, 50) * (0.5 + Math.random()))
      }
    }
  }

  /** The statements in one `BEGIN IMMEDIATE` transaction: all or none. */
  function atomically<R>(work: () => R): R {
    db.exec('BEGIN IMMEDIATE')
    try {
      const result = work()
      db.exec('COMMIT')
      return result
    } catch (err) {
      try {
        db.exec('ROLLBACK')
      } catch {}
      throw err
    }
  }

  const inside: SqlClient = {
    query: async (text, params = []) => run(text, params) as never,
    transaction: (fn) => fn(inside),
    batch: async (statements, params) => statements.map((text) => run(text, params)),
    close: async () => {},
  }

  return {
    query: (text, params = []) => retrying(() => run(text, params)) as never,
    batch: (statements, params) => retrying(() => atomically(() => statements.map((text) => run(text, params)))),
    transaction: async (fn) => {
      let release = () => {}
      // Held from the BEGIN on, in the same synchronous step: no other caller's statement slips in.
      await retrying(() => {
        db.exec('BEGIN IMMEDIATE')
        held = new Promise<void>((resolve) => {
          release = resolve
        })
      })
      try {
        const result = await fn(inside)
        db.exec('COMMIT')
        return result
      } catch (err) {
        try {
          db.exec('ROLLBACK')
        } catch {}
        throw err
      } finally {
        held = undefined
        release()
      }
    },
    close: async () => {
      while (held) await held
      db.close()
    },
  }
}

/**
 * Creates the SQLite store on the file at `path`. The tables are plain `gatehouse_*` tables of the
 * file (SQLite has no schemas: use one file per deployment).
 */
export function createSqliteStore(options: SqliteStoreOptions): SqlStore {
  if (typeof options.path !== 'string' || options.path === '') throw new TypeError('path must be a file name')
  const synchronous = options.synchronous ?? 'full'
  if (!SQLITE_SYNCHRONOUS.includes(synchronous)) throw new TypeError('synchronous must be "full" or "normal"')
  const client = sqliteClient(open(options.path), options.busyTimeout ?? 5000, synchronous)
  return createSqlStore(client, {
    dialect: sqliteDialect(),
    ...(options.now ? { now: options.now } : {}),
    // Busy after the retries: another process holds the file; anything else is a bug or a broken file.
    isUnavailable: isBusy,
  })
}
