/**
 * @module storage/redis_sentinel
 * The Redis store behind Redis Sentinel (#43 item 2): the sentinels (`host:port`) and the name of
 * the master they monitor. ioredis asks a sentinel for the primary and talks to it alone, with the
 * single-node key layout (one primary holds every key). Through a failover the client follows the
 * primary: told by the sentinels (`+switch-master`), dropped by the demoted primary (Sentinel kills
 * its clients), or answered `READONLY` by it (a partition that kept the connection), it reconnects
 * through the sentinels to whichever node they name, and checks that node is a master before use.
 */
import type { RedisOptions } from 'ioredis'
import { parseClusterNode } from './redis_cluster.ts'

/** The ioredis options a Sentinel store takes from its caller: the rest is the store's own. */
export type SentinelClientOptions = Omit<
  RedisOptions,
  | 'sentinels'
  | 'name'
  | 'role'
  | 'lazyConnect'
  | 'enableOfflineQueue'
  | 'maxRetriesPerRequest'
  | 'retryStrategy'
  | 'sentinelRetryStrategy'
  | 'reconnectOnError'
  | 'failoverDetector'
  | 'socketTimeout'
  | 'connectTimeout'
  | 'host'
  | 'port'
  | 'path'
>

/** A Sentinel-managed primary. */
export interface SentinelConnection {
  /** The sentinels as `host:port` (one reachable is enough: the client learns the others). */
  nodes: string[]
  /** The master name the sentinels monitor (`sentinel monitor <name> …`). */
  name: string
  /**
   * ioredis options for what the store does not set itself: `password` and `username` (the data
   * nodes), `sentinelPassword` and `sentinelUsername`, `tls`, `sentinelTLS` and
   * `enableTLSForSentinelMode`, `natMap`, `db`, … The store always talks to the master.
   */
  options?: SentinelClientOptions
}

/** The sentinels as given (for messages), or [] when `sentinel` is not a valid form. */
export function sentinelNodes(sentinel: unknown): string[] {
  const nodes = (sentinel as { nodes?: unknown } | undefined)?.nodes
  return Array.isArray(nodes) ? nodes.map(String) : []
}

/** The sentinels, the master name and the caller's options, checked: a TypeError names what is wrong. */
export function parseSentinel(sentinel: unknown): {
  sentinels: Array<{ host: string; port: number }>
  name: string
  options: SentinelClientOptions
} {
  const given = sentinel as { nodes?: unknown; name?: unknown; options?: unknown }
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new TypeError('sentinel: must be { nodes: ["host:port", …], name } (the sentinels and the master name)')
  }
  if (!Array.isArray(given.nodes) || given.nodes.length === 0) {
    throw new TypeError('sentinel.nodes: must be a non-empty array of "host:port" sentinels')
  }
  const sentinels = given.nodes.map((node) => parseClusterNode(node, 'sentinel.nodes'))
  if (typeof given.name !== 'string' || given.name.trim() === '') {
    throw new TypeError('sentinel.name: must be the name of the master the sentinels monitor (a non-empty string)')
  }
  if (given.options !== undefined && (typeof given.options !== 'object' || given.options === null)) {
    throw new TypeError('sentinel.options: must be an object (ioredis options)')
  }
  return { sentinels, name: given.name, options: (given.options ?? {}) as SentinelClientOptions }
}

/**
 * The ioredis options of a Sentinel client: the caller's, then the store's failure policy
 * (`nodeOptions`: no offline queue, no re-sent command, the watchdog), then what following the
 * primary takes. `connected()` tells whether the client was ever ready: until then, sentinels that
 * cannot be reached fail `connect()` (the server does not start) instead of being retried forever;
 * afterwards they are retried, every second at most, while the client reconnects.
 */
export function sentinelClientOptions(
  sentinel: unknown,
  nodeOptions: RedisOptions,
  connected: () => boolean,
): RedisOptions {
  const { sentinels, name, options } = parseSentinel(sentinel)
  const timeout = nodeOptions.connectTimeout
  return {
    ...options,
    ...nodeOptions,
    sentinels,
    name,
    role: 'master',
    // A sentinel that accepts the connection but does not answer is skipped after this long.
    ...(timeout ? { sentinelCommandTimeout: timeout } : {}),
    sentinelRetryStrategy: (times) => (connected() ? Math.min(times * 100, 1000) : null),
    // Subscribed to the sentinels' +switch-master: the client reconnects as soon as they promote a
    // replica, instead of at its next failing command.
    failoverDetector: true,
    // A demoted primary still reachable (its clients not killed: a partition) answers writes with
    // READONLY: that command fails (503, never re-sent) and the client reconnects through the sentinels.
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  }
}
