/**
 * @module storage/redis_grants
 * The grants of the Redis store (`Store.grants`). A grant is the JSON record under `grant:<id>`,
 * expiring with it; its id is also in the set of its end-user's grants (`grants-of:<sub>`), which
 * lives as long as the longest-lived grant put in it. A put, a delete (record and index entry
 * together) and a touch are each one Lua script; ids whose record is gone (expired, or put again
 * for another end-user) are dropped from the set when it is read.
 *
 * The record's `lastUsedAt`, when it has one, is its JSON's first member, so a touch rewrites that
 * member only, as text: decoding and encoding the whole record in Lua (cjson) would turn empty
 * arrays into objects and round numbers to 14 digits.
 */
import type { Redis } from 'ioredis'
import type { GrantRecord, Store } from './types.ts'

/**
 * The record half of a grant put (shared with the one-slot steps of redis_grants_cluster.ts):
 * KEYS[1] the record key; ARGV[1] the record JSON without lastUsedAt, ARGV[2] its ttl, and
 * ARGV[`usedArg`] its lastUsedAt (0: none). The last use never goes back: the stored one stays
 * when later (a touch since the caller read the record).
 */
export function recordPutLua(usedArg: number): string {
  return `
local used = tonumber(ARGV[${usedArg}])
local old = redis.call('GET', KEYS[1])
if old then
  local ok, rec = pcall(cjson.decode, old)
  if ok and type(rec) == 'table' and type(rec.lastUsedAt) == 'number' and rec.lastUsedAt > used then
    used = rec.lastUsedAt
  end
end
local json = ARGV[1]
if used > 0 then json = '{"lastUsedAt":' .. tostring(used) .. ',' .. string.sub(json, 2) end
redis.call('SET', KEYS[1], json, 'EX', ARGV[2])`
}

/**
 * A whole grant put (shared with the one-step redemption of redis_redeem.ts): KEYS[1] the record
 * key, KEYS[2] the index key; ARGV[1] the record JSON without lastUsedAt, ARGV[2] its ttl, ARGV[3]
 * its id, ARGV[4] its lastUsedAt (0: none). The index's expiry only ever grows: a short grant put
 * after a long one must not end the index before the long one.
 */
export const GRANT_PUT_LUA = `${recordPutLua(4)}
redis.call('SADD', KEYS[2], ARGV[3])
if redis.call('TTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[2], ARGV[2]) end`

const PUT_GRANT = `${GRANT_PUT_LUA}
return 1`

/** The arguments of GRANT_PUT_LUA for `record` (its `lastUsedAt` apart, as the script writes it first). */
export function grantPutArgs(record: GrantRecord, ttl: number): [string, number, string, number] {
  const { lastUsedAt, ...rest } = record
  return [JSON.stringify(rest), ttl, record.id, Number.isFinite(lastUsedAt) ? (lastUsedAt as number) : 0]
}

// KEYS record key; ARGV at. Only a live record (its expiresAt after at) whose last use is earlier
// or unset; the rest of the JSON is kept as it is, and so is the key's expiry. A record whose
// lastUsedAt is not its first member (not written by PUT_GRANT) is left as it is.
const TOUCH_GRANT = `
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local ok, rec = pcall(cjson.decode, value)
if not ok or type(rec) ~= 'table' then return 0 end
local at = tonumber(ARGV[1])
if type(rec.expiresAt) ~= 'number' or rec.expiresAt <= at then return 0 end
local used = rec.lastUsedAt
local rest
if used == nil then
  rest = string.sub(value, 2)
else
  if type(used) ~= 'number' or used >= at then return 0 end
  local head = string.match(value, '^{"lastUsedAt":[^,]*,')
  if not head then return 0 end
  rest = string.sub(value, #head + 1)
end
redis.call('SET', KEYS[1], '{"lastUsedAt":' .. tostring(at) .. ',' .. rest, 'KEEPTTL')
return 1`

// KEYS record key; ARGV index key prefix (… grants-of:), id. Removes the record and its id from
// its end-user's set; that set's key is derived from the record's sub, as the store's keys are.
const DELETE_GRANT = `
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
redis.call('DEL', KEYS[1])
local ok, rec = pcall(cjson.decode, value)
if ok and type(rec) == 'table' and type(rec.sub) == 'string' then
  redis.call('SREM', ARGV[1] .. rec.sub, ARGV[2])
end
return 1`

/** The client with the grant scripts defined. */
interface GrantScripts extends Redis {
  gatehousePutGrant(key: string, index: string, record: string, ttl: number, id: string, used: number): Promise<number>
  gatehouseTouchGrant(key: string, at: number): Promise<number>
  gatehouseDeleteGrant(key: string, indexPrefix: string, id: string): Promise<number>
}

/**
 * `Store.grants` over Redis. Defines its scripts on the client; `k` builds a key under the store's
 * prefix, `ttl` the seconds until an absolute end (on the store's clock), `run` maps failures to 503.
 */
export function redisGrants(
  client: Redis,
  k: (kind: string, id: string) => string,
  ttl: (expiresAt: number) => number,
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>,
): Store['grants'] {
  client.defineCommand('gatehousePutGrant', { numberOfKeys: 2, lua: PUT_GRANT })
  client.defineCommand('gatehouseTouchGrant', { numberOfKeys: 1, lua: TOUCH_GRANT })
  client.defineCommand('gatehouseDeleteGrant', { numberOfKeys: 1, lua: DELETE_GRANT })
  const redis = client as GrantScripts
  return {
    put: (record) =>
      run('grants.put', async () => {
        await redis.gatehousePutGrant(
          k('grant', record.id),
          k('grants-of', record.sub),
          ...grantPutArgs(record, ttl(record.expiresAt)),
        )
      }),
    get: (id, at) =>
      run('grants.get', async () => {
        const value = await redis.get(k('grant', id))
        if (value === null) return undefined
        const record = JSON.parse(value) as GrantRecord
        return record.expiresAt > at ? record : undefined
      }),
    listBySub: (sub, at) =>
      run('grants.listBySub', async () => {
        const index = k('grants-of', sub)
        const ids = await redis.smembers(index)
        if (ids.length === 0) return []
        const records = (await redis.mget(ids.map((id) => k('grant', id)))).map((value) =>
          value === null ? undefined : (JSON.parse(value) as GrantRecord),
        )
        // Dropped from the index: ids whose record is gone or belongs to another end-user now. One
        // that `at` finds expired stays until native expiry removes its record.
        const stale = ids.filter((_, i) => records[i]?.sub !== sub)
        if (stale.length > 0) await redis.srem(index, ...stale)
        return records.filter((r): r is GrantRecord => r?.sub === sub && r.expiresAt > at)
      }),
    delete: (id) =>
      run('grants.delete', async () => void (await redis.gatehouseDeleteGrant(k('grant', id), k('grants-of', ''), id))),
    touch: (id, at) =>
      run('grants.touch', async () => {
        if (Number.isFinite(at)) await redis.gatehouseTouchGrant(k('grant', id), at)
      }),
  }
}
