/**
 * @module storage/sqlite_driver
 * The runtime's own SQLite: `bun:sqlite` on Bun, `node:sqlite` on Node ≥ 22.5 and on Deno (≥ 2.2),
 * behind the little the SQLite store needs. Loaded by a dynamic import of the runtime's built-in
 * module, so the core never imports it (and Node 20, which has none, fails with one line saying so).
 *
 * @see https://nodejs.org/api/sqlite.html
 * @see https://bun.sh/docs/api/sqlite
 */

/** A prepared statement: `all` runs it with positional parameters (`?1`, `?2`, …) and returns its rows. */
export interface SqliteStatement {
  all(...params: unknown[]): unknown[]
}

/** An open database file: synchronous, like both built-in drivers. */
export interface SqliteDatabase {
  exec(sql: string): void
  prepare(sql: string): SqliteStatement
  close(): void
}

/** Opens a database file (created if missing). */
export type OpenSqlite = (path: string) => SqliteDatabase

/** SQLITE_BUSY (5) or SQLITE_LOCKED (6), with their extended codes, as either driver reports them. */
export function isBusy(err: unknown): boolean {
  const e = err as { errcode?: unknown; errno?: unknown; code?: unknown; message?: unknown } | null
  const primary = typeof e?.errcode === 'number' ? e.errcode & 0xff : typeof e?.errno === 'number' ? e.errno & 0xff : 0
  if (primary === 5 || primary === 6) return true
  if (typeof e?.code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(e.code)) return true
  return typeof e?.message === 'string' && /database (table )?is locked|SQLITE_BUSY/.test(e.message)
}

/** A value as SQLite (either driver, or D1) binds it: no `undefined`, no booleans. */
export function bindable(value: unknown): unknown {
  if (value === undefined) return null
  if (typeof value === 'boolean') return value ? 1 : 0
  return value
}

/** Waits `ms` without blocking (between retries of a busy database). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

interface BunDatabase {
  exec(sql: string): void
  prepare(sql: string): SqliteStatement
  close(): void
}

/** What `node:sqlite` is missing on, for the one-line error: `Node 20.19.0`, `Node 22.4.0`, … */
function runtimeName(): string {
  const versions = (globalThis as { process?: { versions?: Record<string, string | undefined> } }).process?.versions
  if (versions?.deno) return `Deno ${versions.deno}`
  return versions?.node ? `Node ${versions.node}` : 'this runtime'
}

/**
 * Imports `node:sqlite` without Node 22's "SQLite is an experimental feature" ExperimentalWarning
 * (printed on the first import, on every start of a server that chose SQLite): the store is tested
 * on it, and the warning would send operators looking for a problem. Only that warning, only
 * during this import; every other warning is emitted as usual.
 */
async function importQuietly(specifier: string): Promise<Record<string, unknown>> {
  type Emit = (warning: string | Error, ...rest: unknown[]) => void
  const process = (globalThis as { process?: { emitWarning?: Emit } }).process
  const emit = process?.emitWarning
  if (!process || typeof emit !== 'function') return (await import(specifier)) as Record<string, unknown>
  process.emitWarning = function (this: unknown, warning, ...rest) {
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: unknown } | undefined)?.type
    const text = typeof warning === 'string' ? warning : warning.message
    if (type === 'ExperimentalWarning' && /^SQLite\b/.test(text)) return
    return emit.call(this, warning, ...rest)
  }
  try {
    return (await import(specifier)) as Record<string, unknown>
  } finally {
    process.emitWarning = emit
  }
}

/**
 * The runtime's SQLite, or an `Error` whose one line names the requirement.
 * The specifiers are variables: `node:sqlite` is unknown to Node 20's type definitions.
 */
export async function loadSqlite(subpath: string): Promise<OpenSqlite> {
  const isBun = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined'
  const specifier = isBun ? 'bun:sqlite' : 'node:sqlite'
  let module: Record<string, unknown>
  try {
    module = isBun ? ((await import(specifier)) as Record<string, unknown>) : await importQuietly(specifier)
  } catch {
    const name = runtimeName()
    const flag = /^Node 22\.([5-9]|1[0-2])\./.test(name) ? ' (before 22.13 with --experimental-sqlite)' : ''
    throw new Error(`${subpath} needs node:sqlite (Node ≥ 22.5${flag}), Bun or Deno; this is ${name}`)
  }
  if (isBun) {
    const Database = module.Database as new (path: string, options: { create: boolean }) => BunDatabase
    return (path) => new Database(path, { create: true })
  }
  const DatabaseSync = module.DatabaseSync as new (path: string) => SqliteDatabase
  return (path) => new DatabaseSync(path)
}

/** One file's data flushed to the disk (fdatasync) without blocking the event loop. */
export interface FileSync {
  /** Flushes what was written to the file, by any descriptor, before the call. */
  sync(): Promise<void>
  /** Closes the descriptor the syncs share, after the sync in flight; a later sync is refused. */
  close(): Promise<void>
}

interface NodeFs {
  open(path: string, flags: string, callback: (err: Error | null, fd: number) => void): void
  fdatasync(fd: number, callback: (err: Error | null) => void): void
  close(fd: number, callback: (err: Error | null) => void): void
}

/**
 * The runtime's `node:fs` file sync (Node, Bun and Deno have it), for the SQLite store's WAL sync
 * off the event loop (#44 item 3); `undefined` where there is none (the store then lets SQLite sync
 * in the commit). A file's syncs share one descriptor, opened at the first sync (and again after a
 * failure, which closes it); a sync flushes the file's data whichever descriptor wrote it. The functions are
 * looked up at each call (`fs.fdatasync`), so a test can watch them.
 */
export async function loadFileSync(): Promise<((path: string) => FileSync) | undefined> {
  const specifier = 'node:fs'
  let fs: NodeFs
  try {
    const module = (await import(specifier)) as { default?: NodeFs } & NodeFs
    fs = module.default ?? module
  } catch {
    return undefined
  }
  if (typeof fs?.fdatasync !== 'function') return undefined
  const call = <T>(start: (done: (err: Error | null, value: T) => void) => void): Promise<T> =>
    new Promise((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value))))
  const closeFd = (fd: number): Promise<void> =>
    call<void>((done) => fs.close(fd, (err) => done(err, undefined))).catch(() => {})
  return (path) => {
    let opened: Promise<number> | undefined
    let inflight: Promise<unknown> = Promise.resolve()
    let closed = false
    const release = async (): Promise<void> => {
      const fd = opened
      opened = undefined
      if (fd) await fd.then(closeFd, () => {})
    }
    return {
      sync() {
        if (closed) return Promise.reject(new Error('the file sync was closed'))
        const run = async (): Promise<void> => {
          opened ??= call<number>((done) => fs.open(path, 'r+', done))
          try {
            const fd = await opened
            await call<void>((done) => fs.fdatasync(fd, (err) => done(err, undefined)))
          } catch (err) {
            await release()
            throw err
          }
        }
        const current = run()
        inflight = current.catch(() => {})
        return current
      },
      // After the sync in flight (the descriptor it uses), and no sync reopens it after.
      async close() {
        closed = true
        await inflight
        await release()
      },
    }
  }
}
