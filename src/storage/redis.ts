/**
 * @module storage/redis
 * The Redis store on ioredis (attempts, device codes, CIBA, grants: redis_*.ts). One-time operations are
 * Lua scripts (atomic on the server); records carry their absolute `expiresAt`, which decides, while
 * native expiry (relative to the store's clock) removes what is dead. Keys live under a prefix.
 *
 * One node (`url`), a Sentinel-managed primary (`sentinel`, redis_sentinel.ts: one primary, so the
 * single-node layout) or a Redis Cluster (`cluster`, redis_cluster.ts). Redis Cluster runs a script or
 * a MULTI only on keys of one hash slot, so the cluster layout is (the single-node key names are
 * unchanged, so existing data stays readable; the cluster adds hash tags only where needed):
 * - One-key operations keep their names (`code:<id>`, `device:<id>`, `par:<id>`, `attempt:<key>`,
 *   `revoked-family:<id>`, …): hashed whole, they spread evenly over the 16384 slots.
 * - Refresh rotation (old and next token: one script, one winner): a token lives under
 *   `rt:{<familyId>}<id>`, in the slot of its family, found from its id by the pointer
 *   `rt-family:<id>` (redis_refresh.ts): one more round trip per refresh, atomic as on one node.
 * - Redemption in one step (`codes.redeem`, `refreshTokens.rotateUnlessRevoked`, #44 item 2:
 *   redis_redeem.ts): one node only; a cluster store has neither, and the grants take their steps.
 * - Clients: no index set on a cluster (it would sit in one slot); `list` scans every master.
 * - Sessions, grants (record + end-user index) and CIBA requests (record + approval link): record
 *   first, then the index or link; a failure between leaves a record nothing names, of an operation
 *   that failed (503). None of them is a one-time step.
 * - Device codes: claiming the user code is the one atomic step (its slot), then the record (its
 *   slot); a failure between leaves the user code held, pointing to no record, until its end.
 * - Many keys at once (revocation checks, listings): one GET per key; whole-store walks (`clear`,
 *   client listing) SCAN every master (`cluster.nodes('master')`).
 */
import type { Redis, RedisOptions } from 'ioredis'
import { importOptional } from '../optional_import.ts'
import { StoreUnavailableError } from '../errors.ts'
import { membershipBatch } from './membership_batch.ts'
import { type AttemptScripts, defineAttemptScripts, redisAttempts } from './redis_attempts.ts'
import { redisDeviceCodes } from './redis_device_codes.ts'
import { redisGrants } from './redis_grants.ts'
import { clearKeys, redisClients } from './redis_clients.ts'
import { isCluster, type RedisClient, readMany } from './redis_cluster.ts'
import { createRedisClient, describeConnection, type RedisConnectionOptions } from './redis_connection.ts'
import { clusterGrantClient } from './redis_grants_cluster.ts'
import { redisRefreshTokens, type ScriptResult } from './redis_refresh.ts'
import { redisRedemption } from './redis_redeem.ts'
import { redisSessions } from './redis_sessions.ts'
import { WAIT_CONNECTIONS, replicaWait, withReplicaWait } from './redis_wait.ts'
import { redisCibaRequests } from './redis_ciba.ts'
import type { CodeRecord, Consumed, InteractionRecord, KeyRecord, PushedRequestRecord, Store } from './types.ts'

const driver = await importOptional(() => import('ioredis'), 'ioredis', 'gatehouse-oidc/storage/redis')

/** The Redis store's options: where it connects (`url`, `cluster` or `sentinel`) and how it behaves. */
export type RedisStoreOptions = RedisConnectionOptions & RedisBehaviour

