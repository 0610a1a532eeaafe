import { describe, expect, it } from 'vitest'
import { callBatch } from '../../../src/storage/call_batch.ts'

interface Deferred {
  items: string[]
  settle: (results: PromiseSettledResult<string>[]) => void
  fail: (reason: unknown) => void
}

/** A `send` whose batches the test answers by hand. */
function manual(): { sent: Deferred[]; send: (items: string[]) => Promise<PromiseSettledResult<string>[]> } {
  const sent: Deferred[] = []
  return {
    sent,
    send: (items) =>
      new Promise((resolve, reject) => {
        sent.push({ items, settle: resolve, fail: reject })
      }),
  }
}

const ok = (items: string[]): PromiseSettledResult<string>[] =>
  items.map((item) => ({ status: 'fulfilled', value: `done ${item}` }))
const turn = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

describe('callBatch (#44: concurrent redemptions in one statement)', () => {
  it('calls made in one turn leave together, at the end of the microtask queue (no timer)', async () => {
    const { sent, send } = manual()
    const call = callBatch(send, { keyOf: (item: string) => item })
    const results = [call('a'), call('b'), call('c')]
    await Promise.resolve()
    expect(sent.map((batch) => batch.items)).toEqual([['a', 'b', 'c']])
    sent[0]?.settle(ok(['a', 'b', 'c']))
    expect(await Promise.all(results)).toEqual(['done a', 'done b', 'done c'])
  })

  it('with `concurrency` batches in flight, later calls wait and leave together when one returns', async () => {
    const { sent, send } = manual()
    const call = callBatch(send, { keyOf: (item: string) => item, concurrency: 2 })
    const first = call('a')
    await turn()
    const second = call('b')
    await turn()
    const waiting = [call('c'), call('d'), call('e')]
    await turn()
    expect(sent.map((batch) => batch.items)).toEqual([['a'], ['b']])
    sent[0]?.settle(ok(['a']))
    expect(await first).toBe('done a')
    await turn()
    expect(sent.map((batch) => batch.items)).toEqual([['a'], ['b'], ['c', 'd', 'e']])
    sent[1]?.settle(ok(['b']))
    sent[2]?.settle(ok(['c', 'd', 'e']))
    expect(await Promise.all([second, ...waiting])).toEqual(['done b', 'done c', 'done d', 'done e'])
  })

  it('two calls with the same key never share a batch: the later one leaves with the next', async () => {
    const { sent, send } = manual()
    const call = callBatch(send, { keyOf: (item: string) => item.split(':')[0] as string, concurrency: 1 })
    const results = [call('x:1'), call('y:1'), call('x:2')]
    await turn()
    expect(sent.map((batch) => batch.items)).toEqual([['x:1', 'y:1']])
    sent[0]?.settle(ok(['x:1', 'y:1']))
    await turn()
    expect(sent.map((batch) => batch.items)).toEqual([['x:1', 'y:1'], ['x:2']])
    sent[1]?.settle(ok(['x:2']))
    expect(await Promise.all(results)).toEqual(['done x:1', 'done y:1', 'done x:2'])
  })

  it('a batch holds at most `maxItems` calls', async () => {
    const { sent, send } = manual()
    const call = callBatch(send, { keyOf: (item: string) => item, concurrency: 1, maxItems: 2 })
    const results = ['a', 'b', 'c'].map((item) => call(item))
    await turn()
    expect(sent.map((batch) => batch.items)).toEqual([['a', 'b']])
    sent[0]?.settle(ok(['a', 'b']))
    await turn()
    sent[1]?.settle(ok(['c']))
    expect(await Promise.all(results)).toEqual(['done a', 'done b', 'done c'])
  })

  it('calls left over (past `maxItems`, or a key already in the batch) leave at once in another batch while a slot is free', async () => {
    const { sent, send } = manual()
    const call = callBatch(send, { keyOf: (item: string) => item.split(':')[0] as string, concurrency: 2, maxItems: 2 })
    const results = [call('a:1'), call('a:2'), call('b:1'), call('c:1')]
    await Promise.resolve()
    expect(sent.map((batch) => batch.items)).toEqual([
      ['a:1', 'b:1'],
      ['a:2', 'c:1'],
    ])
    sent[0]?.settle(ok(['a:1', 'b:1']))
    sent[1]?.settle(ok(['a:2', 'c:1']))
    expect(await Promise.all(results)).toEqual(['done a:1', 'done a:2', 'done b:1', 'done c:1'])
  })

  it('a rejected result rejects its call only; a failed (or throwing) send rejects the calls it carried, and the next batch still leaves', async () => {
    const { sent, send } = manual()
    const call = callBatch(send, { keyOf: (item: string) => item, concurrency: 1 })
    const results = [call('a'), call('b')].map((p) => p.then(String, (e: Error) => `error ${e.message}`))
    await turn()
    sent[0]?.settle([
      { status: 'fulfilled', value: 'done a' },
      { status: 'rejected', reason: new Error('b refused') },
    ])
    expect(await Promise.all(results)).toEqual(['done a', 'error b refused'])
    const failed = [call('c'), call('d')].map((p) => p.then(String, (e: Error) => `error ${e.message}`))
    await turn()
    sent[1]?.fail(new Error('database unavailable'))
    expect(await Promise.all(failed)).toEqual(['error database unavailable', 'error database unavailable'])
    const throwing = callBatch<string, string>(
      () => {
        throw new Error('thrown')
      },
      { keyOf: (item) => item, concurrency: 1 },
    )
    await expect(throwing('e')).rejects.toThrow('thrown')
    await expect(throwing('f')).rejects.toThrow('thrown')
    const last = call('g')
    await turn()
    sent[2]?.settle(ok(['g']))
    expect(await last).toBe('done g')
  })

  it('a batch answered with fewer results than calls rejects the calls left without one', async () => {
    const { sent, send } = manual()
    const call = callBatch(send, { keyOf: (item: string) => item })
    const results = [call('a'), call('b')].map((p) => p.then(String, (e: Error) => `error ${e.message}`))
    await turn()
    sent[0]?.settle(ok(['a']))
    expect(await Promise.all(results)).toEqual(['done a', 'error the batch returned no result for a call'])
  })
})
