/**
 * @module storage/redis_grants
 * The grants of the Redis store (`Store.grants`). A grant is the JSON record under `grant:<id>`,
 * expiring with it; its id is also in the set of its end-user's grants (`grants-of:<sub>`), which
 * lives as long as the longest-lived grant put in it. A put is one Lua script (record, index and
 * the index's expiry together); ids whose record is gone (deleted, expired, or put again for
 * another end-user) are dropped from the set when it is read.
 */
import type { Redis } from 'ioredis'
import type { GrantRecord, Store } from './types.ts'

// KEYS record key, index key; ARGV record JSON, ttl, id. The index's expiry only ever grows: a
// short grant put after a long one must not end the index before the long one.
const PUT_GRANT = `
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
if redis.call('TTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[2], ARGV[2]) end
return 1`

/** The client with the grant script defined. */
interface GrantScripts extends Redis {
  gatehousePutGrant(key: string, index: string, record: string, ttl: number, id: string): Promise<number>
}

/**
 * `Store.grants` over Redis. Defines its script on the client; `k` builds a key under the store's
 * prefix, `ttl` the seconds until an absolute end (on the store's clock), `run` maps failures to 503.
 */
export function redisGrants(
  client: Redis,
  k: (kind: string, id: string) => string,
  ttl: (expiresAt: number) => number,
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>,
): Store['grants'] {
  client.defineCommand('gatehousePutGrant', { numberOfKeys: 2, lua: PUT_GRANT })
  const redis = client as GrantScripts
  return {
    put: (record) =>
      run('grants.put', async () => {
        const json = JSON.stringify(record)
        await redis.gatehousePutGrant(
          k('grant', record.id),
          k('grants-of', record.sub),
          json,
          ttl(record.expiresAt),
          record.id,
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
    delete: (id) => run('grants.delete', async () => void (await redis.del(k('grant', id)))),
  }
}
