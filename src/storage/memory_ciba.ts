/**
 * @module storage/memory_ciba
 * The backchannel authentication requests of the memory store (`Store.cibaRequests`, OpenID
 * CIBA). Every operation reads, decides and writes with no await between: atomic in one process;
 * the packed maps copy records in and out, so callers never share them.
 */
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
      const entry = requests.get(id)
      if (entry?.record.status !== 'pending' || entry.record.expiresAt <= at) return false
      entry.record.status = decision.status
      if (decision.status === 'approved') entry.record.login = decision.login
      requests.set(id, entry)
      return true
    },
    async poll(id, at): Promise<CibaPoll> {
      const entry = requests.get(id)
      if (!entry) return { status: 'missing' }
      const record = entry.record
      if (record.consumedAt !== undefined) return { status: 'replayed', record }
      if (record.expiresAt <= at) return { status: 'expired', record }
      if (record.status === 'denied') return { status: 'denied', record }
      if (record.status === 'approved') {
        record.consumedAt = at
        requests.set(id, entry)
        return { status: 'ok', record }
      }
      const tooSoon = record.polledAt !== undefined && at - record.polledAt < record.interval
      if (tooSoon) record.interval += 5
      record.polledAt = at
      requests.set(id, entry)
      return { status: tooSoon ? 'slow_down' : 'pending', record }
    },
  }
}
