/**
 * #44 item 3: the SQLite store's WAL sync off the event loop (src/storage/sqlite_durable.ts): a
 * writer is answered after a sync that started after its commit; syncs never overlap, and every
 * writer arriving during one shares the next. The store over it, on each runtime's SQLite:
 * test/storage/sqlite_wal_sync.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { SqliteSyncError, walSyncer } from '../../../src/storage/sqlite_durable.ts'
import { settlesWithin } from '../../helpers/settles.ts'

/** A sync whose runs the test ends one by one. */
function gatedSync() {
  const runs: Array<{ end: (err?: Error) => void }> = []
  let running = 0
  let overlapped = false
  const sync = () =>
    new Promise<void>((resolve, reject) => {
      running++
      if (running > 1) overlapped = true
      runs.push({
        end: (err) => {
          running--
          if (err) reject(err)
          else resolve()
        },
      })
    })
  return { sync, runs, overlapped: () => overlapped }
}

describe('#44 item 3: walSyncer', () => {
  it('#44 item 3: a lone writer starts a sync and is answered when it ends', async () => {
    const gate = gatedSync()
    const syncer = walSyncer(gate.sync)
    expect(syncer.idle()).toBeUndefined()
    const first = syncer.durable()
    expect(gate.runs).toHaveLength(1)
    expect(await settlesWithin(first, 5)).toBe(false)
    gate.runs[0]?.end()
    await expect(first).resolves.toBeUndefined()
    expect(syncer.idle()).toBeUndefined()
  })

  it('#44 item 3: writers arriving while a sync runs share one next sync, started after it ends, never overlapping', async () => {
    const gate = gatedSync()
    const syncer = walSyncer(gate.sync)
    const first = syncer.durable()
    // Their commits may have come after the running sync began: it cannot answer for them.
    const later = [syncer.durable(), syncer.durable(), syncer.durable()]
    expect(gate.runs).toHaveLength(1)
    gate.runs[0]?.end()
    await first
    expect(gate.runs).toHaveLength(2)
    expect(await settlesWithin(Promise.all(later), 5)).toBe(false)
    gate.runs[1]?.end()
    await expect(Promise.all(later)).resolves.toEqual([undefined, undefined, undefined])
    expect(gate.runs).toHaveLength(2)
    expect(gate.overlapped()).toBe(false)
  })

  it('#44 item 3: a failed sync rejects its writers with SqliteSyncError (cause kept), and every later writer at once, without syncing again', async () => {
    const gate = gatedSync()
    const syncer = walSyncer(gate.sync)
    const first = syncer.durable()
    const second = syncer.durable()
    const idle = syncer.idle()
    expect(syncer.failure()).toBeUndefined()
    gate.runs[0]?.end(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    const error = await first.then(
      () => undefined,
      (err: unknown) => err,
    )
    expect(error).toBeInstanceOf(SqliteSyncError)
    expect((error as Error).message).toBe('the SQLite write-ahead log could not be synced to disk')
    expect(((error as Error).cause as { code?: string }).code).toBe('EIO')
    // The kernel may report a later sync clean although the failed pages never reached the disk:
    // the writer that waited for the next sync, and every later one, get the same failure.
    await expect(second).rejects.toBe(error)
    await expect(syncer.durable()).rejects.toBe(error)
    expect(syncer.failure()).toBe(error)
    expect(gate.runs).toHaveLength(1)
    await expect(idle).resolves.toBeUndefined()
  })

  it('#44 item 3: idle() settles without rejecting when the sync it waits for fails', async () => {
    const gate = gatedSync()
    const syncer = walSyncer(gate.sync)
    syncer.durable().catch(() => {})
    const idle = syncer.idle()
    gate.runs[0]?.end(new Error('EIO'))
    await expect(idle).resolves.toBeUndefined()
  })
})
