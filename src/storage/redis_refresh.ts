/**
 * @module storage/redis_refresh
 * The refresh tokens of the Redis store (`Store.refreshTokens`). A token is a one-time hash (`r`
 * record, `e` end, `c` consumedAt); `rotate` is one Lua script that consumes the token and stores
 * the next one, so at most one caller wins a rotation.
 *
 * On one node a token lives under `rt:<id>`. On a Redis Cluster both keys of a rotation must share
 * a hash slot, yet a token arrives as its id alone: a token lives under `rt:{<familyId>}<id>` (the
 * slot of its family) and `rt-family:<id>` (the id's own slot) names that family. `get` and
 * `rotate` read that pointer first (one more round trip); `rotate` also writes the next token's
 * pointer *before* the script, so the script stays the one atomic step: a failure before it
 * consumes nothing (the client may retry), a pointer left by a failed rotation leads to no record
 * (`missing`) and expires with the token it would have named.
 */
import type { Redis } from 'ioredis'
import { hashTag, isCluster, type RedisClient } from './redis_cluster.ts'
import type { Consumed, RefreshTokenRecord, Store } from './types.ts'

/** Result of the consume and rotate scripts: {0} missing, {1, record} now, {2, record, consumedAt} before. */
export type ScriptResult = [0] | [1, string] | [2, string, string]

export const ROTATE = `
local rec = redis.call('HGET', KEYS[1], 'r')
if not rec then return {0} end
if tonumber(redis.call('HGET', KEYS[1], 'e')) <= tonumber(ARGV[1]) then return {0} end
local c = redis.call('HGET', KEYS[1], 'c')
if c then return {2, rec, c} end
redis.call('HSET', KEYS[1], 'c', ARGV[1])
redis.call('HSET', KEYS[2], 'r', ARGV[2], 'e', ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {1, rec}`

interface RotateScript {
  gatehouseRotate(
    key: string,
    next: string,
    at: number,
    record: string,
    expiresAt: number,
    ttl: number,
  ): Promise<ScriptResult>
}

/** What the store lends its parts: its client, keys, clock, one-time records and failure mapping. */
export interface RedisParts {
  redis: RedisClient
  k: (kind: string, id: string) => string
  ttl: (expiresAt: number) => number
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  putOnce(key: string, record: { expiresAt: number }): Promise<void>
  getOnce<T>(key: string): Promise<T | undefined>
  consumed<T extends { expiresAt: number }>(result: ScriptResult, at: number): Consumed<T>
}

/** `Store.refreshTokens` over Redis (one node or a cluster, see the module comment). */
export function redisRefreshTokens(parts: RedisParts): Store['refreshTokens'] {
  const { k, ttl, run, putOnce, getOnce, consumed } = parts
  parts.redis.defineCommand('gatehouseRotate', { numberOfKeys: 2, lua: ROTATE })
  const redis = parts.redis as Redis & RotateScript
  const cluster = isCluster(parts.redis)
  const key = (id: string, familyId: string) => (cluster ? `${k('rt', hashTag(familyId))}${id}` : k('rt', id))
  const pointer = (id: string) => k('rt-family', id)
  /** The family of token `id`: on one node, not needed (''); on a cluster, its pointer or undefined. */
  const familyOf = async (id: string) => (cluster ? ((await redis.get(pointer(id))) ?? undefined) : '')
  /** Names, on a cluster, the family whose slot holds `record` (its own, unless it was rotated in). */
  const setPointer = async (record: RefreshTokenRecord, familyId = record.familyId) => {
    if (cluster) await redis.set(pointer(record.id), familyId, 'EX', ttl(record.expiresAt))
  }

  return {
    insert: (record) =>
      run('refreshTokens.insert', async () => {
        await Promise.all([putOnce(key(record.id, record.familyId), record), setPointer(record)])
      }),
    get: (id) =>
      run('refreshTokens.get', async () => {
        const familyId = await familyOf(id)
        return familyId === undefined ? undefined : getOnce<RefreshTokenRecord>(key(id, familyId))
      }),
    rotate: (id, next, at) =>
      run('refreshTokens.rotate', async () => {
        const [familyId] = await Promise.all([familyOf(id), setPointer(next)])
        if (familyId === undefined) return { status: 'missing' }
        // The next token joins the slot of the one it replaces. It belongs to the same family (the
        // grants always rotate so); should it not, its pointer is written again to name that slot.
        if (familyId !== next.familyId) await setPointer(next, familyId)
        const result = await redis.gatehouseRotate(
          key(id, familyId),
          key(next.id, familyId),
          at,
          JSON.stringify(next),
          next.expiresAt,
          ttl(next.expiresAt),
        )
        return consumed<RefreshTokenRecord>(result, at)
      }),
  }
}
