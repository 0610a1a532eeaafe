/**
 * @module storage/call_batch
 * Coalesces concurrent calls of one store operation into one round trip per batch (#44): the
 * one-statement redemptions of PostgreSQL, where a statement carrying eight codes costs the
 * database, the driver and the kernel about what one costs, and commits once (a group commit: on a
 * disk whose flush takes milliseconds, a batch is what lets one instance redeem thousands a second).
 *
 * The schedule, which the revocation lookups (membership_batch.ts) run on too, has no timer. A call
 * made while fewer than `concurrency` batches are in flight leaves at the end of the current
 * microtask queue, with the calls made in the same turn; an idle server adds no latency. Otherwise
 * it waits, and leaves with every call that waited as soon as a batch in flight returns. Calls with
 * the same key (the same code twice) never share a batch: the later one waits for the next, so each
 * batch names a row once.
 */

interface Waiter<I, O> {
  item: I
  key: string
  resolve: (result: O) => void
  reject: (reason: unknown) => void
}

export interface CallBatchOptions<I> {
  /** The row a call names: calls with the same key go in different batches. */
  keyOf: (item: I) => string
  /** Batches in flight at once. Default 2. */
  concurrency?: number
  /** Most calls in one batch. Default 64. */
  maxItems?: number
}

/**
 * `(item) => Promise<result>` over `send`, which settles a batch of items with one result each, in
 * their order (a rejected one rejects its call). A failed `send` rejects the calls it carried, and
 * only those.
 */
export function callBatch<I, O>(
  send: (items: I[]) => Promise<PromiseSettledResult<O>[]>,
  options: CallBatchOptions<I>,
): (item: I) => Promise<O> {
  const { keyOf } = options
  const concurrency = options.concurrency ?? 2
  const maxItems = options.maxItems ?? 64
  let waiting: Waiter<I, O>[] = []
  let inFlight = 0
  let scheduled = false

  function sendScheduled(): void {
    scheduled = false
    while (waiting.length > 0 && inFlight < concurrency) sendNext()
  }

  /** The next batch: waiting calls in order, a key at most once, at most `maxItems`. */
  function take(): Waiter<I, O>[] {
    const batch: Waiter<I, O>[] = []
    const rest: Waiter<I, O>[] = []
    const keys = new Set<string>()
    for (const waiter of waiting) {
      if (batch.length < maxItems && !keys.has(waiter.key)) {
        keys.add(waiter.key)
        batch.push(waiter)
      } else rest.push(waiter)
    }
    waiting = rest
    return batch
  }

  function sendNext(): void {
    const batch = take()
    inFlight++
    // A send that throws instead of rejecting must not hold its slot forever.
    new Promise<PromiseSettledResult<O>[]>((resolve) => resolve(send(batch.map((waiter) => waiter.item)))).then(
      (results) => {
        try {
          batch.forEach((waiter, i) => {
            const result = results[i]
            if (result === undefined) waiter.reject(new Error('the batch returned no result for a call'))
            else if (result.status === 'fulfilled') waiter.resolve(result.value)
            else waiter.reject(result.reason)
          })
        } catch (reason) {
          for (const waiter of batch) waiter.reject(reason)
        } finally {
          done()
        }
      },
      (reason: unknown) => {
        for (const waiter of batch) waiter.reject(reason)
        done()
      },
    )
  }

  /** A slot is free: the calls that waited leave, in as many batches as there are free slots. */
  function done(): void {
    inFlight--
    while (waiting.length > 0 && inFlight < concurrency) sendNext()
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ item, key: keyOf(item), resolve, reject })
      if (inFlight < concurrency && !scheduled) {
        scheduled = true
        queueMicrotask(sendScheduled)
      }
    })
}
