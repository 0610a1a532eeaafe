/**
 * @module storage/memory_ciba
 * The backchannel authentication requests of the memory store (`Store.cibaRequests`, OpenID
 * CIBA). Every operation reads, decides and writes with no await between: atomic in one process;
 * the packed maps copy records in and out, so callers never share them.
 */
import { decidePending, pollPending } from './memory_pending.ts'
import type { PackedRecordMap } from './packed_map.ts'
import { CIBA_REQUEST_RETENTION, type CibaPoll, type CibaRequestRecord, type Store } from './types.ts'

/** The maps the memory store keeps for CIBA (swept with the others). */
export interface CibaMaps {
  requests: PackedRecordMap<{ record: CibaRequestRecord; expiresAt: number }>
  approvals: PackedRecordMap<{ id: string; expiresAt: number }>
}

/** `Store.cibaRequests` over the memory store's maps. */
export function memoryCibaRequests({ requests, approvals }: CibaMaps): Store['cibaRequests'] {
  return {
    async insert(record) {
      requests.set(record.id, { record, expiresAt: record.expiresAt + CIBA_REQUEST_RETENTION })
      approvals.set(record.approvalId, { id: record.id, expiresAt: record.expiresAt })
    },
    async get(id) {
      return requests.get(id)?.record
    },
    async findByApproval(approvalId, at) {
      const holder = approvals.get(approvalId)
      if (!holder || holder.expiresAt <= at) return undefined
      const record = requests.get(holder.id)?.record
      return record && record.expiresAt > at ? record : undefined
    },
    async decide(id, decision, at) {
      return decidePending(requests, id, decision, at)
    },
    async poll(id, at): Promise<CibaPoll> {
      return pollPending(requests, id, at)
    },
  }
}
