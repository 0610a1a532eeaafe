/**
 * @module storage/membership_batch
 * Coalesces concurrent "is this key in the set?" lookups (revoked access tokens, revoked grants)
 * into one query per batch: `WHERE key = ANY($1)` (PostgreSQL) or one MGET (Redis) for many keys
 * costs the backend about what one key costs, and introspection under load asks once per request.
 *
 * No timer: a lookup made while fewer than `concurrency` queries are in flight leaves at the end of
 * the current microtask queue, with every lookup made in the same turn (introspection asks for the
 * token and its grant together: one query, not two); an idle server adds no latency. Otherwise it
 * waits for the next query, which leaves as soon as one in flight returns and carries every key
 * that waited. A lookup never joins a query already sent, so it always reads the database after it
 * was asked (a revocation that committed before the call is seen, as with a query of its own).
 */

interface Waiter {
  key: string
  resolve: (member: boolean) => void
  reject: (reason: unknown) => void
}

export interface MembershipBatchOptions {
  /** Queries in flight at once. Default 2. */
  concurrency?: number
  /** Most keys in one query. Default 256. */
  maxKeys?: number
}

/**
 * `(key) => Promise<boolean>` over `query`, which answers for many keys at once with the subset
 * that are members. A failed query rejects the lookups it carried, and only those.
 */
export function membershipBatch(
  query: (keys: string[]) => Promise<Iterable<string>>,
  options: MembershipBatchOptions = {},
): (key: string) => Promise<boolean> {
  const concurrency = options.concurrency ?? 2
  const maxKeys = options.maxKeys ?? 256
  const waiting: Waiter[] = []
  let inFlight = 0
  let scheduled = false

  function sendScheduled(): void {
    scheduled = false
    if (waiting.length > 0 && inFlight < concurrency) send()
  }

  function send(): void {
    const batch = waiting.splice(0, maxKeys)
    inFlight++
    // Duplicate keys (the same token introspected by several requests) are asked for once.
    const keys = [...new Set(batch.map((waiter) => waiter.key))]
    // A query that throws instead of rejecting must not hold its slot forever.
    new Promise<Iterable<string>>((resolve) => resolve(query(keys))).then(
      (found) => {
        const members = new Set(found)
        for (const waiter of batch) waiter.resolve(members.has(waiter.key))
        done()
      },
      (reason: unknown) => {
        for (const waiter of batch) waiter.reject(reason)
        done()
      },
    )
  }

  function done(): void {
    inFlight--
    if (waiting.length > 0) send()
  }

  return (key) =>
    new Promise<boolean>((resolve, reject) => {
      waiting.push({ key, resolve, reject })
      if (inFlight < concurrency && !scheduled) {
        scheduled = true
        queueMicrotask(sendScheduled)
      }
    })
}
