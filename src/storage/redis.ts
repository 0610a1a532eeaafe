/**
 * @module storage/redis
 * The Redis store on ioredis (attempts, device codes, CIBA, grants: redis_*.ts). One-time operations are
 * Lua scripts (atomic on the server); records carry their absolute `expiresAt`, which decides, while
 * native expiry (relative to the store's clock) removes what is dead. Keys live under a prefix.
 */
import type { RedisOptions } from 'ioredis'
import { importOptional } from '../optional_import.ts'
import { StoreUnavailableError } from '../errors.ts'
import { membershipBatch } from './membership_batch.ts'
import { type AttemptScripts, defineAttemptScripts, redisAttempts } from './redis_attempts.ts'
import { redisDeviceCodes } from './redis_device_codes.ts'
import { redisGrants } from './redis_grants.ts'
import { redisCibaRequests } from './redis_ciba.ts'
import type { ClientRecord, CodeRecord, Consumed, InteractionRecord, KeyRecord } from './types.ts'
import type { PushedRequestRecord, RefreshTokenRecord, SessionRecord, Store } from './types.ts'

const driver = await importOptional(() => import('ioredis'), 'ioredis', 'gatehouse-oidc/storage/redis')

export interface RedisStoreOptions {
  /** Connection URL, e.g. `redis://127.0.0.1:6379/0`. */
  url: string
  /** Key prefix. Default `gatehouse:`. */
  prefix?: string
  /** Milliseconds to wait for a connection. Default 2000. */
  connectTimeout?: number
  /**
   * Milliseconds the connection may stay silent while commands wait for their answers; then it is
   * dropped, the waiting commands fail with StoreUnavailableError (the service answers 503) and
   * the client reconnects (#27 item 10). One watchdog per connection (ioredis `socketTimeout`),
   * not a timer per command. Default 2000; 0 turns it off.
   */
  commandTimeout?: number
  now?: () => number
}

// Returns {0} missing, {1, record} consumed now, {2, record, consumedAt} consumed before.
const CONSUME = `
local rec = redis.call('HGET', KEYS[1], 'r')
if not rec then return {0} end
if tonumber(redis.call('HGET', KEYS[1], 'e')) <= tonumber(ARGV[1]) then return {0} end
local c = redis.call('HGET', KEYS[1], 'c')
if c then return {2, rec, c} end
redis.call('HSET', KEYS[1], 'c', ARGV[1])
return {1, rec}`

const ROTATE = `
local rec = redis.call('HGET', KEYS[1], 'r')
if not rec then return {0} end
if tonumber(redis.call('HGET', KEYS[1], 'e')) <= tonumber(ARGV[1]) then return {0} end
local c = redis.call('HGET', KEYS[1], 'c')
if c then return {2, rec, c} end
redis.call('HSET', KEYS[1], 'c', ARGV[1])
redis.call('HSET', KEYS[2], 'r', ARGV[2], 'e', ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {1, rec}`

// Stores a one-time record {r, e} with its native expiry: one command, atomic (ARGV record, end, ttl).
const PUT_ONCE = `
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'e', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1`

// Sets a marker holding its absolute end (epoch s); the end only ever grows.
const EXTEND = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cur then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end
return 1`

// Records a one-time identifier as a marker holding its end (ARGV end, now, ttl) unless a live
// one exists: 1 when this call recorded it. A marker whose end passed is taken over even before
// its native expiry removes it (the end decides, as everywhere in this store).
const USE_ONCE = `
if tonumber(redis.call('GET', KEYS[1]) or '0') > tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
return 1`

const CLIENT_INSERT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then redis.call('SADD', KEYS[2], ARGV[2]) return 1 end
return 0`

// Compare-and-set of a client record: replaces it only while it is still the expected JSON.
const CLIENT_SWAP = `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1`

// Takes a pushed request once (as GETDEL) when it was pushed by the client ARGV[1]: another
// client's request stays for its owner.
const TAKE_PUSHED = `
local rec = redis.call('GET', KEYS[1])
if not rec then return false end
if cjson.decode(rec)['clientId'] ~= ARGV[1] then return false end
redis.call('DEL', KEYS[1])
return rec`

type ScriptResult = [0] | [1, string] | [2, string, string]