interface RedisBehaviour {
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
  /**
   * Replicas that must acknowledge each write that must survive a failover (one-time steps, codes,
   * refresh tokens, revocations: redis_wait.ts) before it counts: Redis `WAIT`, in the write's
   * round trip. Fewer within `waitTimeout` fail the operation (503). Default 0 (asynchronous
   * replication alone: a failover may lose the last writes, see docs/storage-and-deployment.md).
   */
  waitReplicas?: number
  /** Milliseconds WAIT may take before the write fails. Default 250. */
  waitTimeout?: number
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

// Takes a pushed request once (as GETDEL) when it was pushed by the client ARGV[1]: another
// client's request stays for its owner.
const TAKE_PUSHED = `
local rec = redis.call('GET', KEYS[1])
if not rec then return false end
if cjson.decode(rec)['clientId'] ~= ARGV[1] then return false end
redis.call('DEL', KEYS[1])
return rec`

interface ScriptedRedis extends AttemptScripts {
  gatehouseConsume(key: string, at: number): Promise<ScriptResult>
  gatehousePutOnce(key: string, record: string, expiresAt: number, ttl: number): Promise<number>
  gatehouseExtend(key: string, until: number, ttl: number): Promise<number>
  gatehouseUseOnce(key: string, expiresAt: number, at: number, ttl: number): Promise<number>
  gatehouseTakePushed(key: string, clientId: string): Promise<string | null>
}

/** The options of every connection of the store: its failure policy (503 rather than a wait). */
function nodeOptions(options: RedisBehaviour): RedisOptions {
  return {
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
}

/** Creates the Redis store; call `connect()` before use to fail fast when Redis is down. */
export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const prefix = options.prefix ?? 'gatehouse:'
  const now = options.now ?? (() => Math.floor(Date.now() / 1000))
  const redisOptions = nodeOptions(options)
  const wait = replicaWait(options)
  const client = createRedisClient(driver, options, redisOptions)
  // With waitReplicas, the writes that must survive a failover go with WAIT over connections of their own.
  const waiters = wait
    ? Array.from({ length: WAIT_CONNECTIONS }, () => createRedisClient(driver, options, redisOptions))
    : []
  const connections = [client, ...waiters]
  // The commands the store uses take the same arguments on a Cluster (routed by their first key).
  const redis = client as unknown as ScriptedRedis
  // The same client; with waitReplicas, its writes that must survive a failover wait for replicas.
  const durable = (wait ? withReplicaWait(client, waiters, wait) : client) as unknown as ScriptedRedis
  for (const connection of connections) connection.on('error', () => {}) // surfaced per command as StoreUnavailableError
  redis.defineCommand('gatehouseConsume', { numberOfKeys: 1, lua: CONSUME })
  redis.defineCommand('gatehousePutOnce', { numberOfKeys: 1, lua: PUT_ONCE })
  redis.defineCommand('gatehouseExtend', { numberOfKeys: 1, lua: EXTEND })
  redis.defineCommand('gatehouseUseOnce', { numberOfKeys: 1, lua: USE_ONCE })
  defineAttemptScripts(redis)
  redis.defineCommand('gatehouseTakePushed', { numberOfKeys: 1, lua: TAKE_PUSHED })

  const k = (kind: string, id: string) => `${prefix}${kind}:${id}`
  const ttl = (expiresAt: number) => Math.max(1, expiresAt - now())

  async function run<R>(operation: string, fn: () => Promise<R>): Promise<R> {
    try {
      return await fn()
    } catch (err) {
      if (err instanceof SyntaxError || err instanceof TypeError) throw err
      // On a cluster, a failure may mean a master was lost: read the slot map again (one read at a
      // time however many commands failed), so a promoted replica serves the next request.
      if (isCluster(client)) client.refreshSlotsCache()
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
    await durable.gatehousePutOnce(key, JSON.stringify(record), record.expiresAt, ttl(record.expiresAt))
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
    const values = await readMany(client, keys)
    const at = now()
    return keys.filter((_, i) => {
      const until = values[i]
      return until !== null && until !== undefined && Number(until) > at
    })
  })

  // #44 item 2: a code redemption and a rotation in one script each; one node only (redis_redeem.ts).
  const redemption = isCluster(client)
    ? undefined
    : redisRedemption({ redis: durable as unknown as Redis, k, ttl, run })

  return {
    clients: redisClients(durable, prefix, run),
    codes: {
      insert: (record) => run('codes.insert', () => putOnce(k('code', record.id), record)),
      get: (id) => run('codes.get', () => getOnce<CodeRecord>(k('code', id))),
      consume: (id, at) =>
        run('codes.consume', async () => consumed<CodeRecord>(await durable.gatehouseConsume(k('code', id), at), at)),
      ...(redemption ? { redeem: redemption.redeem } : {}),
    },
    refreshTokens: {
      ...redisRefreshTokens({ redis: durable as unknown as RedisClient, k, ttl, run, putOnce, getOnce, consumed }),
      ...(redemption ? { rotateUnlessRevoked: redemption.rotateUnlessRevoked } : {}),
    },
    sessions: redisSessions(durable, k, ttl, now, run),
    grants: redisGrants(isCluster(client) ? clusterGrantClient(client) : redis, k, ttl, run),
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
          async () => void (await durable.gatehouseExtend(k('revoked-family', familyId), until, ttl(until))),
        ),
      isFamilyRevoked: (familyId) => run('revocations.isFamilyRevoked', () => isMarked(k('revoked-family', familyId))),
      revokeAccessToken: (jti, until) =>
        run(
          'revocations.revokeAccessToken',
          async () => void (await durable.gatehouseExtend(k('revoked-at', jti), until, ttl(until))),
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
              ? await durable.getdel(k('par', id))
              : await durable.gatehouseTakePushed(k('par', id), clientId)
          if (value === null) return undefined
          const record = JSON.parse(value) as PushedRequestRecord
          return record.expiresAt > at ? record : undefined
        }),
    },
    deviceCodes: redisDeviceCodes(durable, k, now, run),
    cibaRequests: redisCibaRequests(durable, k, now, run),
    replays: {
      use: (key, expiresAt, at) =>
        run(
          'replays.use',
          async () => (await durable.gatehouseUseOnce(k('replay', key), expiresAt, at, ttl(expiresAt))) === 1,
        ),
    },
    async connect() {
      try {
        await Promise.all(connections.map((c) => (c.status === 'ready' ? undefined : c.connect())))
      } catch (cause) {
        throw new StoreUnavailableError(
          `cannot connect to Redis at ${describeConnection(options)}: ${(cause as Error).message}`,
          {
            cause,
          },
        )
      }
    },
    async close() {
      for (const connection of connections) connection.disconnect()
    },
    async clear() {
      await clearKeys(redis, prefix)
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
