/**
 * @module storage/redis_connection
 * Where the Redis store connects, in one of three forms: one node (`url`), a Redis Cluster
 * (`cluster`, redis_cluster.ts) or a Sentinel-managed primary (`sentinel`, redis_sentinel.ts). The
 * form is checked here, the client made with the store's failure policy, and the place described
 * for error messages.
 */
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis'
import { clusterSeeds, parseCluster, type RedisClient } from './redis_cluster.ts'
import { type SentinelConnection, sentinelClientOptions, sentinelNodes } from './redis_sentinel.ts'

/** Where the Redis store connects: one node by URL, a Redis Cluster by its seed nodes, or Sentinel. */
export type RedisConnectionOptions =
  | {
      /** Connection URL, e.g. `redis://127.0.0.1:6379/0`. */
      url: string
      cluster?: undefined
      sentinel?: undefined
    }
  | {
      url?: undefined
      /**
       * A Redis Cluster: its seed nodes as `host:port` (any reachable ones: the client learns the
       * rest), or `{ nodes, options }` with ioredis `ClusterOptions` for what the store does not set
       * itself (TLS, `natMap`, `scaleReads`, …).
       */
      cluster: string[] | { nodes: string[]; options?: ClusterOptions }
      sentinel?: undefined
    }
  | {
      url?: undefined
      cluster?: undefined
      /**
       * A primary managed by Redis Sentinel (#43): the sentinels as `host:port` and the master name
       * they monitor, e.g. `{ nodes: ['10.0.0.1:26379', '10.0.0.2:26379'], name: 'mymaster' }`; the
       * store follows the primary through a failover.
       */
      sentinel: SentinelConnection
    }

const FORMS = ['url', 'cluster', 'sentinel'] as const

/**
 * Creates the client for `options` (not connected: `lazyConnect`), with the store's failure policy
 * on every node: no offline queue, no re-sent command (a one-time script never runs twice), the
 * silent-connection watchdog. Throws a TypeError for options that are not one of the three forms,
 * or for a cluster prefix holding `{` or `}` (it would put every key in one hash slot).
 */
export function createRedisClient(
  driver: { Redis: typeof Redis; Cluster: typeof Cluster },
  options: RedisConnectionOptions & { prefix?: string },
  nodeOptions: RedisOptions,
): RedisClient {
  const given = FORMS.filter((form) => options[form] !== undefined)
  if (given.length !== 1) {
    const got = given.length === 0 ? 'none' : given.join(' and ')
    throw new TypeError(`createRedisStore: give exactly one of url, cluster and sentinel (got ${got})`)
  }
  if (options.url !== undefined) {
    if (typeof options.url !== 'string' || !/^rediss?:\/\//.test(options.url)) {
      throw new TypeError('url: must be a redis:// or rediss:// URL')
    }
    return new driver.Redis(options.url, nodeOptions)
  }
  if (options.sentinel !== undefined) return sentinelClient(driver, options.sentinel, nodeOptions)
  if (/[{}]/.test(options.prefix ?? '')) {
    throw new TypeError('prefix: must not contain "{" or "}" with a cluster (it would be the hash tag of every key)')
  }
  const { nodes, options: clusterOptions } = parseCluster(options.cluster)
  return new driver.Cluster(nodes, {
    // The slot map is read again every 2 s (a promoted replica is found without a redirection to
    // wait for) and after every failed command (the store's `run`).
    slotsRefreshInterval: 2000,
    ...clusterOptions,
    lazyConnect: true,
    enableOfflineQueue: false,
    // A cluster that cannot be reached or is down fails the command (503) instead of queueing it.
    clusterRetryStrategy: (times) => Math.min(times * 100, 1000),
    redisOptions: { ...clusterOptions.redisOptions, ...nodeOptions },
  })
}

/**
 * A client of the primary the sentinels name. ioredis gives such a client up for good (status
 * `end`, every later command "Connection is closed.") when the failover detector's notice
 * (`+switch-master`) lands while a reconnection is still asking the sentinels (seen once in the
 * killed-primary test): unless the store closed it, it is started again, as a reconnection would.
 */
function sentinelClient(driver: { Redis: typeof Redis }, sentinel: unknown, nodeOptions: RedisOptions): Redis {
  let ready = false
  let closed = false
  const client = new driver.Redis(sentinelClientOptions(sentinel, nodeOptions, () => ready))
  client.on('ready', () => {
    ready = true
    closed = false
  })
  const disconnect = client.disconnect.bind(client)
  client.disconnect = (reconnect?: boolean) => {
    if (!reconnect) closed = true
    disconnect(reconnect)
  }
  client.on('end', () => {
    if (!ready || closed) return
    setTimeout(() => {
      if (client.status === 'end' && !closed) client.connect().catch(() => {})
    }, 100)
  })
  return client
}

/**
 * Where the store connects, for errors (no credentials): the URL's host and port, the cluster's
 * seed nodes, or the sentinels and the master name.
 */
export function describeConnection(options: RedisConnectionOptions): string {
  if (options.sentinel !== undefined) {
    return `sentinels ${sentinelNodes(options.sentinel).join(',')} (master ${String(options.sentinel.name)})`
  }
  if (options.cluster !== undefined) return `cluster ${clusterSeeds(options.cluster).join(',')}`
  const url = new URL(options.url)
  return `${url.hostname}:${url.port || 6379}`
}
