/**
 * #44 item 3: under `synchronous: 'full'` the SQLite store syncs the WAL itself, off the event loop
 * (src/storage/sqlite_durable.ts), instead of inside each COMMIT, where the synchronous drivers
 * stopped the whole server for every disk flush. Watched through the runtime's `node:fs`
 * `fdatasync`, which the store calls at each sync. Runs where the runtime has SQLite; under Node 20
 * test/storage/sqlite.test.ts runs it again on Node 22, Bun and Deno.
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadSqlite } from '../../src/storage/sqlite_driver.ts'
import { settlesWithin } from '../helpers/settles.ts'
import type { CodeRecord } from '../../src/storage/types.ts'
import { codeRecord, grantRecord, refreshRecord } from './contract.ts'

const sqlite = await loadSqlite('test').then(
  async (open) => ({ ...(await import('../../src/storage/sqlite.ts')), open }),
  () => undefined,
)

type FdatasyncCallback = (err: Error | null) => void
interface Fs {
  fdatasync: (fd: number, callback: FdatasyncCallback) => void
}

/**
 * Watches `fs.fdatasync` (the store looks it up at each call): counts the calls and, when told,
 * holds each one until released, or fails it as a disk error would.
 */
async function watchFdatasync() {
  const fs = ((await import('node:fs')) as { default: Fs }).default
  const real = fs.fdatasync
  const held: Array<() => void> = []
  let mode: 'pass' | 'hold' | 'fail' = 'pass'
  let calls = 0
  /** With mode 'fail': how many more calls pass first. */
  let passing = 0
  fs.fdatasync = (fd, callback) => {
    calls++
    if (mode === 'fail' && passing > 0) passing--
    else if (mode === 'fail') return callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    if (mode === 'hold') return void held.push(() => real.call(fs, fd, callback))
    real.call(fs, fd, callback)
  }
  return {
    calls: () => calls,
    held: () => held.length,
    set: (next: typeof mode, passFirst = 0) => {
      mode = next
      passing = passFirst
    },
    releaseOne: () => held.shift()?.(),
    restore: () => {
      fs.fdatasync = real
      for (const release of held.splice(0)) release()
    },
  }
}

