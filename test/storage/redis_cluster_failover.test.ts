/**
 * #43 item 4: a Redis Cluster master lost under load. Two Gatehouse instances on a local cluster
 * (three masters, a replica each, `cluster-node-timeout` 2 s, `cluster-require-full-coverage no`
 * so the other masters keep serving their slots) take client credentials, code redemption and
 * refresh; one master is killed (SIGKILL). Requests touching its slots answer 503 with Retry-After
 * (never a 500, never past the store deadline), the rest 200; once its replica is promoted every
 * request answers again within 10 s; afterwards no code or refresh token a 200 consumed is
 * accepted again and, with `waitReplicas: 1`, none a 200 issued is lost. Figures are printed.
 */
import { afterAll, describe, it } from 'vitest'
import { createRedisStore } from '../../src/storage/redis.ts'
import { expectFailoverFigures, runFailover } from '../helpers/failover_run.ts'
import { type LocalRedisCluster, hasRedisServer, startRedisCluster } from '../helpers/redis_cluster.ts'
import { uniqueId } from './contract.ts'

/** Slack for a machine busy with other tests (the default is 250 ms). */
const WAIT_TIMEOUT_MS = 500

/** A master and its replica, read from the replica's side. */
async function masterWithReplica(cluster: LocalRedisCluster): Promise<{ master: string; replica: string }> {
  for (const node of cluster.nodes) {
    const info = await cluster.cli(node, 'info', 'replication')
    const host = /master_host:(\S+)/.exec(info)?.[1]
    const port = /master_port:(\d+)/.exec(info)?.[1]
    if (info.includes('role:slave') && host && port) return { master: `${host}:${port}`, replica: node }
  }
  throw new Error('no replica found')
}

describe.runIf(hasRedisServer)('#43 item 4: a Redis Cluster master lost under load', () => {
  const clusters: LocalRedisCluster[] = []
  afterAll(async () => {
    for (const cluster of clusters) await cluster.stop()
  })

  for (const waitReplicas of [0, 1]) {
    it(`waitReplicas ${waitReplicas}: 503 with Retry-After on the lost slots, 200 elsewhere, back within 10 s of the promotion, no second redemption${waitReplicas ? ', nothing answered 200 lost' : ''}`, async () => {
      const cluster = await startRedisCluster({ serverArgs: ['--cluster-require-full-coverage', 'no'] })
      clusters.push(cluster)
      const prefix = `${uniqueId('gh-failover')}:`
      const { master, replica } = await masterWithReplica(cluster)
      const figures = await runFailover({
        label: `Redis Cluster, waitReplicas ${waitReplicas}`,
        async makeStore() {
          const store = createRedisStore({ cluster: cluster.nodes, prefix, waitReplicas, waitTimeout: WAIT_TIMEOUT_MS })
          await store.connect()
          return store
        },
        kill: async () => {
          cluster.processes.get(master)?.kill('SIGKILL')
          return master
        },
        promoted: async () => (await cluster.cli(replica, 'role')).startsWith('master'),
        restart: () => cluster.restart(master),
      })
      expectFailoverFigures(figures, { waitReplicas, othersServed: true })
    }, 120_000)
  }
})
