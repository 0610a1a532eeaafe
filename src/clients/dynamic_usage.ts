/**
 * @module clients/dynamic_usage
 * When dynamically registered clients (RFC 7591) were last used, and the pruning of those unused
 * for too long. Use is written at most once a day per client, in the background, so a busy
 * client's token requests cost one store write a day.
 */
import { CACHE_MAX, type ClientCache } from './cache.ts'
import { OPTION_DEFAULTS } from '../defaults.ts'
import type { ClientRecord, Store } from '../storage/index.ts'

/** How often, at most, a self-registered client's `lastUsedAt` is written (seconds). */
const LAST_USED_GRANULARITY = 86_400

/** The registry's `touch` and `pruneDynamic`. */
export interface DynamicClientUsage {
  touch(client: ClientRecord): void
  prune(input: { unusedFor?: number }): Promise<string[]>
}

export function createDynamicClientUsage(options: {
  store: Store
  now: () => number
  cache: ClientCache
  /** Default `unusedFor` of `prune`, seconds. Default 30 days. */
  pruneUnusedAfter: number | undefined
  /** Where the background write goes so that the host keeps running it (Workers' `waitUntil`). */
  waitUntil?: ((promise: Promise<unknown>) => void) | undefined
}): DynamicClientUsage {
  const { store, now, cache } = options
  /** When this instance last wrote `lastUsedAt` per client id (so a busy client costs one write a day). */
  const touched = new Map<string, number>()
  const lastUsed = (client: ClientRecord, lastUsedAt: number | undefined) =>
    Math.max(lastUsedAt ?? client.createdAt, touched.get(client.clientId) ?? 0)

  return {
    touch(client) {
      const registration = client.registration
      // Only stored (dynamic) clients: a metadata-document client may not be a stored record.
      if (registration?.kind !== 'dynamic') return
      const at = now()
      if (at - lastUsed(client, registration.lastUsedAt) < LAST_USED_GRANULARITY) return
      if (touched.size >= CACHE_MAX) touched.clear()
      touched.set(client.clientId, at)
      // Not awaited: the request does not wait for bookkeeping. A concurrent change wins (no retry).
      const next: ClientRecord = { ...client, registration: { ...registration, lastUsedAt: at } }
      const writing = store.clients.update(next, client).then(
        (written) => {
          if (written) cache.delete(client.clientId)
        },
        () => touched.delete(client.clientId),
      )
      options.waitUntil?.(writing)
    },

    async prune(input) {
      const unusedFor =
        input.unusedFor ?? options.pruneUnusedAfter ?? OPTION_DEFAULTS.dynamicClientRegistration.pruneUnusedAfter
      if (!Number.isSafeInteger(unusedFor) || unusedFor < 0) {
        throw new TypeError('unusedFor must be a non-negative integer (seconds)')
      }
      const cutoff = now() - unusedFor
      const removed: string[] = []
      for (const record of await store.clients.list()) {
        const registration = record.registration
        if (registration?.kind !== 'dynamic') continue
        if (lastUsed(record, registration.lastUsedAt) > cutoff) continue
        cache.delete(record.clientId)
        if (await store.clients.delete(record.clientId)) removed.push(record.clientId)
      }
      return removed
    },
  }
}
