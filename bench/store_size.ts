/**
 * Store size (scenario `store_size`): the bytes one session or one refresh token takes in a store,
 * as the store itself reports its size. One process per cell (bench/run.ts, run with --expose-gc):
 * open the store in a bench-only place, measure, seed N records through the Store API
 * (`refreshTokens.insert` / `sessions.put`, up to 256 writes in flight: postgres.js pipelines them
 * over its pool, ioredis over its connection), measure again, clean up.
 *
 * - memory: this process's RSS after forced GCs (second measure: V8 heap used);
 * - postgres: `pg_total_relation_size` (table + indexes + TOAST) of the record's table, schema
 *   `gatehouse_bench_size`, after `VACUUM ANALYZE`; the schema is dropped afterwards;
 * - redis: `INFO memory` used_memory (second measure: the mean `MEMORY USAGE` of 1,000 sampled
 *   keys); the prefix `gatehouse-bench-size:` is deleted afterwards. used_memory is the whole
 *   server's: another client writing meanwhile shows up in it.
 *
 * Input: SIZE_SPEC (JSON, `SizeSpec`). Output: `RESULT {json}` (`SizeResult`).
 */
import { createHash } from 'node:crypto'
import type { RefreshTokenRecord, SessionRecord, Store } from '../src/index.ts'
import { CODE_SCOPE, WEB_CLIENT, seedTokenValue } from './fixtures.ts'

export interface SizeSpec {
  store: 'memory' | 'postgres' | 'redis'
  record: 'refresh_token' | 'session'
  count: number
}

export interface SizeResult {
  count: number
  measure: string
  bytesBefore: number
  bytesAfter: number
  bytesPerRecord: number
  second?: { name: string; bytesPerRecord: number }
  method: string
  seedSeconds: number
  cleanupSeconds: number
}

const spec = JSON.parse(process.env.SIZE_SPEC ?? '') as SizeSpec
const SCHEMA = 'gatehouse_bench_size'
const PREFIX = 'gatehouse-bench-size:'
const key = (value: string) => createHash('sha256').update(value).digest('base64url')
const now = Math.floor(Date.now() / 1000)

/** Record number i, shaped as Gatehouse issues them (43-character ids, like real ones). */
function refreshToken(i: number): RefreshTokenRecord {
  return {
    id: key(seedTokenValue(i)),
    familyId: key(`family-${i}`),
    clientId: WEB_CLIENT.id,
    sub: `user-${String(i).padStart(8, '0')}`,
    scope: CODE_SCOPE,
    sid: key(`sid-${i}`),
    authTime: now,
    amr: ['pwd'],
    issuedAt: now,
    expiresAt: now + 1_209_600,
    familyExpiresAt: now + 7_776_000,
  }
}
function session(i: number): SessionRecord {
  return {
    id: key(`session-${i}`),
    sid: key(`sid-${i}`),
    sub: `user-${String(i).padStart(8, '0')}`,
    authTime: now,
    amr: ['pwd'],
    clients: [WEB_CLIENT.id],
    consents: {},
    expiresAt: now + 1_209_600,
  }
}

function rss(): { rss: number; heap: number } {
  const gc = (globalThis as { gc?: () => void }).gc
  for (let i = 0; i < 3; i++) gc?.()
  const { rss, heapUsed } = process.memoryUsage()
  return { rss, heap: heapUsed }
}

async function open(): Promise<{
  store: Store
  size: () => Promise<number>
  second?: () => Promise<number>
  cleanup: () => Promise<void>
}> {
  if (spec.store === 'memory') {
    const { createMemoryStore } = await import('../src/index.ts')
    const store = createMemoryStore()
    return { store, size: async () => rss().rss, second: async () => rss().heap, cleanup: async () => {} }
  }
  if (spec.store === 'postgres') {
    const url = process.env.DATABASE_URL as string
    const { default: postgres } = await import('postgres')
    const admin = postgres(url, { max: 1, onnotice: () => {} })
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
    const { createPostgresStore } = await import('../src/storage/postgres.ts')
    const store = createPostgresStore({ url, schema: SCHEMA })
    await store.connect()
    await store.migrate()
    const table = spec.record === 'session' ? 'gatehouse_sessions' : 'gatehouse_refresh_tokens'
    return {
      store,
      size: async () => {
        await admin.unsafe(`VACUUM ANALYZE ${SCHEMA}.${table}`)
        const [row] = await admin.unsafe(`SELECT pg_total_relation_size('${SCHEMA}.${table}') AS bytes`)
        return Number(row?.bytes)
      },
      cleanup: async () => {
        await store.close()
        await admin.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
        await admin.end()
      },
    }
  }
  const url = process.env.REDIS_URL as string
  const { createRedisStore } = await import('../src/storage/redis.ts')
  const { Redis } = await import('ioredis')
  const admin = new Redis(url)
  const store = createRedisStore({ url, prefix: PREFIX })
  await store.connect()
  await store.clear()
  const kind = spec.record === 'session' ? 'session' : 'rt'
  const id = (i: number) => (spec.record === 'session' ? session(i) : refreshToken(i)).id
  return {
    store,
    size: async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]),
    second: async () => {
      const step = Math.max(1, Math.floor(spec.count / 1000))
      let sum = 0
      let n = 0
      for (let i = 0; i < spec.count; i += step) {
        sum += Number(await admin.memory('USAGE', `${PREFIX}${kind}:${id(i)}`, 'SAMPLES', '0'))
        n++
      }
      return n ? sum / n : Number.NaN
    },
    cleanup: async () => {
      await store.clear()
      await store.close?.()
      admin.disconnect()
    },
  }
}

const { store, size, second, cleanup } = await open()
const before = await size()
const secondBefore = spec.store === 'memory' ? await second?.() : 0
const started = performance.now()
let next = 0
await Promise.all(
  Array.from({ length: 256 }, async () => {
    while (next < spec.count) {
      const i = next++
      if (spec.record === 'session') await store.sessions.put(session(i))
      else await store.refreshTokens.insert(refreshToken(i))
    }
  }),
)
const seedSeconds = (performance.now() - started) / 1000
const after = await size()
const secondAfter = await second?.()
const cleanupStarted = performance.now()
await cleanup()
const result: SizeResult = {
  count: spec.count,
  measure: {
    memory: 'process RSS (after GC)',
    postgres: 'pg_total_relation_size',
    redis: 'INFO used_memory',
  }[spec.store],
  bytesBefore: before,
  bytesAfter: after,
  bytesPerRecord: (after - before) / spec.count,
  ...(secondAfter !== undefined
    ? {
        second: {
          name: spec.store === 'memory' ? 'V8 heap used' : 'MEMORY USAGE per key',
          bytesPerRecord: spec.store === 'memory' ? (secondAfter - (secondBefore ?? 0)) / spec.count : secondAfter,
        },
      }
    : {}),
  method: 'Store API, 256 writes in flight',
  seedSeconds,
  cleanupSeconds: (performance.now() - cleanupStarted) / 1000,
}
console.log(`RESULT ${JSON.stringify(result)}`)
process.exit(0)
