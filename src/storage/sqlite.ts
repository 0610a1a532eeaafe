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
 * one commit, so one WAL sync under `synchronous` `full` (the default; `normal` skips it). And the
 * batches asked for during one turn of the event loop share a transaction (group commit, #44 item
 * 3): one commit, one WAL sync, for the grants a busy server redeems together (see `groupCommit`).
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

/** One caller's batch, waiting for the group commit that runs it. */
interface Waiting {
  statements: string[]
  params: unknown[]
  resolve: (results: unknown[][]) => void
  reject: (reason: unknown) => void
}

/** Calls `fn` right after the current turn of the event loop: `setImmediate` where the runtime has it. */
const afterTurn: (fn: () => void) => void = (() => {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate
  return typeof immediate === 'function' ? (fn) => void immediate(fn) : (fn) => void setTimeout(fn, 0)
})()

/**
 * Group commit (#44 item 3): the batches asked for while none is running are run right after the
 * current turn of the event loop (`setImmediate`: a lone batch waits for nothing but the end of its
 * turn), all in one transaction of `transact`, one after the other, each its statements in order,
 * as if each ran alone: one writer, so a later batch sees an earlier one's writes (of two consumes
 * of one code, the first wins, the second finds it consumed). One commit, so one WAL sync under
 * `full`, for all of them; each caller's promise resolves after the COMMIT returned (durable before
 * anyone answers). Batches asked for while a group runs wait for the next group, so they run in
 * the order asked. A group that throws is rolled back whole; then each of its batches runs again
 * alone, in order, in a transaction of its own, so only the failing one's caller gets the error
 * (a constraint error, say). Except busy past the deadline (`transact` retried it until then):
 * every caller of the group gets it, as each would have alone (a 503), without waiting again.
 */
function groupCommit(
  transact: <R>(work: () => R) => Promise<R>,
  run: (text: string, params: unknown[]) => unknown[],
): { batch: NonNullable<SqlClient['batch']>; idle: () => Promise<void> | undefined } {
  let waiting: Waiting[] = []
  let running: Promise<void> | undefined
  let scheduled = false
  const each = (entry: Waiting): unknown[][] => entry.statements.map((text) => run(text, entry.params))

  async function commit(group: Waiting[]): Promise<void> {
    try {
      const results = await transact(() => group.map(each))
      for (const [i, entry] of group.entries()) entry.resolve(results[i] as unknown[][])
      return
    } catch (err) {
      if (group.length === 1 || isBusy(err)) {
        for (const entry of group) entry.reject(err)
        return
      }
    }
    for (const entry of group) await transact(() => each(entry)).then(entry.resolve, entry.reject)
  }

  function schedule(): void {
    if (scheduled || running) return
    scheduled = true
    afterTurn(() => {
      scheduled = false
      const group = waiting
      waiting = []
      running = commit(group).finally(() => {
        running = undefined
        if (waiting.length > 0) schedule()
      })
    })
  }

  return {
    batch: (statements, params) =>
      new Promise((resolve, reject) => {
        waiting.push({ statements, params, resolve, reject })
        schedule()
      }),
    // What close() waits for: the group running, else one about to run.
    idle: () => running ?? (waiting.length > 0 ? new Promise((resolve) => afterTurn(resolve)) : undefined),
  }
}

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

  const grouped = groupCommit((work) => retrying(() => atomically(work)), run)

  const inside: SqlClient = {
    query: async (text, params = []) => run(text, params) as never,
    transaction: (fn) => fn(inside),
    batch: async (statements, params) => statements.map((text) => run(text, params)),
    close: async () => {},
  }

  return {
    query: (text, params = []) => retrying(() => run(text, params)) as never,
    batch: grouped.batch,
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
      for (let wait = held ?? grouped.idle(); wait; wait = held ?? grouped.idle()) await wait
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
