/**
 * A local Redis Sentinel setup for tests (#43 items 2 and 3), in a temporary folder on free ports:
 * one primary `redis-server`, one replica (`--replicaof` the primary) and three sentinels
 * (`redis-server sentinel-<port>.conf --sentinel`, quorum 2, `down-after-milliseconds` 1000,
 * `failover-timeout` 2000), all with `--save '' --appendonly no`. Ready once the replica is in
 * sync and every sentinel sees the replica and the two other sentinels (a failover needs both).
 * The sentinels rewrite their conf files (they are written to the folder, writable) on a failover.
 * With `password`, every node and sentinel requires it (`requirepass`; `masterauth`, `auth-pass`),
 * and `cli` sends it.
 *
 *   const setup = await startRedisSentinel()
 *   createRedisStore({ sentinel: { nodes: setup.sentinels, name: setup.name } })
 *   const before = await setup.primary()                  // '127.0.0.1:<port>', as the sentinels say
 *   await setup.failover()                                // SENTINEL FAILOVER, asked again until it happens, or:
 *   setup.processes.get(before)?.kill('SIGKILL')          // the primary lost
 *   const after = await setup.waitForFailover(before)     // the promoted replica, once every sentinel names it
 *   await setup.waitForReplica()                          // before another failover: the demoted one in sync
 *   await setup.stop()
 *
 * `processes` holds every process (data nodes and sentinels) by `host:port`; `nodes` the data
 * nodes (primary first, as started). Where `redis-server` and `redis-cli` are missing,
 * `hasRedisServer` is false and the tests skip (describe.runIf / describe.skipIf).
 */
