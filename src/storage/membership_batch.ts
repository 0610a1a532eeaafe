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

import { callBatch } from './call_batch.ts'

export interface MembershipBatchOptions {
  /** Queries in flight at once. Default 2. */
  concurrency?: number
  /** Most keys in one query. Default 256. */
  maxKeys?: number
}

/**
 * `(key) => Promise<boolean>` over `query`, which answers for many keys at once with the subset
 * that are members. A failed query rejects the lookups it carried, and only those. The schedule is
 * call_batch.ts's; unlike a redemption, a key looked up twice shares the query (asked once).
 */
export function membershipBatch(
  query: (keys: string[]) => Promise<Iterable<string>>,
  options: MembershipBatchOptions = {},
): (key: string) => Promise<boolean> {
  let sequence = 0
  return callBatch<string, boolean>(
    async (keys) => {
      // Duplicate keys (the same token introspected by several requests) are asked for once.
      const members = new Set(await query([...new Set(keys)]))
      return keys.map((key) => ({ status: 'fulfilled', value: members.has(key) }))
    },
    {
      // Every lookup its own key: duplicates are not split into batches of their own.
      keyOf: () => String(sequence++),
      concurrency: options.concurrency ?? 2,
      maxItems: options.maxKeys ?? 256,
    },
  )
}
