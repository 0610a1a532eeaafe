/**
 * @module storage/redis_attempts
 * The attempt counters of the Redis store (`Store.attempts`): fixed windows in a hash `{n, e}`
 * (count, window end), each operation one Lua script, so concurrent hits and takes on any number
 * of instances are counted exactly (the registration caps, #27 item 8).
 */
import type { Redis } from 'ioredis'
import type { Store } from './types.ts'

// A fixed-window counter {n, e}: ARGV now, window end, ttl. Returns {count, window end}.
const ATTEMPT = `
local e = tonumber(redis.call('HGET', KEYS[1], 'e') or '0')
if e <= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'n', 1, 'e', ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  return {1, tonumber(ARGV[2])}
end
return {redis.call('HINCRBY', KEYS[1], 'n', 1), e}`

// Counts a hit (ARGV now, window end, ttl, limit) only while the window holds fewer than the
// limit: {1, count, window end} when counted, {0, count, window end} when the window is full.
const ATTEMPT_TAKE = `
local e = tonumber(redis.call('HGET', KEYS[1], 'e') or '0')
if e <= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'n', 1, 'e', ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  return {1, 1, tonumber(ARGV[2])}
end
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if n >= tonumber(ARGV[4]) then return {0, n, e} end
return {1, redis.call('HINCRBY', KEYS[1], 'n', 1), e}`

/** The client with the attempt scripts defined (`defineAttemptScripts`). */
export interface AttemptScripts extends Redis {
  gatehouseAttempt(key: string, at: number, resetAt: number, ttl: number): Promise<[number, number]>
  gatehouseAttemptTake(
    key: string,
    at: number,
    resetAt: number,
    ttl: number,
    limit: number,
  ): Promise<[number, number, number]>
}

/** Defines the attempt scripts on a client (once, before use). */
export function defineAttemptScripts(redis: Redis): void {
  redis.defineCommand('gatehouseAttempt', { numberOfKeys: 1, lua: ATTEMPT })
  redis.defineCommand('gatehouseAttemptTake', { numberOfKeys: 1, lua: ATTEMPT_TAKE })
}

/** `Store.attempts` over Redis; `key` prefixes a counter's key, `run` maps failures to 503. */
export function redisAttempts(
  redis: AttemptScripts,
  key: (id: string) => string,
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>,
): Store['attempts'] {
  return {
    hit: (id, window, at) =>
      run('attempts.hit', async () => {
        const [count, resetAt] = await redis.gatehouseAttempt(key(id), at, at + window, window)
        return { count: Number(count), resetAt: Number(resetAt) }
      }),
    get: (id, at) =>
      run('attempts.get', async () => {
        const [count, resetAt] = await redis.hmget(key(id), 'n', 'e')
        if (count === null || resetAt === null || Number(resetAt) <= at) return undefined
        return { count: Number(count), resetAt: Number(resetAt) }
      }),
    take: (id, limit, window, at) =>
      run('attempts.take', async () => {
        const [taken, count, resetAt] = await redis.gatehouseAttemptTake(key(id), at, at + window, window, limit)
        return { taken: taken === 1, count: Number(count), resetAt: Number(resetAt) }
      }),
  }
}
