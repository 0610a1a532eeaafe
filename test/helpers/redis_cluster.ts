/**
 * A local Redis Cluster for tests: six `redis-server --cluster-enabled yes` processes (three
 * masters, a replica each) on free ports in a temporary folder, joined by `redis-cli --cluster
 * create`, ready once every node reports `cluster_state:ok`. `stop()` kills the processes and
 * removes the folder. `hasRedisServer` tells whether the binaries are there (tests skip otherwise).
 */
import { type ChildProcess, execFile } from 'node:child_process'
import { createServer } from 'node:net'
import { promisify } from 'node:util'
import { answering, hasRedisServer, processGroup, redisNodeArgs } from './redis_processes.ts'

export { hasRedisServer }

const run = promisify(execFile)

export interface LocalRedisCluster {
  /** The seed nodes, `127.0.0.1:<port>`, masters and replicas. */
  nodes: string[]
  /** Each node's process, by its `host:port`. */
  processes: Map<string, ChildProcess>
  /** `redis-cli` against one node, e.g. `cli(node, 'cluster', 'info')`. */
  cli(node: string, ...args: string[]): Promise<string>
  /** Starts a node that was killed again (same port, same folder), resolving once it answers. */
  restart(node: string): Promise<void>
  stop(): Promise<void>
}

/** A free TCP port whose cluster bus port (port + 10000) is free too. */
async function freePort(taken: Set<number>): Promise<number> {
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const server = createServer()
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => {
        const address = server.address()
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
      })
    })
  for (;;) {
    const port = await listen(0)
    if (port > 55_000 || taken.has(port) || taken.has(port + 10_000)) continue
    const bus = await listen(port + 10_000).catch(() => 0)
    if (bus === 0) continue
    taken.add(port)
    return port
  }
}

/**
 * Starts a cluster of `masters` masters with one replica each (default 3 + 3); `serverArgs` are
 * added to every node's command line (e.g. `['--cluster-require-full-coverage', 'no']`).
 */
export async function startRedisCluster({ masters = 3, serverArgs = [] as string[] } = {}): Promise<LocalRedisCluster> {
  const group = processGroup('gatehouse-redis-cluster-', 'local Redis Cluster')
  const { dir, processes, cli, stop } = group
  const waitFor = group.waitFor
  const taken = new Set<number>()
  const ports: number[] = []
  for (let i = 0; i < masters * 2; i++) ports.push(await freePort(taken))
  const nodes = ports.map((port) => `127.0.0.1:${port}`)
  /** Starts node `i` (again, after a kill: it rejoins with its nodes.conf, as a replica once its slots moved). */
  const spawnNode = (i: number, port: number) => {
    const cluster = ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`]
    group.start(nodes[i] as string, [
      ...redisNodeArgs(port, dir, `node-${i}.log`),
      ...cluster,
      ...['--cluster-node-timeout', '2000'],
      ...serverArgs,
    ])
  }
  try {
    for (const [i, port] of ports.entries()) spawnNode(i, port)
    for (const node of nodes) await answering(group, node)
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '1', '--cluster-yes'], {
      timeout: 60_000,
    })
    for (const node of nodes) {
      await waitFor(
        `cluster_state:ok on ${node}`,
        async () => (await cli(node, 'cluster', 'info')).includes('cluster_state:ok'),
        30_000,
      )
    }
    // Replication in sync (WAIT and failover need it): every replica's link up, every master's replica online.
    for (const node of nodes) {
      await waitFor(
        `replication on ${node}`,
        async () => {
          const info = await cli(node, 'info', 'replication')
          return info.includes('role:slave')
            ? info.includes('master_link_status:up')
            : /slave0:.*state=online/.test(info)
        },
        30_000,
      )
    }
    const restart = async (node: string) => {
      const i = nodes.indexOf(node)
      spawnNode(i, ports[i] as number)
      await answering(group, node)
    }
    return { nodes, processes, cli, restart, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
