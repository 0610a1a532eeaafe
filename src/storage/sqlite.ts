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
 * A code redemption and a refresh are each one such transaction (#44 item 3, sql/redeem_sqlite.ts),
 * and the batches asked for during one turn of the event loop share one (group commit, #44 item 3,
 * see `groupCommit`). Under `synchronous` `full` (the default) a writer is answered only once its
 * commit is on the disk: the store syncs the WAL file itself, off the event loop, where the runtime
 * has `node:fs` (Node, Bun, Deno; sqlite_durable.ts), and the commits made during one sync share
 * the next; elsewhere SQLite syncs inside COMMIT. `normal` leaves the WAL to SQLite's checkpoints.
 *
 * @see https://www.sqlite.org/wal.html
 * @see https://www.sqlite.org/rescode.html#busy
 */
import {
  type FileSync,
  type SqliteDatabase,
  type SqliteStatement,
  bindable,
  isBusy,
  loadFileSync,
  loadSqlite,
  pause,
} from './sqlite_driver.ts'
import { SqliteSyncError, type WalSyncer, walSyncer } from './sqlite_durable.ts'
import { sqliteDialect, toSqliteParameters } from './sql/dialect.ts'
import { type SqlClient, type SqlStore, createSqlStore } from './sql/store.ts'

const open = await loadSqlite('gatehouse-oidc/storage/sqlite')
const fileSync = await loadFileSync()

export interface SqliteStoreOptions {
  /** The database file (created if missing, with `-wal` and `-shm` files beside it). */
  path: string
  /** Milliseconds an operation keeps retrying while another process holds the write lock. Default 5000. */
  busyTimeout?: number
  /**
   * What a write waits for (#44 item 3), after SQLite's `PRAGMA synchronous` in WAL mode. `full`, the
   * default: a write is answered only after the WAL holding it is synced to disk, so a write whose
   * caller was answered (a consumed code, a revocation) survives a power loss or an OS crash. The
   * store runs that sync itself, off the event loop, where the runtime has `node:fs` (SQLite's
   * NORMAL on the connection; other requests may read a write before its sync; a failed sync makes
   * the store refuse everything until restarted); elsewhere SQLite's FULL. `normal`: the WAL is synced only at
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
 * `full`, for all of them; each caller's promise resolves after the commit is durable (`transact`
 * waits for the sync). Batches asked for while a group runs (its sync included) wait for the next
 * group, so they run in the order asked, and a sync's time gathers the next group. A group that throws is rolled back whole; then each of its batches runs again
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
      // Busy past the deadline, or committed and then not synced (running it again would apply it twice).
      if (group.length === 1 || isBusy(err) || err instanceof SqliteSyncError) {
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

/** A statement that cannot write (the rest count as writes, which a `full` caller waits to see synced). */
const READ_ONLY = /^\s*(SELECT\b|PRAGMA\s[^=]*$)/i

/**
 * The SqlClient over one synchronous connection. `fileSync`: a file's sync off the event loop, for
 * the WAL under `full` when the file is in WAL mode (sqlite_durable.ts); else SQLite syncs in COMMIT.
 */
function sqliteClient(
  db: SqliteDatabase,
  busyTimeout: number,
  synchronous: SqliteSynchronous,
  fileSync: ((path: string) => FileSync) | undefined,
): SqlClient {
  const prepared = new Map<string, { statement: SqliteStatement; count: number; writes: boolean }>()
  /** Statements run that may have written: a caller's own count is the change during its synchronous step. */
  let writes = 0
  let syncer: WalSyncer | undefined
  let wal: FileSync | undefined
  /** Callers between their statements and their answer (their sync included), for close(). */
  const answering = new Set<Promise<unknown>>()
  let opened = false
  /** Set while `transaction()` runs: other callers wait for it (its statements interleave with awaits). */
  let held: Promise<void> | undefined

  function run(text: string, params: unknown[]): unknown[] {
    let entry = prepared.get(text)
    if (!entry) {
      const converted = toSqliteParameters(text)
      entry = { statement: db.prepare(converted.text), count: converted.count, writes: !READ_ONLY.test(text) }
      prepared.set(text, entry)
    }
    if (entry.writes) writes++
    return entry.statement.all(...params.slice(0, entry.count).map(bindable))
  }

  function ensureOpen(): void {
    if (opened) return
    db.exec(`PRAGMA busy_timeout = ${INNER_WAIT_MS}`)
    const [mode] = db.prepare('PRAGMA journal_mode = WAL').all() as Array<{ journal_mode?: unknown }>
    // `full` with the WAL synced here, off the event loop, before a writer is answered: NORMAL in
    // SQLite (no sync inside COMMIT, which would block every request meanwhile). The WAL is the
    // file SQLite names it after (the main file's full path, symbolic links resolved), not a path
    // of ours. Per connection, so at every open; the value is one of SQLITE_SYNCHRONOUS (checked).
    const [main] = db.prepare('PRAGMA database_list').all() as Array<{ name?: unknown; file?: unknown }>
    const file = main?.name === 'main' && typeof main.file === 'string' ? main.file : ''
    if (synchronous === 'full' && fileSync && mode?.journal_mode === 'wal' && file !== '') {
      wal = fileSync(`${file}-wal`)
      syncer = walSyncer(() => (wal as FileSync).sync())
    }
    db.exec(`PRAGMA synchronous = ${syncer ? 'NORMAL' : synchronous.toUpperCase()}`)
    opened = true
  }

  /** `work` (synchronous) through `attempt`, answered once what it wrote is on the disk. */
  function durably<R>(attempt: (work: () => R) => Promise<R>, work: () => R): Promise<R> {
    return tracked(async () => {
      let wrote = false
      const result = await attempt(() => {
        const before = writes
        const value = work()
        wrote = writes !== before
        return value
      })
      if (wrote && syncer) await syncer.durable()
      return result
    })
  }

  /** `fn`'s answer, which close() waits for. */
  function tracked<R>(fn: () => Promise<R>): Promise<R> {
    const answer = fn()
    const settled: Promise<unknown> = answer.then(
      () => answering.delete(settled),
      () => answering.delete(settled),
    )
    answering.add(settled)
    return answer
  }

  /** Runs `work` (synchronous, atomic), again after a short pause while the database is busy. */
  async function retrying<R>(work: () => R): Promise<R> {
    const deadline = Date.now() + busyTimeout
    for (let attempt = 0; ; attempt++) {
      while (held) await held
      // After a failed WAL sync nothing more is done (sqlite_durable.ts): a 503 until restarted.
      const failure = syncer?.failure()
      if (failure) throw failure
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

  const grouped = groupCommit((work) => durably((step) => retrying(() => atomically(step)), work), run)

  const inside: SqlClient = {
    query: async (text, params = []) => run(text, params) as never,
    transaction: (fn) => fn(inside),
    batch: async (statements, params) => statements.map((text) => run(text, params)),
    close: async () => {},
  }

  return {
    query: (text, params = []) => durably(retrying, () => run(text, params)) as never,
    batch: grouped.batch,
    transaction: (fn) =>
      tracked(async () => {
        let release = () => {}
        // While held, only this transaction's statements run: the count's change is its writes.
        let before = 0
        // Held from the BEGIN on, in the same synchronous step: no other caller's statement slips in.
        await retrying(() => {
          db.exec('BEGIN IMMEDIATE')
          before = writes
          held = new Promise<void>((resolve) => {
            release = resolve
          })
        })
        let result: Awaited<ReturnType<typeof fn>>
        try {
          result = await fn(inside)
          db.exec('COMMIT')
        } catch (err) {
          try {
            db.exec('ROLLBACK')
          } catch {}
          throw err
        } finally {
          held = undefined
          release()
        }
        if (syncer && writes !== before) await syncer.durable()
        return result
      }),
    close: async () => {
      const busy = () =>
        held ?? grouped.idle() ?? syncer?.idle() ?? (answering.size > 0 ? Promise.all(answering) : undefined)
      for (let wait = busy(); wait; wait = busy()) await wait
      await wal?.close()
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
  const client = sqliteClient(open(options.path), options.busyTimeout ?? 5000, synchronous, fileSync)
  return createSqlStore(client, {
    dialect: sqliteDialect(),
    ...(options.now ? { now: options.now } : {}),
    // Busy after the retries: another process holds the file; anything else is a bug or a broken file.
    // A WAL that could not be synced: the write may be lost, so the caller gets a 503, not a success.
    isUnavailable: (err) => isBusy(err) || err instanceof SqliteSyncError,
  })
}
