import { describe, expect, it } from 'vitest'
import { membershipBatch } from '../../../src/storage/membership_batch.ts'

/** A fake query: records each call's keys and settles when the test says so. */
function fakeQuery(members: Set<string>) {
  const calls: { keys: string[]; answer: () => void; fail: (reason: unknown) => void }[] = []
  const query = (keys: string[]) =>
    new Promise<string[]>((resolve, reject) => {
      calls.push({ keys, answer: () => resolve(keys.filter((key) => members.has(key))), fail: reject })
    })
  return { query, calls }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0))
/** Lets queued microtasks run (the batch leaves at the end of the current turn). */
const turn = () => Promise.resolve()

describe('membershipBatch', () => {
  it('an idle lookup is sent at the end of its turn, alone', async () => {
    const { query, calls } = fakeQuery(new Set(['a']))
    const lookup = membershipBatch(query)
    const answer = lookup('a')
    await turn()
    expect(calls.map((call) => call.keys)).toEqual([['a']])
    calls[0]?.answer()
    expect(await answer).toBe(true)
  })

  it('lookups made in the same turn share one query (introspection asks for a token and its grant together)', async () => {
    const { query, calls } = fakeQuery(new Set(['f:grant']))
    const lookup = membershipBatch(query)
    const answers = Promise.all([lookup('a:jti'), lookup('f:grant')])
    await turn()
    expect(calls.map((call) => call.keys)).toEqual([['a:jti', 'f:grant']])
    calls[0]?.answer()
    expect(await answers).toEqual([false, true])
  })

  it('lookups made while the queries in flight are busy wait, then share one query (duplicates asked once)', async () => {
    const { query, calls } = fakeQuery(new Set(['b', 'd']))
    const lookup = membershipBatch(query, { concurrency: 2 })
    const first = [lookup('a')]
    await turn()
    const second = [lookup('b')]
    await turn()
    const answers = ['c', 'd', 'b', 'e', 'b'].map((key) => lookup(key))
    await turn()
    // Two in flight (one key each); the five others wait for a slot.
    expect(calls.map((call) => call.keys)).toEqual([['a'], ['b']])
    calls[0]?.answer()
    await settle()
    expect(calls.map((call) => call.keys)).toEqual([['a'], ['b'], ['c', 'd', 'b', 'e']])
    calls[1]?.answer()
    calls[2]?.answer()
    expect(await Promise.all([...first, ...second, ...answers])).toEqual([false, true, false, true, true, false, true])
  })

  it('a lookup never joins a query already sent: it reads after it was asked', async () => {
    const members = new Set<string>()
    const { query, calls } = fakeQuery(members)
    const lookup = membershipBatch(query, { concurrency: 1 })
    const early = lookup('x')
    await turn()
    members.add('x') // committed while the first query is in flight (which read before it)
    const late = lookup('x')
    await turn()
    expect(calls).toHaveLength(1)
    calls[0]?.fail(new Error('not reached')) // whatever the first query says, the late lookup waits for its own
    await expect(early).rejects.toThrow('not reached')
    await settle()
    expect(calls.map((call) => call.keys)).toEqual([['x'], ['x']])
    calls[1]?.answer()
    expect(await late).toBe(true)
  })

  it('a failed query rejects only the lookups it carried; later ones are answered', async () => {
    const { query, calls } = fakeQuery(new Set(['b']))
    const lookup = membershipBatch(query, { concurrency: 1 })
    const first = lookup('a')
    await turn()
    const second = lookup('b')
    await turn()
    calls[0]?.fail(new Error('connection reset'))
    await expect(first).rejects.toThrow('connection reset')
    await settle()
    calls[1]?.answer()
    expect(await second).toBe(true)
  })

  it('a query that throws synchronously rejects its lookups and frees its slot', async () => {
    let throwNext = true
    const lookup = membershipBatch(
      (keys) => {
        if (throwNext) {
          throwNext = false
          throw new Error('bad statement')
        }
        return Promise.resolve(keys)
      },
      { concurrency: 1 },
    )
    await expect(lookup('a')).rejects.toThrow('bad statement')
    expect(await lookup('b')).toBe(true)
  })

  it('no query carries more than maxKeys keys', async () => {
    const { query, calls } = fakeQuery(new Set())
    const lookup = membershipBatch(query, { concurrency: 1, maxKeys: 3 })
    const answers = Array.from({ length: 8 }, (_, i) => lookup(`k${i}`))
    for (let i = 0; i < 4; i++) {
      await settle()
      calls[i]?.answer()
    }
    expect(calls.map((call) => call.keys)).toEqual([
      ['k0', 'k1', 'k2'],
      ['k3', 'k4', 'k5'],
      ['k6', 'k7'],
    ])
    expect(await Promise.all(answers)).toEqual(Array(8).fill(false))
  })
})
