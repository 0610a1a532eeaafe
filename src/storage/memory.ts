/**
 * @module storage/memory
 * The in-memory reference store, the embedded default. Single process only: state is lost on exit.
 * Atomicity comes from doing each check-and-set with no `await` in between.
 *
 * Clients and keys (few, read through caches) are objects in Maps. Everything that grows with
 * traffic (codes, refresh tokens, sessions, grants, interactions, revocations, attempt counters,
 * pushed requests, used one-time identifiers) is kept
 * as JSON bytes in a `PackedRecordMap`, outside the JavaScript heap's pages: a million refresh
 * tokens then cost the garbage collector nothing (see packed_map.ts for the measurements).
 * Every read returns a fresh copy, so callers never share the store's records.
 */
import { decidePending, pollPending } from './memory_pending.ts'
import { type CibaMaps, memoryCibaRequests } from './memory_ciba.ts'
import { PackedRecordMap } from './packed_map.ts'
import {
  type ClientRecord,
  type CodeRecord,
  type Consumed,
  DEVICE_CODE_RETENTION,
  type DeviceCodeRecord,
  type DevicePoll,
  type GrantRecord,
  type InteractionRecord,
  type KeyRecord,
  type PushedRequestRecord,
  type RefreshTokenRecord,
  type SessionRecord,
  type Store,
} from './types.ts'

export interface MemoryStoreOptions {
  /** Clock in epoch seconds (tests inject one). */
  now?: () => number
  /** Expired entries are swept after this many writes at least (or the map's size, if larger). Default 1000. */
  sweepEvery?: number
}

/**
 * A deep copy of a record, so callers never share the store's objects. Records are JSON data
 * (the SQL and Redis stores keep them as JSON): plain objects, arrays and primitives. Copied by
 * hand because Node's structuredClone serialises through a buffer: measured under load it was
 * the costliest step of a refresh-token lookup and left an ArrayBuffer per call to the GC.
 */
function clone<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) return value.map(clone) as T
  const copy: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const item = clone((value as Record<string, unknown>)[key])
    // An own `__proto__` key stays a key (assignment would set the copy's prototype instead).
    if (key === '__proto__')
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true })
    else copy[key] = item
  }
  return copy as T
}

/** The stores `createMemoryStore` made: their reads are in process already (no `issuedRecordCache`). */
const memoryStores = new WeakSet<Store>()

/** Whether `store` is one of this module's in-memory stores. */
export function isMemoryStore(store: Store): boolean {
  return memoryStores.has(store)
}

