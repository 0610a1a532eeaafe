/**
 * @module storage/memory
 * The in-memory reference store, the embedded default. Single process only: state is lost on exit.
 * Atomicity comes from doing each check-and-set with no `await` in between.
 */
import type {
  ClientRecord,
  CodeRecord,
  Consumed,
  InteractionRecord,
  KeyRecord,
  RefreshTokenRecord,
  SessionRecord,
  Store,
} from './types.ts'

export interface MemoryStoreOptions {
  /** Clock in epoch seconds (tests inject one). */
  now?: () => number
  /** Expired entries are swept after this many writes at least (or the map's size, if larger). Default 1000. */
  sweepEvery?: number
}

interface Expiring {
  expiresAt: number
}

/** A Map whose entries vanish once expired; swept every `sweepEvery` writes. */
class ExpiringMap<V extends Expiring> {
  readonly #entries = new Map<string, V>()
  readonly #now: () => number
  readonly #sweepEvery: number
  #writes = 0

  constructor(now: () => number, sweepEvery: number) {
    this.#now = now
    this.#sweepEvery = sweepEvery
  }

  get(key: string): V | undefined {
    const value = this.#entries.get(key)
    if (value === undefined) return undefined
    if (value.expiresAt <= this.#now()) {
      this.#entries.delete(key)
      return undefined
    }
    return value
  }

  set(key: string, value: V): void {
    this.#entries.set(key, value)
    // Sweep after as many writes as there are entries (at least sweepEvery): a full scan then costs
    // O(1) per write, however large the map grows.
    if (++this.#writes >= Math.max(this.#sweepEvery, this.#entries.size)) this.sweep()
  }

  delete(key: string): boolean {
    return this.#entries.delete(key)
  }

  get size(): number {
    return this.#entries.size
  }

  sweep(): void {
    this.#writes = 0
    const now = this.#now()
    for (const [key, value] of this.#entries) if (value.expiresAt <= now) this.#entries.delete(key)
  }
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

/** Creates the in-memory store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store & { sweep(): void } {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000))
  const sweepEvery = options.sweepEvery ?? 1000
  const clients = new Map<string, ClientRecord>()
  const codes = new ExpiringMap<CodeRecord>(now, sweepEvery)
  const refreshTokens = new ExpiringMap<RefreshTokenRecord>(now, sweepEvery)
  const sessions = new ExpiringMap<SessionRecord>(now, sweepEvery)
  const interactions = new ExpiringMap<InteractionRecord>(now, sweepEvery)
  const families = new ExpiringMap<{ expiresAt: number }>(now, sweepEvery)
  const accessTokens = new ExpiringMap<{ expiresAt: number }>(now, sweepEvery)
  const keys = new Map<string, KeyRecord>()
  const attempts = new ExpiringMap<{ count: number; expiresAt: number }>(now, sweepEvery)

  return {
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
      async update(record) {
        if (!clients.has(record.clientId)) return false
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
        codes.set(record.id, clone(record))
      },
      async consume(id, at): Promise<Consumed<CodeRecord>> {
        const record = codes.get(id)
        if (!record || record.expiresAt <= at) return { status: 'missing' }
        if (record.consumedAt !== undefined) return { status: 'replayed', record: clone(record) }
        record.consumedAt = at
        return { status: 'ok', record: clone(record) }
      },
    },
    refreshTokens: {
      async insert(record) {
        refreshTokens.set(record.id, clone(record))
      },
      async get(id) {
        const record = refreshTokens.get(id)
        return record && clone(record)
      },
      async rotate(id, next, at): Promise<Consumed<RefreshTokenRecord>> {
        const record = refreshTokens.get(id)
        if (!record || record.expiresAt <= at) return { status: 'missing' }
        if (record.consumedAt !== undefined) return { status: 'replayed', record: clone(record) }
        record.consumedAt = at
        refreshTokens.set(next.id, clone(next))
        return { status: 'ok', record: clone(record) }
      },
    },
    sessions: {
      async put(record) {
        sessions.set(record.id, clone(record))
      },
      async get(id) {
        const record = sessions.get(id)
        return record && clone(record)
      },
      async delete(id) {
        sessions.delete(id)
      },
    },
    interactions: {
      async put(record) {
        interactions.set(record.id, clone(record))
      },
      async get(id) {
        const record = interactions.get(id)
        return record && clone(record)
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
        return families.get(familyId) !== undefined
      },
      async revokeAccessToken(jti, until) {
        accessTokens.set(jti, { expiresAt: until })
      },
      async isAccessTokenRevoked(jti) {
        return accessTokens.get(jti) !== undefined
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
        return { count: counter.count, resetAt: counter.expiresAt }
      },
      async get(key, at) {
        const counter = attempts.get(key)
        if (!counter || counter.expiresAt <= at) return undefined
        return { count: counter.count, resetAt: counter.expiresAt }
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
    sweep() {
      for (const map of [codes, refreshTokens, sessions, interactions, families, accessTokens, attempts]) map.sweep()
    },
  }
}
