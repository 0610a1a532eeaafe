/**
 * @module storage/redis_grants_cluster
 * The grants of the Redis store on a Redis Cluster. redis_grants.ts keeps a grant (`grant:<id>`)
 * and its id in its end-user's index (`grants-of:<sub>`) with one script: two keys that a cluster
 * puts in two hash slots, where one script cannot run. This gives redis_grants.ts a client on
 * which that script is two steps, each in one slot: the record, then the index (its expiry only
 * grows, as in the script). A put failing between the two leaves a record that the index does not
 * name: the put failed (503), so nothing was issued on it; putting it again repairs the index.
 * Reading many keys (`mget`) becomes one GET per key.
 */
import type { Redis } from 'ioredis'
import { type RedisClient, readMany } from './redis_cluster.ts'

// KEYS index; ARGV ttl, id. The index's expiry only ever grows (as PUT_GRANT in redis_grants.ts).
const INDEX_ADD = `
redis.call('SADD', KEYS[1], ARGV[2])
if redis.call('TTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return 1`

interface IndexScript {
  gatehouseGrantIndexAdd(index: string, ttl: number, id: string): Promise<number>
}

/** `client` as redis_grants.ts expects it, with its two-slot script split for a cluster. */
export function clusterGrantClient(client: RedisClient): Redis {
  client.defineCommand('gatehouseGrantIndexAdd', { numberOfKeys: 1, lua: INDEX_ADD })
  const scripted = client as RedisClient & IndexScript
  const overrides: Record<string, unknown> = {
    defineCommand: (name: string, definition: { numberOfKeys?: number; lua: string }) => {
      if (!(name in overrides)) client.defineCommand(name, definition)
    },
    mget: (keys: string[]) => readMany(client, keys),
    gatehousePutGrant: async (key: string, index: string, record: string, ttl: number, id: string) => {
      await client.set(key, record, 'EX', ttl)
      return scripted.gatehouseGrantIndexAdd(index, ttl, id)
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