/** Creates the in-memory store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store & { sweep(): void } {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000))
  const sweepEvery = options.sweepEvery ?? 1000
  const clients = new Map<string, ClientRecord>()
  const packed = { now, sweepEvery }
  const codes = new PackedRecordMap<CodeRecord>(packed)
  const refreshTokens = new PackedRecordMap<RefreshTokenRecord>(packed)
  const sessions = new PackedRecordMap<SessionRecord>(packed)
  const sessionIndex = subjectIndex(sessions)
  const grants = new PackedRecordMap<GrantRecord>(packed)
  const grantIndex = subjectIndex(grants)
  const interactions = new PackedRecordMap<InteractionRecord>(packed)
  const families = new PackedRecordMap<{ expiresAt: number }>(packed)
  const accessTokens = new PackedRecordMap<{ expiresAt: number }>(packed)
  const keys = new Map<string, KeyRecord>()
  const attempts = new PackedRecordMap<{ count: number; expiresAt: number }>(packed)
  const pushedRequests = new PackedRecordMap<PushedRequestRecord>(packed)
  const replays = new PackedRecordMap<{ expiresAt: number }>(packed)
  // Device authorizations are kept past their lifetime (a late poll learns expired_token); the
  // user-code index holds a code only during its lifetime.
  const deviceCodes = new PackedRecordMap<{ record: DeviceCodeRecord; expiresAt: number }>(packed)
  const userCodes = new PackedRecordMap<{ id: string; expiresAt: number }>(packed)
  const ciba: CibaMaps = { requests: new PackedRecordMap(packed), approvals: new PackedRecordMap(packed) }

  const store: Store & { sweep(): void } = {
    clients: {
      async get(clientId) {
        const record = clients.get(clientId)
        return record && clone(record)
      },
      async insert(record) {
        if (clients.has(record.clientId)) return false
        clients.set(record.clientId, clone(record))
        return true
      },
      async update(record, expected) {
        const stored = clients.get(record.clientId)
        if (!stored) return false
        if (expected && JSON.stringify(stored) !== JSON.stringify(expected)) return false
        clients.set(record.clientId, clone(record))
        return true
      },
      async delete(clientId) {
        return clients.delete(clientId)
      },
      async list() {
        return [...clients.values()].map(clone)
      },
    },
    codes: {
      async insert(record) {
        codes.set(record.id, record)
      },
      async get(id) {
        const record = codes.get(id)
        return record && record.expiresAt > now() ? record : undefined
      },
      async consume(id, at): Promise<Consumed<CodeRecord>> {
        const record = codes.get(id)
        if (!record || record.expiresAt <= at) return { status: 'missing' }
        if (record.consumedAt !== undefined) return { status: 'replayed', record }
        record.consumedAt = at
        codes.set(id, record)
        return { status: 'ok', record }
      },
    },
    refreshTokens: {
      async insert(record) {
        refreshTokens.set(record.id, record)
      },
      async get(id) {
        return refreshTokens.get(id)
      },
      async rotate(id, next, at): Promise<Consumed<RefreshTokenRecord>> {
        const record = refreshTokens.get(id)
        if (!record || record.expiresAt <= at) return { status: 'missing' }
        if (record.consumedAt !== undefined) return { status: 'replayed', record }
        record.consumedAt = at
        refreshTokens.set(id, record)
        refreshTokens.set(next.id, next)
        return { status: 'ok', record }
      },
    },
    sessions: {
      async put(record) {
        // The service rewrites a session for its own end-user: only a new id is looked up.
        if (!sessionIndex.has(record.sub, record.id)) {
          const previous = sessions.get(record.id)
          if (previous) sessionIndex.remove(previous.sub, record.id)
          sessionIndex.add(record.sub, record.id)
        }
        sessions.set(record.id, record)
      },
      async get(id) {
        return sessions.get(id)
      },
      async delete(id) {
        const previous = sessions.get(id)
        if (previous) sessionIndex.remove(previous.sub, id)
        sessions.delete(id)
      },
      async listBySub(sub) {
        return sessionIndex.list(sub)
      },
    },
    grants: {
      async put(record) {
        const previous = grants.get(record.id)
        if (!grantIndex.has(record.sub, record.id)) {
          if (previous) grantIndex.remove(previous.sub, record.id)
          grantIndex.add(record.sub, record.id)
        }
        // A put never lowers the last use: a touch since the caller read the record stays.
        const used = previous?.lastUsedAt
        const kept = used !== undefined && !(Number(record.lastUsedAt) >= used)
        grants.set(record.id, kept ? { ...record, lastUsedAt: used } : record)
      },
      async get(id, at) {
        const record = grants.get(id)
        return record && record.expiresAt > at ? record : undefined
      },
      async listBySub(sub, at) {
        return grantIndex.list(sub).filter((record) => record.expiresAt > at)
      },
      async delete(id) {
        const previous = grants.get(id)
        if (previous) grantIndex.remove(previous.sub, id)
        grants.delete(id)
      },
      async touch(id, at) {
        const record = grants.get(id)
        if (record && record.expiresAt > at && (record.lastUsedAt ?? 0) < at)
          grants.set(id, { ...record, lastUsedAt: at })
      },
    },
    interactions: {
      async put(record) {
        interactions.set(record.id, record)
      },
      async get(id) {
        return interactions.get(id)
      },
      async take(id) {
        const record = interactions.get(id)
        if (record) interactions.delete(id)
        return record
      },
    },
    revocations: {
      async revokeFamily(familyId, until) {
        const existing = families.get(familyId)
        families.set(familyId, { expiresAt: Math.max(until, existing?.expiresAt ?? 0) })
      },
      async isFamilyRevoked(familyId) {
        return families.has(familyId)
      },
      async revokeAccessToken(jti, until) {
        accessTokens.set(jti, { expiresAt: until })
      },
      async isAccessTokenRevoked(jti) {
        return accessTokens.has(jti)
      },
    },
    attempts: {
      async hit(key, window, at) {
        const counter = attempts.get(key)
        if (!counter || counter.expiresAt <= at) {
          attempts.set(key, { count: 1, expiresAt: at + window })
          return { count: 1, resetAt: at + window }
        }
        counter.count += 1
        attempts.set(key, counter)
        return { count: counter.count, resetAt: counter.expiresAt }
      },
      async get(key, at) {
        const counter = attempts.get(key)
        if (!counter || counter.expiresAt <= at) return undefined
        return { count: counter.count, resetAt: counter.expiresAt }
      },
      async take(key, limit, window, at) {
        // Check and count with no await between: atomic in one process.
        const counter = attempts.get(key)
        if (!counter || counter.expiresAt <= at) {
          attempts.set(key, { count: 1, expiresAt: at + window })
          return { taken: true, count: 1, resetAt: at + window }
        }
        if (counter.count >= limit) return { taken: false, count: counter.count, resetAt: counter.expiresAt }
        counter.count += 1
        attempts.set(key, counter)
        return { taken: true, count: counter.count, resetAt: counter.expiresAt }
      },
    },
    keys: {
      async list() {
        return [...keys.values()].map(clone)
      },
      async put(record) {
        keys.set(record.kid, clone(record))
      },
    },
    pushedRequests: {
      async put(record) {
        pushedRequests.set(record.id, record)
      },
      async take(id, at, clientId) {
        const record = pushedRequests.get(id)
        if (!record) return undefined
        if (clientId !== undefined && record.clientId !== clientId) return undefined
        pushedRequests.delete(id)
        return record.expiresAt > at ? record : undefined
      },
    },
    deviceCodes: {
      async insert(record, at) {
        const holder = userCodes.get(record.userCode)
        if (holder && holder.expiresAt > at) return false
        userCodes.set(record.userCode, { id: record.id, expiresAt: record.expiresAt })
        deviceCodes.set(record.id, { record, expiresAt: record.expiresAt + DEVICE_CODE_RETENTION })
        return true
      },
      async get(id) {
        return deviceCodes.get(id)?.record
      },
      async findByUserCode(userCode, at) {
        const holder = userCodes.get(userCode)
        if (!holder || holder.expiresAt <= at) return undefined
        const record = deviceCodes.get(holder.id)?.record
        return record && record.expiresAt > at ? record : undefined
      },
      async decide(id, decision, at) {
        return decidePending(deviceCodes, id, decision, at)
      },
      async poll(id, at): Promise<DevicePoll> {
        return pollPending(deviceCodes, id, at)
      },
    },
    cibaRequests: memoryCibaRequests(ciba),
    replays: {
      async use(key, expiresAt, at) {
        const existing = replays.get(key)
        if (existing && existing.expiresAt > at) return false
        replays.set(key, { expiresAt })
        return true
      },
    },
    sweep() {
      const maps = [
        codes,
        refreshTokens,
        sessions,
        grants,
        interactions,
        families,
        accessTokens,
        attempts,
        pushedRequests,
        replays,
        deviceCodes,
        userCodes,
        ciba.requests,
        ciba.approvals,
      ]
      for (const map of maps) map.sweep()
    },
  }
  memoryStores.add(store)
  return store
}

/**
 * Record ids (sessions, grants) by `sub` beside the packed map (which cannot be iterated). Ids of
 * deleted or expired records are dropped when their end-user's records are listed, and all of them
 * once the adds since the last sweep reach the number of records (at least 1,000): amortized O(1)
 * per add.
 */
function subjectIndex<T extends { sub: string; expiresAt: number }>(records: PackedRecordMap<T>) {
  const bySub = new Map<string, Set<string>>()
  let adds = 0
  function sweep(): void {
    adds = 0
    for (const [sub, ids] of bySub) {
      for (const id of ids) if (!records.has(id)) ids.delete(id)
      if (ids.size === 0) bySub.delete(sub)
    }
  }
  return {
    add(sub: string, id: string): void {
      const ids = bySub.get(sub) ?? new Set<string>()
      bySub.set(sub, ids.add(id))
      if (++adds >= Math.max(1000, records.size)) sweep()
    },
    has(sub: string, id: string): boolean {
      return bySub.get(sub)?.has(id) ?? false
    },
    remove(sub: string, id: string): void {
      const ids = bySub.get(sub)
      ids?.delete(id)
      if (ids?.size === 0) bySub.delete(sub)
    },
    list(sub: string): T[] {
      const ids = bySub.get(sub)
      const found: T[] = []
      for (const id of ids ?? []) {
        const record = records.get(id)
        if (record?.sub === sub) found.push(record)
        else ids?.delete(id)
      }
      if (ids?.size === 0) bySub.delete(sub)
      return found
    },
  }
}
