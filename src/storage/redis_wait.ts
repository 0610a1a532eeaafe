/**
 * @module storage/redis_wait
 * Writes that must survive a failover (#43 item 4). Redis replicates asynchronously: a write the
 * primary acknowledged may be missing on the replica promoted after the primary dies, so a code or
 * refresh token consumed just before may be redeemable again, a token answered 200 may be unknown,
 * a revocation undone. With `waitReplicas: n` the store sends Redis `WAIT n timeout` after each such
 * write, in one pipeline with it (one round trip, on the node holding the key: a cluster routes the
 * pipeline by the write's key, and WAIT has none), and fails the operation (503) when fewer than `n`
 * replicas acknowledged within `waitTimeout`. Redis holds a connection while its WAIT waits, so
 * these writes go over connections of their own (`WAIT_CONNECTIONS`, taken in turn): the store's
 * other commands never queue behind a WAIT. Failing closed: the write happened on the primary,
 * the caller learns nothing was promised. A consumed code or refresh token retried after such a 503
 * is then a reuse (`invalid_grant`), never a second redemption.
 *
 * The writes: every one-time step (code, refresh-token, device and CIBA consumption and decisions,
 * replay markers), what those steps must later find (a code, a refresh token and, on a cluster, its
 * pointer), and revocation marks. Other writes (sessions, interactions, pushed requests, clients,
 * grants' records put on their own) stay unacknowledged: losing one costs a sign-in or a retry,
 * never a double use. A redeemed code's refresh token and grant record go with the redemption's
 * own script (#44 item 2), and so with its WAIT.
 */
import type { RedisClient } from './redis_cluster.ts'

/**
 * The commands sent with WAIT: the store's one-time scripts, its marks, `set` and `del` where the
 * store sends them through this client (refresh pointers, CIBA links, sessions, clients: a logout or
 * a client's deletion lost would come back), the client and device-code inserts and swaps, and the
 * one-time takes of pushed requests.
 */
export const DURABLE_COMMANDS: ReadonlySet<string> = new Set([
  'gatehouseConsume',
  'gatehousePutOnce',
  'gatehouseRotate',
  'gatehouseRedeem',
  'gatehouseRotateUnlessRevoked',
  'gatehouseExtend',
  'gatehouseUseOnce',
  'gatehouseDeviceDecide',
  'gatehouseDevicePoll',
  'gatehouseCibaDecide',
  'gatehouseCibaPoll',
  'gatehouseDeviceInsert',
  'gatehouseDeviceClaim',
  'gatehouseDevicePutNew',
  'gatehouseClientInsert',
  'gatehouseClientSwap',
  'gatehouseTakePushed',
  'getdel',
  'set',
  'del',
])

/** Connections each store keeps for the writes that wait for replicas. */
export const WAIT_CONNECTIONS = 4

/** How many replicas must acknowledge a durable write, and for how long to wait (ms). */
export interface ReplicaWait {
  replicas: number
  timeout: number
}

/** Checks `waitReplicas` / `waitTimeout` (TypeError naming the option) and returns the policy, or undefined when off. */
export function replicaWait(options: {
  waitReplicas?: unknown
  waitTimeout?: unknown
  commandTimeout?: unknown
}): ReplicaWait | undefined {
  const { waitReplicas = 0, waitTimeout = 250, commandTimeout = 2000 } = options
  if (typeof waitReplicas !== 'number' || !Number.isInteger(waitReplicas) || waitReplicas < 0 || waitReplicas > 16) {
    throw new TypeError('waitReplicas: must be an integer from 0 to 16')
  }
  if (typeof waitTimeout !== 'number' || !Number.isInteger(waitTimeout) || waitTimeout < 1 || waitTimeout > 10_000) {
    throw new TypeError('waitTimeout: must be an integer number of milliseconds from 1 to 10000')
  }
  // The connection's watchdog would drop a connection whose WAIT outlasts it (and fail every write on it).
  if (waitReplicas > 0 && typeof commandTimeout === 'number' && commandTimeout > 0 && waitTimeout >= commandTimeout) {
    throw new TypeError(`waitTimeout: must be shorter than commandTimeout (${commandTimeout} ms)`)
  }
  return waitReplicas === 0 ? undefined : { replicas: waitReplicas, timeout: waitTimeout }
}

interface Pipelined {
  wait(replicas: number, timeout: number): Pipelined
  exec(): Promise<Array<[Error | null, unknown]> | null>
}

/**
 * `client` with the durable commands sent as `command; WAIT replicas timeout` in one pipeline on one
 * of `waiters` (connections like `client`'s, in turn): each resolves to the command's own answer
 * once enough replicas have it, and rejects when the command failed or too few replicas
 * acknowledged. Every other property is the client's own; a command defined on `client` from now
 * on is defined on the waiters too.
 */
export function withReplicaWait<C extends RedisClient>(client: C, waiters: RedisClient[], wait: ReplicaWait): C {
  const define = client.defineCommand.bind(client)
  client.defineCommand = (name, definition) => {
    define(name, definition)
    for (const waiter of waiters) waiter.defineCommand(name, definition)
  }
  let turn = 0
  const durable =
    (name: string) =>
    async (...args: unknown[]): Promise<unknown> => {
      const pipeline = (waiters[turn++ % waiters.length] as RedisClient).pipeline()
      const send = (pipeline as unknown as Record<string, ((...a: unknown[]) => Pipelined) | undefined>)[name]
      if (!send) throw new TypeError(`${name}: not a command of this client`)
      const results = await send.apply(pipeline, args).wait(wait.replicas, wait.timeout).exec()
      const [written, waited] = results ?? []
      if (!written || !waited) throw new Error(`pipeline for ${name} was not run`)
      if (written[0]) throw written[0]
      if (waited[0]) throw waited[0]
      const acknowledged = Number(waited[1])
      if (acknowledged < wait.replicas) {
        throw new Error(`${acknowledged} of ${wait.replicas} replicas acknowledged a write within ${wait.timeout} ms`)
      }
      return written[1]
    }
  const commands = new Map([...DURABLE_COMMANDS].map((name) => [name, durable(name)]))
  return new Proxy(client, {
    get(target, property) {
      if (typeof property === 'string') {
        const command = commands.get(property)
        if (command) return command
      }
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
}
