/**
 * @module storage/redis_cluster
 * The Redis store on a Redis Cluster (`cluster`: seed nodes, ioredis `Cluster`; the connection's
 * forms are in redis_connection.ts): its options checked here, and the few operations that differ on a cluster:
 * reading many keys (one MGET on a node; on a cluster, one GET per key, since keys of several hash
 * slots cannot share a command), walking every key (SCAN on each master) and hash tags.
 */
import type { Cluster, ClusterOptions, Redis } from 'ioredis'

/** The client the store talks to: one node, or a cluster. */
export type RedisClient = Redis | Cluster

/**
 * A node `host:port` (a host name, IPv4, or bracketed IPv6; a port from 1 to 65535): a cluster's
 * seed node, or a sentinel (`field` names the option in the message).
 */
export function parseClusterNode(node: unknown, field = 'cluster'): { host: string; port: number } {
  const match = typeof node === 'string' ? /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(node) : null
  const port = Number(match?.[2])
  if (!match || port < 1 || port > 65_535) {
    throw new TypeError(`${field}: each node must be "host:port", got ${JSON.stringify(node)}`)
  }
  return { host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port }
}

/** The seed nodes as given (for messages), or [] when `cluster` is not a valid form. */
export function clusterSeeds(cluster: unknown): string[] {
  const nodes = Array.isArray(cluster) ? cluster : (cluster as { nodes?: unknown } | undefined)?.nodes
  return Array.isArray(nodes) ? nodes.map(String) : []
}

/** The cluster's seed nodes and options, checked: a TypeError names what is wrong. */
export function parseCluster(cluster: unknown): {
  nodes: Array<{ host: string; port: number }>
  options: ClusterOptions
} {
  const given = Array.isArray(cluster) ? { nodes: cluster } : (cluster as { nodes?: unknown; options?: unknown })
  if (typeof given !== 'object' || given === null || !Array.isArray(given.nodes) || given.nodes.length === 0) {
    throw new TypeError('cluster: must be a non-empty array of "host:port" seed nodes, or { nodes, options }')
  }
  const options = 'options' in given ? given.options : undefined
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError('cluster.options: must be an object (ioredis ClusterOptions)')
  }
  return { nodes: given.nodes.map((node) => parseClusterNode(node)), options: (options ?? {}) as ClusterOptions }
}

/** True for a cluster client. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis.isCluster
}

/**
 * A hash tag for `value`: `{value}` with `%`, `{` and `}` escaped (injective, so different values
 * never share a tag by accident; never empty, so Redis always hashes the tag, not the whole key).
 */
export function hashTag(value: string): string {
  const escaped = value.replace(/%/g, '%25').replace(/\{/g, '%7B').replace(/\}/g, '%7D')
  return `{${escaped === '' ? '%' : escaped}}`
}

/** The values of `keys`, in order: one MGET on a node; on a cluster, one GET per key (any slots). */
export async function readMany(redis: RedisClient, keys: string[]): Promise<Array<string | null>> {
  if (keys.length === 0) return []
  if (!isCluster(redis)) return redis.mget(keys)
  return Promise.all(keys.map((key) => redis.get(key)))
}

/** `pattern` for SCAN MATCH with `prefix` taken literally (its glob characters escaped). */
export function matchPrefix(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`
}

/** Calls `each` with every batch of keys matching `pattern`: on each master of a cluster. */
export async function scanKeys(
  redis: RedisClient,
  pattern: string,
  each: (node: Redis, keys: string[]) => Promise<void>,
): Promise<void> {
  const nodes = isCluster(redis) ? redis.nodes('master') : [redis]
  for (const node of nodes) {
    let cursor = '0'
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500)
      cursor = next
      if (keys.length > 0) await each(node, keys)
    } while (cursor !== '0')
  }
}

/** Deletes `keys` found on `node`: one DEL on a single node; per key on a cluster (keys of several slots). */
export async function deleteKeys(redis: RedisClient, node: Redis, keys: string[]): Promise<void> {
  if (!isCluster(redis)) {
    await node.del(...keys)
    return
  }
  const pipeline = node.pipeline()
  for (const key of keys) pipeline.del(key)
  await pipeline.exec()
}