interface ScriptedRedis extends AttemptScripts {
  gatehouseConsume(key: string, at: number): Promise<ScriptResult>
  gatehouseRotate(
    key: string,
    next: string,
    at: number,
    record: string,
    expiresAt: number,
    ttl: number,
  ): Promise<ScriptResult>
  gatehousePutOnce(key: string, record: string, expiresAt: number, ttl: number): Promise<number>
  gatehouseExtend(key: string, until: number, ttl: number): Promise<number>
  gatehouseUseOnce(key: string, expiresAt: number, at: number, ttl: number): Promise<number>
  gatehouseClientInsert(key: string, set: string, record: string, id: string): Promise<number>
  gatehouseClientSwap(key: string, record: string, expected: string): Promise<number>
  gatehouseTakePushed(key: string, clientId: string): Promise<string | null>
}

/** Creates the Redis store; call `connect()` before use to fail fast when Redis is down. */
export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const prefix = options.prefix ?? 'gatehouse:'
  const now = options.now ?? (() => Math.floor(Date.now() / 1000))
  const redisOptions: RedisOptions = {
    lazyConnect: true,
    connectTimeout: options.connectTimeout ?? 2000,
    // Fail fast instead of queueing while disconnected: the handler answers 503.
    enableOfflineQueue: false,
    // A command caught by a dropped connection fails (503) instead of waiting for the next one:
    // no request outlives the watchdog below, and a one-time script is never sent twice.
    maxRetriesPerRequest: 0,
    // A silent connection (a network partition) is dropped instead of holding commands forever.
    ...((options.commandTimeout ?? 2000) > 0 ? { socketTimeout: options.commandTimeout ?? 2000 } : {}),
    // Back within a second of Redis (the default waits up to 5 s between attempts).
    retryStrategy: (times) => Math.min(times * 100, 1000),
  }
  const redis = new driver.Redis(options.url, redisOptions) as ScriptedRedis
  redis.on('error', () => {}) // surfaced per command as StoreUnavailableError
  redis.defineCommand('gatehouseConsume', { numberOfKeys: 1, lua: CONSUME })
  redis.defineCommand('gatehouseRotate', { numberOfKeys: 2, lua: ROTATE })
  redis.defineCommand('gatehousePutOnce', { numberOfKeys: 1, lua: PUT_ONCE })
  redis.defineCommand('gatehouseExtend', { numberOfKeys: 1, lua: EXTEND })
  redis.defineCommand('gatehouseUseOnce', { numberOfKeys: 1, lua: USE_ONCE })
  redis.defineCommand('gatehouseClientInsert', { numberOfKeys: 2, lua: CLIENT_INSERT })
  redis.defineCommand('gatehouseClientSwap', { numberOfKeys: 1, lua: CLIENT_SWAP })
  defineAttemptScripts(redis)
  redis.defineCommand('gatehouseTakePushed', { numberOfKeys: 1, lua: TAKE_PUSHED })

  const k = (kind: string, id: string) => `${prefix}${kind}:${id}`
  const ttl = (expiresAt: number) => Math.max(1, expiresAt - now())

  async function run<R>(operation: string, fn: () => Promise<R>): Promise<R> {
    try {
      return await fn()
    } catch (err) {
      if (err instanceof SyntaxError || err instanceof TypeError) throw err
      throw new StoreUnavailableError(`redis unavailable during ${operation}`, { cause: err })
    }
  }

  function consumed<T extends { expiresAt: number }>(result: ScriptResult, at: number): Consumed<T> {
    if (result[0] === 0) return { status: 'missing' }
    const record = JSON.parse(result[1]) as T
    if (result[0] === 1) return { status: 'ok', record: { ...record, consumedAt: at } }
    return { status: 'replayed', record: { ...record, consumedAt: Number(result[2]) } }
  }

  async function getJson<T extends { expiresAt: number }>(key: string): Promise<T | undefined> {
    const value = await redis.get(key)
    if (value === null) return undefined
    const record = JSON.parse(value) as T
    return record.expiresAt > now() ? record : undefined
  }

  /** A one-time record: a hash of the record (`r`), its end (`e`) and later its use (`c`). */
  async function putOnce(key: string, record: { expiresAt: number }): Promise<void> {
    await redis.gatehousePutOnce(key, JSON.stringify(record), record.expiresAt, ttl(record.expiresAt))
  }

  /** A one-time record with its `consumedAt`, or undefined when unknown or expired. */
  async function getOnce<T>(key: string): Promise<T | undefined> {
    const [rec, expiresAt, consumedAt] = await redis.hmget(key, 'r', 'e', 'c')
    if (rec == null || Number(expiresAt) <= now()) return undefined
    const record = JSON.parse(rec) as T
    return consumedAt == null ? record : { ...record, consumedAt: Number(consumedAt) }
  }

  // Revocation checks (every introspection and refresh) made together or while others are in
  // flight share one MGET (#20): introspection's token and grant checks are one command.
  const isMarked = membershipBatch(async (keys) => {
    const values = await redis.mget(keys)
    const at = now()
    return keys.filter((_, i) => {
      const until = values[i]
      return until !== null && until !== undefined && Number(until) > at
    })
  })

  return {
    clients: {
      get: (clientId) =>
        run('clients.get', async () => {
          const value = await redis.get(k('client', clientId))
          return value === null ? undefined : (JSON.parse(value) as ClientRecord)
        }),
      insert: (record) =>
        run('clients.insert', async () => {
          const inserted = await redis.gatehouseClientInsert(
            k('client', record.clientId),
            `${prefix}clients`,
            JSON.stringify(record),
            record.clientId,
          )
          return inserted === 1
        }),
      update: (record, expected) =>
        run('clients.update', async () => {
          const key = k('client', record.clientId)
          if (!expected) return (await redis.set(key, JSON.stringify(record), 'XX')) === 'OK'
          return (await redis.gatehouseClientSwap(key, JSON.stringify(record), JSON.stringify(expected))) === 1
        }),
      delete: (clientId) =>
        run('clients.delete', async () => {
          const [[, deleted]] = (await redis
            .multi()
            .del(k('client', clientId))
            .srem(`${prefix}clients`, clientId)
            .exec()) as [[unknown, number]]
          return deleted === 1
        }),
      list: () =>
        run('clients.list', async () => {
          const ids = (await redis.smembers(`${prefix}clients`)).sort()
          if (ids.length === 0) return []
          const values = await redis.mget(ids.map((id) => k('client', id)))
          return values.filter((v): v is string => v !== null).map((v) => JSON.parse(v) as ClientRecord)
        }),
    },
    codes: {
      insert: (record) => run('codes.insert', () => putOnce(k('code', record.id), record)),
      get: (id) => run('codes.get', () => getOnce<CodeRecord>(k('code', id))),
      consume: (id, at) =>
        run('codes.consume', async () => consumed<CodeRecord>(await redis.gatehouseConsume(k('code', id), at), at)),
    },
    refreshTokens: {
      insert: (record) => run('refreshTokens.insert', () => putOnce(k('rt', record.id), record)),
      get: (id) => run('refreshTokens.get', () => getOnce<RefreshTokenRecord>(k('rt', id))),
      rotate: (id, next, at) =>
        run('refreshTokens.rotate', async () =>
          consumed<RefreshTokenRecord>(
            await redis.gatehouseRotate(
              k('rt', id),
              k('rt', next.id),
              at,
              JSON.stringify(next),
              next.expiresAt,
              ttl(next.expiresAt),
            ),
            at,
          ),
        ),
    },
    sessions: {
      // Beside each session, its id in the set of its end-user's (`sessions-of:<sub>`), which lives
      // as long as the newest session put; ids of ended sessions are dropped when listed.
      put: (record) =>
        run('sessions.put', async () => {
          const index = k('sessions-of', record.sub)
          await redis
            .multi()
            .set(k('session', record.id), JSON.stringify(record), 'EX', ttl(record.expiresAt))
            .sadd(index, record.id)
            .expire(index, ttl(record.expiresAt))
            .exec()
        }),
      get: (id) => run('sessions.get', () => getJson<SessionRecord>(k('session', id))),
      delete: (id) => run('sessions.delete', async () => void (await redis.del(k('session', id)))),
      listBySub: (sub) =>
        run('sessions.listBySub', async () => {
          const index = k('sessions-of', sub)
          const ids = await redis.smembers(index)
          if (ids.length === 0) return []
          const records = (await redis.mget(ids.map((id) => k('session', id)))).map((value) =>
            value === null ? undefined : (JSON.parse(value) as SessionRecord),
          )
          const live = (r: SessionRecord | undefined): r is SessionRecord => r?.sub === sub && r.expiresAt > now()
          const stale = ids.filter((_, i) => !live(records[i]))
          if (stale.length > 0) await redis.srem(index, ...stale)
          return records.filter(live)
        }),
    },
    grants: redisGrants(redis, k, ttl, run),
    interactions: {
      put: (record) =>
        run(
          'interactions.put',
          async () =>
            void (await redis.set(k('interaction', record.id), JSON.stringify(record), 'EX', ttl(record.expiresAt))),
        ),
      get: (id) => run('interactions.get', () => getJson<InteractionRecord>(k('interaction', id))),
      take: (id) =>
        run('interactions.take', async () => {
          const value = await redis.getdel(k('interaction', id))
          if (value === null) return undefined
          const record = JSON.parse(value) as InteractionRecord
          return record.expiresAt > now() ? record : undefined
        }),
    },
    revocations: {
      revokeFamily: (familyId, until) =>
        run(
          'revocations.revokeFamily',
          async () => void (await redis.gatehouseExtend(k('revoked-family', familyId), until, ttl(until))),
        ),
      isFamilyRevoked: (familyId) => run('revocations.isFamilyRevoked', () => isMarked(k('revoked-family', familyId))),
      revokeAccessToken: (jti, until) =>
        run(
          'revocations.revokeAccessToken',
          async () => void (await redis.gatehouseExtend(k('revoked-at', jti), until, ttl(until))),
        ),
      isAccessTokenRevoked: (jti) => run('revocations.isAccessTokenRevoked', () => isMarked(k('revoked-at', jti))),
    },
    attempts: redisAttempts(redis, (key) => k('attempt', key), run),
    keys: {
      list: () =>
        run('keys.list', async () => {
          const all = await redis.hgetall(`${prefix}keys`)
          return Object.keys(all)
            .sort()
            .map((kid) => JSON.parse(all[kid] as string) as KeyRecord)
        }),
      put: (record) =>
        run('keys.put', async () => void (await redis.hset(`${prefix}keys`, record.kid, JSON.stringify(record)))),
    },
    pushedRequests: {
      put: (record) =>
        run(
          'pushedRequests.put',
          async () => void (await redis.set(k('par', record.id), JSON.stringify(record), 'EX', ttl(record.expiresAt))),
        ),
      take: (id, at, clientId) =>
        run('pushedRequests.take', async () => {
          // RFC 9126 §4: a request_uri is one-time use. GETDEL hands the value to one caller;
          // with clientId, a script that leaves another client's request in place (§2.2).
          const value =
            clientId === undefined
              ? await redis.getdel(k('par', id))
              : await redis.gatehouseTakePushed(k('par', id), clientId)
          if (value === null) return undefined
          const record = JSON.parse(value) as PushedRequestRecord
          return record.expiresAt > at ? record : undefined
        }),
    },
    deviceCodes: redisDeviceCodes(redis, k, now, run),
    cibaRequests: redisCibaRequests(redis, k, now, run),
    replays: {
      use: (key, expiresAt, at) =>
        run(
          'replays.use',
          async () => (await redis.gatehouseUseOnce(k('replay', key), expiresAt, at, ttl(expiresAt))) === 1,
        ),
    },
    async connect() {
      if (redis.status === 'ready') return
      try {
        await redis.connect()
      } catch (cause) {
        const where = new URL(options.url)
        throw new StoreUnavailableError(
          `cannot connect to Redis at ${where.hostname}:${where.port || 6379}: ${(cause as Error).message}`,
          { cause },
        )
      }
    },
    async close() {
      redis.disconnect()
    },
    async clear() {
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
        cursor = next
        if (keys.length > 0) await redis.del(...keys)
      } while (cursor !== '0')
    },
  }
}

/** The Redis store: the storage contract plus its connection's life cycle. */
export interface RedisStore extends Store {
  /** Connects now; rejects with a StoreUnavailableError naming the host when Redis cannot be reached. */
  connect(): Promise<void>
  close(): Promise<void>
  /** Deletes every key under the prefix (tests and tear-down). */
  clear(): Promise<void>
}
