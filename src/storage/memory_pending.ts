/**
 * @module storage/memory_pending
 * The decision and the poll of an authorization that waits for the end-user, in the memory store:
 * a device authorization (RFC 8628) and a CIBA request alike. Each reads, decides and writes with
 * no await between: atomic in one process; the packed maps copy records in and out.
 */
import type { PackedRecordMap } from './packed_map.ts'
import type { CibaRequestRecord, DeviceCodeRecord, DeviceDecision } from './types.ts'

type Pending = DeviceCodeRecord | CibaRequestRecord
type Entries<T extends Pending> = PackedRecordMap<{ record: T; expiresAt: number }>

/** Records the decision on a pending, unexpired record; whether this call decided it. */
export function decidePending<T extends Pending>(
  map: Entries<T>,
  id: string,
  decision: DeviceDecision,
  at: number,
): boolean {
  const entry = map.get(id)
  if (entry?.record.status !== 'pending' || entry.record.expiresAt <= at) return false
  entry.record.status = decision.status
  if (decision.status === 'approved') entry.record.login = decision.login
  map.set(id, entry)
  return true
}

/** The outcome of one poll (`Store.deviceCodes.poll`, `Store.cibaRequests.poll`). */
export type PendingPoll<T> =
  | { status: 'missing' }
  | { status: 'expired' | 'pending' | 'slow_down' | 'denied' | 'ok' | 'replayed'; record: T }

/** One poll: redeems an approved record once; a pending one answers pending, or slow_down (+5 s) when polled too soon. */
export function pollPending<T extends Pending>(map: Entries<T>, id: string, at: number): PendingPoll<T> {
  const entry = map.get(id)
  if (!entry) return { status: 'missing' }
  const record = entry.record
  if (record.consumedAt !== undefined) return { status: 'replayed', record }
  if (record.expiresAt <= at) return { status: 'expired', record }
  if (record.status === 'denied') return { status: 'denied', record }
  if (record.status === 'approved') {
    record.consumedAt = at
    map.set(id, entry)
    return { status: 'ok', record }
  }
  const tooSoon = record.polledAt !== undefined && at - record.polledAt < record.interval
  if (tooSoon) record.interval += 5
  record.polledAt = at
  map.set(id, entry)
  return { status: tooSoon ? 'slow_down' : 'pending', record }
}
