/**
 * @module storage/redis_clients
 * The clients of the Redis store (`Store.clients`): the JSON record under `client:<id>`. On one
 * node the ids are also in the set `clients` (insert and delete change both in one script or
 * transaction), and `list` reads that set. On a Redis Cluster that set would put every insert in
 * one hash slot beside records of every other slot: there is no set, an insert is one `SET NX` and
 * `list` walks the `client:*` keys of every master (SCAN: an administrative call).
 */
import type { Redis } from 'ioredis'
import { deleteKeys, isCluster, matchPrefix, readMany, type RedisClient, scanKeys } from './redis_cluster.ts'
import type { ClientRecord, Store } from './types.ts'

const CLIENT_INSERT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then redis.call('SADD', KEYS[2], ARGV[2]) return 1 end
return 0`

// Compare-and-set of a client record: replaces it only while it is still the expected JSON.
const CLIENT_SWAP = `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1`

interface ClientScripts {
  gatehouseClientInsert(key: string, set: string, record: string, id: string): Promise<number>
  gatehouseClientSwap(key: string, record: string, expected: string): Promise<number>
}

/** `Store.clients` over Redis; `prefix` is the store's, `run` maps failures to 503. */
export function redisClients(
  client: RedisClient,
  prefix: string,
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>,
): Store['clients'] {
  client.defineCommand('gatehouseClientInsert', { numberOfKeys: 2, lua: CLIENT_INSERT })
  client.defineCommand('gatehouseClientSwap', { numberOfKeys: 1, lua: CLIENT_SWAP })
  const redis = client as Redis & ClientScripts
  const cluster = isCluster(client)
  const key = (clientId: string) => `${prefix}client:${clientId}`
  const index = `${prefix}clients`

  /** The ids of every client: the index set on one node, the keys of every master on a cluster. */
  async function ids(): Promise<string[]> {
    if (!cluster) return redis.smembers(index)
    const found: string[] = []
    await scanKeys(client, matchPrefix(key('')), async (_node, keys) => {
      for (const k of keys) found.push(k.slice(key('').length))
    })
    return found
  }

  return {
    get: (clientId) =>
      run('clients.get', async () => {
        const value = await redis.get(key(clientId))
        return value === null ? undefined : (JSON.parse(value) as ClientRecord)
      }),
    insert: (record) =>
      run('clients.insert', async () => {
        const json = JSON.stringify(record)
        if (cluster) return (await redis.set(key(record.clientId), json, 'NX')) === 'OK'
        return (await redis.gatehouseClientInsert(key(record.clientId), index, json, record.clientId)) === 1
      }),
    update: (record, expected) =>
      run('clients.update', async () => {
        const k = key(record.clientId)
        if (!expected) return (await redis.set(k, JSON.stringify(record), 'XX')) === 'OK'
        return (await redis.gatehouseClientSwap(k, JSON.stringify(record), JSON.stringify(expected))) === 1
      }),
    delete: (clientId) =>
      run('clients.delete', async () => {
        if (cluster) return (await redis.del(key(clientId))) === 1
        const [[, deleted]] = (await redis.multi().del(key(clientId)).srem(index, clientId).exec()) as [
          [unknown, number],
        ]
        return deleted === 1
      }),
    list: () =>
      run('clients.list', async () => {
        const all = (await ids()).sort()
        const values = await readMany(client, all.map(key))
        return values.filter((v): v is string => v !== null).map((v) => JSON.parse(v) as ClientRecord)
      }),
  }
}

/** Deletes every key under `prefix`, on every master of a cluster (tests and tear-down). */
export async function clearKeys(client: RedisClient, prefix: string): Promise<void> {
  await scanKeys(client, matchPrefix(prefix), (node, keys) => deleteKeys(client, node, keys))
}
