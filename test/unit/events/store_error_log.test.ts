/**
 * #27 item 10: repeated store failures are logged once per kind per window, with a count. The
 * window's clock is the test's own (`later` queues the window's end; the test runs it): no sleeping.
 */
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../../src/errors.ts'
import { createStoreErrorLog, storeErrorKind } from '../../../src/events/store_error_log.ts'

function harness() {
  const lines: { message: string; detail?: Record<string, unknown> }[] = []
  const timers: { at: number; fn: () => void }[] = []
  let clock = 0
  const log = createStoreErrorLog(
    { warn: () => {}, error: (message, detail) => lines.push({ message, ...(detail ? { detail } : {}) }) },
    { windowMs: 5000, later: (fn, ms) => timers.push({ at: clock + ms, fn }) },
  )
  /** Moves the clock on, running the window ends that fall due. */
  const advance = (ms: number) => {
    clock += ms
    for (let due = timers.find((t) => t.at <= clock); due; due = timers.find((t) => t.at <= clock)) {
      timers.splice(timers.indexOf(due), 1)
      due.fn()
    }
  }
  return { log, lines, advance, timers }
}

const failure = (operation: string, code: string) =>
  new StoreUnavailableError(`database unavailable during ${operation}`, {
    cause: Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code }),
  })

describe('store failure log (#27 item 10)', () => {
  it('#27 item 10: logs the first failure at once, counts repeats, and summarises each window per kind', () => {
    const { log, lines, advance } = harness()
    for (let i = 0; i < 1000; i++)
      log.report(failure(i % 2 ? 'clients.get' : 'codes.consume', 'ECONNREFUSED'), { path: '/connect/token' })
    log.report(failure('clients.get', 'CONNECT_TIMEOUT'), { path: '/connect/token' })
    expect(lines.map((l) => l.message)).toEqual(['store unavailable', 'store unavailable'])
    expect(lines[0]?.detail).toMatchObject({ kind: 'database unavailable (ECONNREFUSED)', path: '/connect/token' })
    expect(lines[1]?.detail).toMatchObject({ kind: 'database unavailable (CONNECT_TIMEOUT)' })

    advance(4999)
    expect(lines).toHaveLength(2)
    advance(1)
    // The refused kind repeated 999 times; the time-out kind did not repeat: no summary for it.
    expect(lines.slice(2).map((l) => l.message)).toEqual([
      'store unavailable ×999 in 5 s: database unavailable (ECONNREFUSED)',
    ])
    expect(lines[2]?.detail).toEqual({ kind: 'database unavailable (ECONNREFUSED)', count: 999 })

    // The outage goes on: the next window is counted silently and summarised at its end.
    for (let i = 0; i < 10; i++) log.report(failure('clients.get', 'ECONNREFUSED'), { path: '/connect/token' })
    log.report(failure('clients.get', 'CONNECT_TIMEOUT'), { path: '/connect/token' }) // a new episode
    expect(lines).toHaveLength(4)
    expect(lines[3]?.message).toBe('store unavailable')
    advance(5000)
    expect(lines.slice(4).map((l) => l.message)).toEqual([
      'store unavailable ×10 in 5 s: database unavailable (ECONNREFUSED)',
    ])

    // A quiet window ends the episode: the next failure is logged in full again.
    advance(5000)
    expect(lines).toHaveLength(5)
    log.report(failure('clients.get', 'ECONNREFUSED'), { path: '/connect/introspect' })
    expect(lines[5]).toMatchObject({ message: 'store unavailable', detail: { path: '/connect/introspect' } })
  })

  it('#27 item 10: the kind names the failure and its code, never credentials', () => {
    const err = new StoreUnavailableError('redis unavailable during clients.get', {
      cause: new Error('connect to redis://user:hunter2@10.0.0.1:6379 failed'),
    })
    expect(storeErrorKind(err)).toBe('redis unavailable (Error)')
    const lines: string[] = []
    const log = createStoreErrorLog(
      { warn: () => {}, error: (message, detail) => lines.push(`${message} ${JSON.stringify(detail)}`) },
      { later: () => {} },
    )
    log.report(
      new StoreUnavailableError('cannot reach postgres://admin:s3cret@db:5432/app', { cause: new Error('x') }),
      { path: '/connect/token' },
    )
    expect(lines.join('\n')).not.toMatch(/s3cret|admin:/)
  })
})
