/**
 * What the local Redis Cluster and Sentinel set-ups (redis_cluster.ts, redis_sentinel.ts) share:
 * a folder of `redis-server` processes on loopback, started by `host:port`, killed together by
 * `stop()` (or when the test process exits without it), `redis-cli` against one of them, and a
 * polling wait that names what it waited for.
 *
 *   const group = processGroup('gatehouse-redis-cluster-', 'local Redis Cluster')
 *   group.start('127.0.0.1:7000', [...redisNodeArgs(7000, group.dir, 'node-0.log'), '--cluster-enabled', 'yes'])
 *   await group.waitFor('127.0.0.1:7000 answering', async () => (await group.cli('127.0.0.1:7000', 'ping')).includes('PONG'))
 *   await group.stop()
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** True when `redis-server` and `redis-cli` can be run. */
export const hasRedisServer =
  spawnSync('redis-server', ['--version']).status === 0 && spawnSync('redis-cli', ['--version']).status === 0

export interface ProcessGroup {
  /** The temporary folder the processes run in (removed by `stop`). */
  dir: string
  /** Every process, by its `host:port`. */
  processes: Map<string, ChildProcess>
  /** Starts `redis-server args` in the folder as `hostPort` (again, after a kill). */
  start(hostPort: string, args: string[]): void
  /** `redis-cli` against one process, with the group's password if it has one. */
  cli(node: string, ...args: string[]): Promise<string>
  /** Polls `check` every 100 ms until it is true, or throws naming `what` after `timeoutMs`. */
  waitFor(what: string, check: () => Promise<boolean>, timeoutMs?: number): Promise<void>
  /** Kills every process (SIGKILL), waits for their exits and removes the folder. */
  stop(): Promise<void>
}

/** Whether `child` still runs. */
export const alive = (child: ChildProcess | undefined): boolean =>
  child !== undefined && child.exitCode === null && child.signalCode === null

/** A group of Redis processes in a new temporary folder; `label` names the set-up in errors. */
export function processGroup(prefix: string, label: string, password?: string): ProcessGroup {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  const processes = new Map<string, ChildProcess>()
  const killAll = (): void => {
    for (const child of processes.values()) child.kill('SIGKILL')
  }
  process.once('exit', killAll)
  return {
    dir,
    processes,
    start(hostPort, args) {
      processes.set(hostPort, spawn('redis-server', args, { cwd: dir, stdio: 'ignore' }))
    },
    async cli(node, ...args) {
      const [host, port] = node.split(':') as [string, string]
      const auth = password === undefined ? [] : ['--no-auth-warning', '-a', password]
      return (await run('redis-cli', ['-h', host, '-p', port, ...auth, ...args], { timeout: 5_000 })).stdout
    },
    async waitFor(what, check, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (Date.now() < deadline) {
        if (await check().catch(() => false)) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error(`${label}: ${what} not reached within ${timeoutMs} ms`)
    },
    async stop() {
      process.removeListener('exit', killAll)
      await Promise.all(
        [...processes.values()].map(
          (child) =>
            new Promise<void>((resolve) => {
              if (!alive(child)) return resolve()
              child.once('exit', () => resolve())
              child.kill('SIGKILL')
            }),
        ),
      )
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A data node's command line: `port` on 127.0.0.1, in `dir`, no persistence, logging to `logfile`. */
export function redisNodeArgs(port: number, dir: string, logfile: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--logfile',
    logfile,
  ]
}

/** Waits until `node` answers PING. */
export function answering(group: ProcessGroup, node: string): Promise<void> {
  return group.waitFor(`${node} answering`, async () => (await group.cli(node, 'ping')).includes('PONG'), 10_000)
}
