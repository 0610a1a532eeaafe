/**
 * @module storage/redis_sessions
 * The browser sessions of the Redis store (`Store.sessions`): the JSON record under `session:<id>`
 * and, beside it, its id in the set of its end-user's sessions (`sessions-of:<sub>`), which lives
 * as long as the newest session put; ids of ended sessions are dropped when listed.
 *
 * On one node a put writes both in one transaction. On a Redis Cluster the two keys are in the
 * slots of the session id and of the end-user: the record is written first, then the index. A put
 * that fails between the two leaves a record that no index names; the put failed (503), so no
 * browser holds its cookie. A listing never drops an id whose record it has not seen gone.
 */
import { isCluster, readMany, type RedisClient } from './redis_cluster.ts'
import type { SessionRecord, Store } from './types.ts'

/** `Store.sessions` over Redis; `k` builds a key, `ttl` seconds until an end, `run` maps failures to 503. */
export function redisSessions(
  redis: RedisClient,
  k: (kind: string, id: string) => string,
  ttl: (expiresAt: number) => number,
  now: () => number,
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>,
): Store['sessions'] {
  const cluster = isCluster(redis)
  const getJson = async (key: string): Promise<SessionRecord | undefined> => {
    const value = await redis.get(key)
    const record = value === null ? undefined : (JSON.parse(value) as SessionRecord)
    return record && record.expiresAt > now() ? record : undefined
  }
  return {
    put: (record) =>
      run('sessions.put', async () => {
        const index = k('sessions-of', record.sub)
        const json = JSON.stringify(record)
        if (cluster) {
          await redis.set(k('session', record.id), json, 'EX', ttl(record.expiresAt))
          await redis.multi().sadd(index, record.id).expire(index, ttl(record.expiresAt)).exec()
          return
        }
        await redis
          .multi()
          .set(k('session', record.id), json, 'EX', ttl(record.expiresAt))
          .sadd(index, record.id)
          .expire(index, ttl(record.expiresAt))
          .exec()
      }),
    get: (id) => run('sessions.get', () => getJson(k('session', id))),
    delete: (id) => run('sessions.delete', async () => void (await redis.del(k('session', id)))),
    listBySub: (sub) =>
      run('sessions.listBySub', async () => {
        const index = k('sessions-of', sub)
        const ids = await redis.smembers(index)
        if (ids.length === 0) return []
        const records = (
          await readMany(
            redis,
            ids.map((id) => k('session', id)),
          )
        ).map((value) => (value === null ? undefined : (JSON.parse(value) as SessionRecord)))
        const live = (r: SessionRecord | undefined): r is SessionRecord => r?.sub === sub && r.expiresAt > now()
        const stale = ids.filter((_, i) => !live(records[i]))
        if (stale.length > 0) await redis.srem(index, ...stale)
        return records.filter(live)
      }),
  }
}
