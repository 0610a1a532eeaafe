/**
 * @module storage/sqlite_durable
 * The SQLite store's WAL sync off the event loop (#44 item 3). Under `synchronous: 'full'` SQLite
 * would sync the WAL inside each COMMIT, and both drivers are synchronous, so every commit stopped
 * the whole server for one disk flush (≈ 1 ms here) in which no other request was served. Instead
 * the connection runs at SQLite's NORMAL (no sync in the commit; the WAL is still synced before each
 * checkpoint and its header when it restarts, so the file is never corrupted) and the store syncs
 * the WAL file itself, on the runtime's thread pool, before it answers any caller whose statements
 * wrote: no caller is answered before its write is on the disk. One sync flushes every commit
 * written to the WAL before it started, so the commits made while one sync runs share the next.
 *
 * A failed sync is final (as PostgreSQL stops on a failed fsync): the kernel may have dropped the
 * pages it could not write and report success to a later sync, and WAL recovery stops at the first
 * frame missing, which would lose every later commit too. So after one failure every caller is
 * refused (503) until the process restarts.
 *
 * @see https://www.sqlite.org/pragma.html#pragma_synchronous
 * @see https://www.sqlite.org/wal.html#performance_considerations
 */

/** A WAL sync that failed: the writes it should have made durable may be lost (a 503, never a success). */
export class SqliteSyncError extends Error {
  constructor(cause: unknown) {
    super('the SQLite write-ahead log could not be synced to disk', { cause })
    this.name = 'SqliteSyncError'
  }
}

export interface WalSyncer {
  /**
   * Resolves once everything committed before the call is on the disk: a sync started now, or, while
   * one runs (it may have begun before the caller's commit), the next one. Rejects with
   * SqliteSyncError when that sync fails, and at once after any sync failed.
   */
  durable(): Promise<void>
  /** The failure that ended syncing, if one did: the store refuses every operation after it. */
  failure(): SqliteSyncError | undefined
  /** Settles when the sync running or due has (never rejects), for close(); `undefined` when idle. */
  idle(): Promise<void> | undefined
}

/** Coalesces `sync` (the WAL file's fdatasync): at most one running, at most one due after it. */
export function walSyncer(sync: () => Promise<void>): WalSyncer {
  let running: Promise<void> | undefined
  let due: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined
  let failed: SqliteSyncError | undefined

  function start(): Promise<void> {
    const current = sync().then(
      () => {},
      (err: unknown) => {
        failed ??= new SqliteSyncError(err)
        throw failed
      },
    )
    running = current
    const settle = (): void => {
      running = undefined
      const next = due
      due = undefined
      // Started in the same step as the running one ends: no gap in which a caller starts another.
      if (next) (failed ? Promise.reject(failed) : start()).then(next.resolve, next.reject)
    }
    current.then(settle, settle)
    return current
  }

  return {
    durable() {
      if (failed) return Promise.reject(failed)
      if (!running) return start()
      // The running sync may have started before the caller's commit: the caller waits for the
      // next one, which every caller arriving meanwhile shares.
      if (!due) {
        let resolve = (): void => {}
        let reject = (_err: unknown): void => {}
        const promise = new Promise<void>((res, rej) => {
          resolve = res
          reject = rej
        })
        due = { promise, resolve, reject }
      }
      return due.promise
    },
    failure: () => failed,
    idle: () => {
      const last = due?.promise ?? running
      return last?.then(
        () => undefined,
        () => undefined,
      )
    },
  }
}