describe.runIf(sqlite)('#44 item 3: the SQLite WAL synced off the event loop', () => {
  if (!sqlite) return
  const { createSqliteStore } = sqlite
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-sync-'))
  const path = join(dir, 'gatehouse.db')
  const now = Math.floor(Date.now() / 1000)

  beforeAll(async () => {
    const store = createSqliteStore({ path })
    await store.migrate()
    await store.close()
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('#44 item 3: under full (the default) a write is answered only after a WAL sync that runs while the event loop serves others; writes during it share the next sync; reads do not wait', async () => {
    const watch = await watchFdatasync()
    try {
      const store = createSqliteStore({ path, now: () => now })
      await store.clients.get('x') // opens the connection
      const [first, second, third] = [codeRecord(now), codeRecord(now), codeRecord(now)]
      watch.set('hold')
      const before = watch.calls()
      const written = store.codes.insert(first)
      // Timers fire meanwhile: the sync does not block the event loop; the writer is not answered.
      expect(await settlesWithin(written, 30)).toBe(false)
      expect(watch.calls() - before).toBe(1)
      // The write is committed (a read sees it at once) but its writer waits for the disk.
      expect(await store.codes.get(first.id)).toMatchObject({ id: first.id })
      // Two writes committed during the sync: they wait for the next one, which they share.
      const later = Promise.all([store.codes.insert(second), store.codes.insert(third)])
      expect(await settlesWithin(later, 30)).toBe(false)
      expect(watch.calls() - before).toBe(1)
      watch.releaseOne()
      await written
      await expect.poll(() => watch.calls() - before).toBe(2)
      expect(await settlesWithin(later, 30)).toBe(false)
      watch.releaseOne()
      await later
      expect(watch.calls() - before).toBe(2)
      watch.set('pass')
      await store.close()
    } finally {
      watch.restore()
    }
  })

  it('#44 item 3: code redemptions asked for at once are answered after one sync (group commit); synchronous normal syncs nothing', async () => {
    const watch = await watchFdatasync()
    try {
      const counts: Record<string, number> = {}
      for (const synchronous of ['full', 'normal'] as const) {
        const store = createSqliteStore({ path, now: () => now, synchronous })
        const codes = Array.from({ length: 4 }, () => codeRecord(now))
        for (const code of codes) await store.codes.insert(code)
        const before = watch.calls()
        const outcomes = await Promise.all(
          codes.map((code) =>
            store.codes.redeem?.(code.id, now, {
              unlessRevoked: [code.familyId],
              refreshToken: refreshRecord(now, { familyId: code.familyId }),
              grant: grantRecord(now, { id: code.familyId }),
            }),
          ),
        )
        expect(outcomes).toEqual(codes.map(() => ({ status: 'ok' })))
        counts[synchronous] = watch.calls() - before
        await store.close()
      }
      // One group commit, one sync; `normal` leaves the WAL to SQLite's checkpoints.
      expect(counts).toEqual({ full: 1, normal: 0 })
    } finally {
      watch.restore()
    }
  })

  it('#44 item 3: a WAL sync that fails answers its writers StoreUnavailableError (503), never success, and the store refuses everything after it; what was committed is there once', async () => {
    const watch = await watchFdatasync()
    try {
      const store = createSqliteStore({ path, now: () => now })
      const codes = Array.from({ length: 3 }, () => codeRecord(now))
      for (const code of codes) await store.codes.insert(code)
      const tokens = codes.map((code) => refreshRecord(now, { familyId: code.familyId }))
      watch.set('fail')
      const before = watch.calls()
      const outcomes = await Promise.allSettled(
        codes.map((code, i) =>
          store.codes.redeem?.(code.id, now, {
            unlessRevoked: [code.familyId],
            refreshToken: tokens[i] as never,
            grant: grantRecord(now, { id: code.familyId }),
          }),
        ),
      )
      expect(outcomes.map((outcome) => outcome.status === 'rejected' && (outcome.reason as Error).name)).toEqual(
        codes.map(() => 'StoreUnavailableError'),
      )
      // One sync for the group, and none after: neither the group nor its batches run again.
      expect(watch.calls() - before).toBe(1)
      // The disk is no longer trusted: writes and reads alike are refused, even once syncs pass.
      watch.set('pass')
      expect(await store.codes.insert(codeRecord(now)).catch((err: Error) => err.name)).toBe('StoreUnavailableError')
      expect(await store.codes.get((codes[0] as CodeRecord).id).catch((err: Error) => err.name)).toBe(
        'StoreUnavailableError',
      )
      expect(watch.calls() - before).toBe(1)
      await store.close()
      // A new store (a restarted process) finds each redemption applied once: each code consumed,
      // each refresh token stored once.
      const restarted = createSqliteStore({ path, now: () => now })
      for (const token of tokens) expect(await restarted.refreshTokens.get(token.id)).toEqual(token)
      for (const code of codes) {
        expect(
          await restarted.codes.redeem?.(code.id, now, {
            unlessRevoked: [code.familyId],
            grant: grantRecord(now, { id: code.familyId }),
          }),
        ).toEqual({ status: 'replayed' })
      }
      await restarted.close()
    } finally {
      watch.restore()
    }
  })

  it('#44 item 3: migrate() whose migrations commit but cannot be synced fails (503), not "nothing to apply"', async () => {
    const watch = await watchFdatasync()
    try {
      const store = createSqliteStore({ path: join(dir, 'migrate-fails.db'), now: () => now })
      // The migrations table's CREATE is synced; the migrations' batch is not.
      watch.set('fail', 1)
      const outcome = await store.migrate().then(
        (applied) => applied,
        (err: Error) => err.name,
      )
      expect(outcome).toMatch(/^(StoreUnavailableError|SqliteSyncError)$/)
      watch.set('pass')
      await store.close()
    } finally {
      watch.restore()
    }
  })

  it('#44 item 3: a database file reached through a symbolic link syncs the WAL SQLite writes (named after the link’s target)', async () => {
    const target = join(dir, 'target.db')
    const link = join(dir, 'link.db')
    symlinkSync(target, link)
    const watch = await watchFdatasync()
    try {
      const store = createSqliteStore({ path: link, now: () => now })
      await store.migrate()
      const before = watch.calls()
      const code = codeRecord(now)
      await store.codes.insert(code)
      expect(watch.calls() - before).toBe(1)
      expect(await store.codes.get(code.id)).toMatchObject({ id: code.id })
      await store.close()
    } finally {
      watch.restore()
    }
  })
})