import type { ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { alive, answering, hasRedisServer, processGroup, redisNodeArgs } from './redis_processes.ts'

export { hasRedisServer }

export interface LocalRedisSentinel {
  /** The three sentinels, `127.0.0.1:<port>`. */
  sentinels: string[]
  /** The master name they monitor. */
  name: string
  /** The data nodes, `127.0.0.1:<port>`: the first primary, then its replica. */
  nodes: string[]
  /** The primary (`host:port`) as the first sentinel that answers names it. */
  primary(): Promise<string>
  /**
   * A planned failover: `SENTINEL FAILOVER` on a live sentinel, asked again (every 8 s at most) until
   * every sentinel names another primary: a sentinel refuses it (`NOGOODSLAVE`) until it has the
   * replica's INFO, and gives an attempt up after `failover-timeout` without retrying it (a busy
   * machine saw both). The new primary's `host:port`.
   */
  failover(timeoutMs?: number): Promise<string>
  /** `SENTINEL FAILOVER`, asked again until a sentinel accepts it (`OK`); does not wait for the switch. */
  askFailover(timeoutMs?: number): Promise<void>
  /** Waits until every live sentinel names a primary other than `old`, and that node says it is master. */
  waitForFailover(old: string, timeoutMs?: number): Promise<string>
  /**
   * Waits until a live data node other than the primary is in sync with it and every live sentinel
   * lists it as a replica in good standing (flags `slave` only), as a failover needs: after one,
   * the demoted primary takes a while (the sentinels look at replicas every 10 s). Its `host:port`.
   */
  waitForReplica(timeoutMs?: number): Promise<string>
  /** Every process, data nodes and sentinels, by its `host:port`. */
  processes: Map<string, ChildProcess>
  /** `redis-cli` against one node or sentinel, e.g. `cli(sentinel, 'sentinel', 'failover', name)`. */
  cli(node: string, ...args: string[]): Promise<string>
  /**
   * Starts a killed data node again (same port and folder), with `replicaOf` as a replica of that
   * primary at once (as a supervisor asking the sentinels would), else as a master the sentinels
   * turn into a replica when they next look at it.
   */
  restart(node: string, replicaOf?: string): Promise<void>
  stop(): Promise<void>
}

async function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

/** The flags `SENTINEL REPLICAS` (as redis-cli prints it: a key, then its value, line by line) gives `node`. */
function replicaFlags(answer: string, node: string): string | undefined {
  const lines = answer.trim().split('\n')
  let name: string | undefined
  for (let i = 0; i + 1 < lines.length; i += 2) {
    if (lines[i] === 'name') name = lines[i + 1]
    else if (lines[i] === 'flags' && name === node) return lines[i + 1]
  }
  return undefined
}

/** Starts a primary, a replica and three sentinels monitoring them as `name`. */
export async function startRedisSentinel({
  name = 'gatehouse',
  password,
}: {
  name?: string
  password?: string
} = {}): Promise<LocalRedisSentinel> {
  const group = processGroup('gatehouse-redis-sentinel-', 'local Redis Sentinel', password)
  const { dir, processes, cli, stop, waitFor } = group
  const ports = new Set<number>()
  while (ports.size < 5) ports.add(await freePort())
  const [primaryPort, replicaPort, ...sentinelPorts] = [...ports] as [number, number, ...number[]]
  const nodes = [primaryPort, replicaPort].map((port) => `127.0.0.1:${port}`)
  const sentinels = sentinelPorts.map((port) => `127.0.0.1:${port}`)
  const start = group.start
  const dataNode = (port: number) => [
    ...redisNodeArgs(port, dir, `node-${port}.log`),
    ...(password === undefined ? [] : ['--requirepass', password, '--masterauth', password]),
  ]
  /** The primary as `sentinel` names it, or undefined. */
  const named = async (sentinel: string): Promise<string | undefined> => {
    const [host, port] = (await cli(sentinel, 'sentinel', 'get-master-addr-by-name', name)).trim().split('\n')
    return host && port ? `${host}:${port}` : undefined
  }
  const primary = async (): Promise<string> => {
    for (const sentinel of sentinels) {
      if (!alive(processes.get(sentinel))) continue
      const found = await named(sentinel).catch(() => undefined)
      if (found) return found
    }
    throw new Error('local Redis Sentinel: no sentinel names a primary')
  }
  const waitForFailover = async (old: string, timeoutMs = 30_000): Promise<string> => {
    let promoted = ''
    await waitFor(
      `a primary other than ${old}`,
      async () => {
        const live = sentinels.filter((sentinel) => alive(processes.get(sentinel)))
        const answers = new Set(await Promise.all(live.map(named)))
        const [only] = [...answers]
        if (answers.size !== 1 || only === undefined || only === old) return false
        promoted = only
        return (await cli(only, 'role')).startsWith('master')
      },
      timeoutMs,
    )
    return promoted
  }
  const askFailover = async (timeoutMs = 20_000): Promise<void> => {
    let last = ''
    await waitFor(
      'SENTINEL FAILOVER accepted',
      async () => {
        const sentinel = sentinels.find((one) => alive(processes.get(one))) as string
        last = (await cli(sentinel, 'sentinel', 'failover', name).catch((err: Error) => err.message)).trim()
        return last === 'OK'
      },
      timeoutMs,
    ).catch((err: Error) => {
      throw new Error(`${err.message} (last answer: ${last})`)
    })
  }
  const failover = async (timeoutMs = 60_000): Promise<string> => {
    const before = await primary()
    const deadline = Date.now() + timeoutMs
    let last = ''
    while (Date.now() < deadline) {
      const sentinel = sentinels.find((one) => alive(processes.get(one))) as string
      last = (await cli(sentinel, 'sentinel', 'failover', name).catch((err: Error) => err.message)).trim()
      const wait = Math.min(8_000, Math.max(100, deadline - Date.now()))
      if (last === 'OK') {
        const after = await waitForFailover(before, wait).catch(() => undefined)
        if (after) return after
      } else {
        // Already switched (a sentinel refusing as the failover it started ends), or not yet able to.
        const after = await waitForFailover(before, 500).catch(() => undefined)
        if (after) return after
      }
    }
    throw new Error(
      `local Redis Sentinel: no failover away from ${before} within ${timeoutMs} ms (last answer: ${last})`,
    )
  }
  const waitForReplica = async (timeoutMs = 30_000): Promise<string> => {
    let replica = ''
    await waitFor(
      'a replica in sync, in good standing with every sentinel',
      async () => {
        const current = await primary()
        const candidates = nodes.filter((node) => node !== current && alive(processes.get(node)))
        for (const node of candidates) {
          if (!(await cli(node, 'info', 'replication')).includes('master_link_status:up')) continue
          const live = sentinels.filter((sentinel) => alive(processes.get(sentinel)))
          const seen = await Promise.all(live.map((sentinel) => cli(sentinel, 'sentinel', 'replicas', name)))
          if (seen.every((answer) => replicaFlags(answer, node) === 'slave')) {
            replica = node
            return true
          }
        }
        return false
      },
      timeoutMs,
    )
    return replica
  }
  try {
    start(nodes[0] as string, dataNode(primaryPort))
    start(nodes[1] as string, [...dataNode(replicaPort), '--replicaof', '127.0.0.1', String(primaryPort)])
    for (const [i, port] of sentinelPorts.entries()) {
      const conf = join(dir, `sentinel-${port}.conf`)
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `logfile sentinel-${port}.log`,
          `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 2000`,
          `sentinel parallel-syncs ${name} 1`,
          ...(password === undefined ? [] : [`requirepass ${password}`, `sentinel auth-pass ${name} ${password}`]),
          '',
        ].join('\n'),
      )
      start(sentinels[i] as string, [conf, '--sentinel'])
    }
    for (const node of [...nodes, ...sentinels]) await answering(group, node)
    await waitFor(
      'the replica in sync',
      async () => (await cli(nodes[1] as string, 'info', 'replication')).includes('master_link_status:up'),
      20_000,
    )
    for (const sentinel of sentinels) {
      await waitFor(
        `${sentinel} seeing the replica and the other sentinels`,
        async () => {
          const replicas = await cli(sentinel, 'sentinel', 'replicas', name)
          const others = await cli(sentinel, 'sentinel', 'sentinels', name)
          return (
            replicas.includes(String(replicaPort)) &&
            sentinelPorts.filter((p) => others.includes(String(p))).length >= 2
          )
        },
        30_000,
      )
    }
    const restart = async (node: string, replicaOf?: string) => {
      const port = Number(node.split(':')[1])
      const follow = replicaOf ? ['--replicaof', ...replicaOf.split(':')] : []
      start(node, [...dataNode(port), ...follow])
      await answering(group, node)
    }
    // A failover needs the replica in good standing with the sentinels, not only listed.
    await waitForReplica()
    return {
      sentinels,
      name,
      nodes,
      primary,
      failover,
      askFailover,
      waitForFailover,
      waitForReplica,
      processes,
      cli,
      restart,
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
