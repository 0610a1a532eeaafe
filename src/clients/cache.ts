/**
 * @module clients/cache
 * The per-instance client cache the endpoints read through: a stored client (or the absence of
 * one) is served from memory for a few seconds, so a busy client's requests do not each wait for
 * the store. Changes the registry makes drop the entry; other instances see them within the TTL.
 */
import type { ClientRecord } from '../storage/index.ts'

/** Most entries held (the cache and the dynamic clients' usage marks); beyond it they are all dropped. */
export const CACHE_MAX = 10_000

/** A client cache with a fixed time to live. */
export interface ClientCache {
  /** The cached lookup while fresh (`record` undefined: an unknown id, remembered too), else undefined. */
  lookup(clientId: string, at: number): { record: ClientRecord | undefined } | undefined
  /** Remembers a store lookup made at `at`. */
  remember(clientId: string, record: ClientRecord | undefined, at: number): void
  /** Drops a client (after a change, or on request). */
  delete(clientId: string): void
}

/** Creates a cache keeping lookups for `ttl` seconds (0: none). */
export function createClientCache(ttl: number): ClientCache {
  const entries = new Map<string, { record: ClientRecord | undefined; until: number }>()
  return {
    lookup(clientId, at) {
      const hit = entries.get(clientId)
      return hit && hit.until > at ? hit : undefined
    },
    remember(clientId, record, at) {
      if (entries.size >= CACHE_MAX) entries.clear()
      if (ttl > 0) entries.set(clientId, { record, until: at + ttl })
    },
    delete(clientId) {
      entries.delete(clientId)
    },
  }
}
