/**
 * @module storage/redis_grants_cluster
 * The grants of the Redis store on a Redis Cluster. redis_grants.ts keeps a grant (`grant:<id>`)
 * and its id in its end-user's index (`grants-of:<sub>`) with one script per put and per delete:
 * two keys that a cluster puts in two hash slots, where one script cannot run. This gives
 * redis_grants.ts a client on which those scripts are two steps, each in one slot: the record,
 * then the index. A put failing between the two leaves a record the index does not name (the put
 * failed, 503: nothing was issued on it; putting it again repairs the index); a delete, an id whose
 * record is gone (dropped when the index is read). Reading many keys (`mget`) is one GET per key.
 */
import type { Redis } from 'ioredis'
import { type RedisClient, readMany } from './redis_cluster.ts'
import { recordPutLua } from './redis_grants.ts'

// KEYS index; ARGV ttl, id. The index's expiry only ever grows (as PUT_GRANT in redis_grants.ts).
const INDEX_ADD = `
redis.call('SADD', KEYS[1], ARGV[2])
if redis.call('TTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return 1`

// KEYS record key; ARGV record JSON without lastUsedAt, ttl, lastUsedAt (0: none). The record half
// of PUT_GRANT in redis_grants.ts: the last use never goes back.
const RECORD_PUT = `${recordPutLua(3)}
return 1`

// KEYS record key. The record half of DELETE_GRANT: deletes it and answers what it was (or false).
const RECORD_TAKE = `
local value = redis.call('GET', KEYS[1])
if not value then return false end
redis.call('DEL', KEYS[1])
return value`

interface SplitScripts {
  gatehouseGrantIndexAdd(index: string, ttl: number, id: string): Promise<number>
  gatehouseGrantRecordPut(key: string, record: string, ttl: number, used: number): Promise<number>
  gatehouseGrantRecordTake(key: string): Promise<string | null>
}

/** `client` as redis_grants.ts expects it, with its two-slot script split for a cluster. */
export function clusterGrantClient(client: RedisClient): Redis {
  client.defineCommand('gatehouseGrantIndexAdd', { numberOfKeys: 1, lua: INDEX_ADD })
  client.defineCommand('gatehouseGrantRecordPut', { numberOfKeys: 1, lua: RECORD_PUT })
  client.defineCommand('gatehouseGrantRecordTake', { numberOfKeys: 1, lua: RECORD_TAKE })
  const scripted = client as RedisClient & SplitScripts
  const overrides: Record<string, unknown> = {
    defineCommand: (name: string, definition: { numberOfKeys?: number; lua: string }) => {
      if (!(name in overrides)) client.defineCommand(name, definition)
    },
    mget: (keys: string[]) => readMany(client, keys),
    // PUT_GRANT (record, then index): a failure between leaves the index without the id.
    gatehousePutGrant: async (key: string, index: string, record: string, ttl: number, id: string, used: number) => {
      await scripted.gatehouseGrantRecordPut(key, record, ttl, used)
      return scripted.gatehouseGrantIndexAdd(index, ttl, id)
    },
    // DELETE_GRANT (record, then its id out of its end-user's index): a failure between leaves the
    // id in the index, dropped when the index is next read (its record is gone).
    gatehouseDeleteGrant: async (key: string, indexPrefix: string, id: string) => {
      const value = await scripted.gatehouseGrantRecordTake(key)
      if (value === null) return 0
      const sub = (JSON.parse(value) as { sub?: unknown }).sub
      if (typeof sub === 'string') await client.srem(`${indexPrefix}${sub}`, id)
      return 1
    },
  }
  return new Proxy(client, {
    get(target, property) {
      if (typeof property === 'string' && property in overrides) return overrides[property]
      const value = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as unknown as Redis
}
