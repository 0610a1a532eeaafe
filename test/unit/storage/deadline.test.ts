/**
 * #27 item 10: client-side deadlines of store calls on one shared ticker. The clock and the ticker
 * are the test's own: no sleeping.
 */
import { describe, expect, it } from 'vitest'
import { DeadlineExceededError, createDeadlines } from '../../../src/storage/deadline.ts'

function harness() {
  let clock = 0
  let ticking = 0
  const expired: string[] = []
  const deadlines = createDeadlines<string>({
    timeoutMs: 2000,
    now: () => clock,
    every: () => {
      ticking++
      return () => ticking--
    },
    onExpire: (tag) => expired.push(tag),
  })
  const at = (ms: number) => {
    clock = ms
    deadlines.tick()
  }
  return { deadlines, expired, at, ticking: () => ticking }
}

const never = new Promise<never>(() => {})

describe('store call deadlines (#27 item 10)', () => {
  it('#27 item 10: a call without an answer fails after the timeout and names its tag; answered calls pass', async () => {
    const { deadlines, expired, at, ticking } = harness()
    const silent = deadlines.race(never, 'pool-1')
    const outcome = silent.then(
      () => 'answered',
      (err: unknown) => err,
    )
    const answered = deadlines.race(Promise.resolve(42), 'pool-1')
    expect(await answered).toBe(42)
    expect(ticking()).toBe(1)
    at(1999)
    expect(expired).toEqual([])
    at(2000)
    const err = await outcome
    expect(err).toBeInstanceOf(DeadlineExceededError)
    expect((err as DeadlineExceededError).code).toBe('QUERY_TIMEOUT')
    expect(expired).toEqual(['pool-1'])
    expect(deadlines.pending).toBe(0)
    expect(ticking()).toBe(0) // nothing pending: no ticker
  })

  it('#27 item 10: a failure passes through unchanged, and a late answer after expiry is dropped', async () => {
    const { deadlines, at } = harness()
    const boom = new Error('boom')
    await expect(deadlines.race(Promise.reject(boom), 'p')).rejects.toBe(boom)
    let answer: (value: string) => void = () => {}
    const late = deadlines.race(new Promise<string>((r) => (answer = r)), 'p')
    at(2500)
    answer('too late')
    await expect(late).rejects.toBeInstanceOf(DeadlineExceededError)
  })
})
