/**
 * @module storage/sqlite_durable
 * The SQLite store's WAL sync off the event loop (#44 item 3). Under `synchronous: 'full'` SQLite
 * would sync the WAL inside each COMMIT, and both drivers are synchronous, so every commit stopped
 * the whole server for one disk flush (≈ 1 ms here) in which no other request was served. Instead
 * the connection runs at SQLite's NORMAL (no sync in the commit; the WAL is still synced before each
 * checkpoint, so the file is never corrupted) and the store syncs the WAL file itself, on the
 * runtime's thread pool, before it answers any caller whose statements wrote: the caller learns of
 * its write only once the write is on the disk, as under FULL. One sync flushes every commit
 * written to the WAL before it started, so the commits made while one sync runs share the next.
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
   * SqliteSyncError when that sync fails.
   */
  durable(): Promise<void>
  /** Settles when the sync running or due has (never rejects), for close(); `undefined` when idle. */
  idle(): Promise<void> | undefined
}

/** Coalesces `sync` (the WAL file's fdatasync): at most one running, at most one due after it. */
export function walSyncer(sync: () => Promise<void>): WalSyncer {
  let running: Promise<void> | undefined
  let due: Promise<void> | undefined

  function start(): Promise<void> {
    const current = sync().then(
      () => {},
      (err: unknown) => {
        throw new SqliteSyncError(err)
      },
    )
    running = current
    const clear = (): void => {
      if (running === current) running = undefined
    }
    current.then(clear, clear)
    return current
  }

  return {
    durable() {
      if (!running) return start()
      // The running sync may have started before the caller's commit: the caller waits for the
      // next one, which every caller arriving meanwhile shares.
      due ??= running
        .then(
          () => undefined,
          () => undefined,
        )
        .then(() => {
          due = undefined
          return start()
        })
      return due
    },
    idle: () => {
      const last = due ?? running
      return last?.then(
        () => undefined,
        () => undefined,
      )
    },
  }
}
