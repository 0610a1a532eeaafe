/**
 * #44 item 3: under `synchronous: 'full'` the SQLite store syncs the WAL itself, off the event loop
 * (src/storage/sqlite_durable.ts), instead of inside each COMMIT, where the synchronous drivers
 * stopped the whole server for every disk flush. Watched through the runtime's `node:fs`
 * `fdatasync`, which the store calls at each sync. Runs where the runtime has SQLite; under Node 20
 * test/storage/sqlite.test.ts runs it again on Node 22, Bun and Deno.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadSqlite } from '../../src/storage/sqlite_driver.ts'
import { settlesWithin } from '../helpers/settles.ts'
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
  fs.fdatasync = (fd, callback) => {
    calls++
    if (mode === 'fail') return callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    if (mode === 'hold') return void held.push(() => real.call(fs, fd, callback))
    real.call(fs, fd, callback)
  }
  return {
    calls: () => calls,
    held: () => held.length,
    set: (next: typeof mode) => {
      mode = next
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
  const { createSqliteStore, open } = sqlite
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

  it('#44 item 3: a code redemption and a refresh, grouped or alone, are answered after a sync; synchronous normal syncs nothing', async () => {
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

  it('#44 item 3: a WAL sync that fails answers its writers StoreUnavailableError (503), never success, and a group is not run again', async () => {
    const watch = await watchFdatasync()
    try {
      const store = createSqliteStore({ path, now: () => now })
      const codes = Array.from({ length: 3 }, () => codeRecord(now))
      for (const code of codes) await store.codes.insert(code)
      const tokens = codes.map((code) => refreshRecord(now, { familyId: code.familyId }))
      watch.set('fail')
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
      expect(await store.codes.insert(codeRecord(now)).catch((err: Error) => err.name)).toBe('StoreUnavailableError')
      watch.set('pass')
      // Committed once, not run again after the failed sync (a second run would find each code
      // consumed, or fail on the refresh token's id): each refresh token is there, once.
      for (const token of tokens) expect(await store.refreshTokens.get(token.id)).toEqual(token)
      const admin = open(path)
      const [row] = admin
        .prepare('SELECT count(*) AS n FROM gatehouse_codes WHERE consumed_at IS NOT NULL AND id IN (?1, ?2, ?3)')
        .all(...codes.map((code) => code.id)) as Array<{ n: number }>
      admin.close()
      expect(row?.n).toBe(3)
      await store.close()
    } finally {
      watch.restore()
    }
  })
})
