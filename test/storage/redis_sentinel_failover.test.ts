/**
 * #43 item 4, the same test for Sentinel: two Gatehouse instances on a primary with one replica and
 * three sentinels (`down-after-milliseconds` 1000), a steady load of client credentials, code
 * redemption and refresh; the primary is killed (SIGKILL). Until the sentinels promote the replica
 * and the store follows, requests touching the store answer 503 with Retry-After (never a 500,
 * never past the store deadline); then every request answers again within 10 s; afterwards no code
 * or refresh token a 200 consumed is accepted again and, with `waitReplicas: 1`, none a 200 issued
 * is lost. The old primary comes back as a replica of the new one. Figures are printed.
 */
import { afterAll, describe, it } from 'vitest'
import { createRedisStore } from '../../src/storage/redis.ts'
import { expectFailoverFigures, runFailover } from '../helpers/failover_run.ts'
import { type LocalRedisSentinel, hasRedisServer, startRedisSentinel } from '../helpers/redis_sentinel.ts'
import { uniqueId } from './contract.ts'

/** Slack for a machine busy with other tests (the default is 250 ms). */
const WAIT_TIMEOUT_MS = 500

describe.runIf(hasRedisServer)('#43 item 4: a Sentinel primary lost under load', () => {
  const setups: LocalRedisSentinel[] = []
  afterAll(async () => {
    for (const setup of setups) await setup.stop()
  })

  for (const waitReplicas of [0, 1]) {
    it(`waitReplicas ${waitReplicas}: 503 with Retry-After during the switch, back within 10 s of the promotion, no second redemption${waitReplicas ? ', nothing answered 200 lost' : ''}`, async () => {
      const setup = await startRedisSentinel()
      setups.push(setup)
      const prefix = `${uniqueId('gh-failover')}:`
      const old = await setup.primary()
      let promoted = ''
      const figures = await runFailover({
        label: `Redis Sentinel, waitReplicas ${waitReplicas}`,
        async makeStore() {
          const sentinel = { nodes: setup.sentinels, name: setup.name }
          const store = createRedisStore({ sentinel, prefix, waitReplicas, waitTimeout: WAIT_TIMEOUT_MS })
          await store.connect()
          return store
        },
        kill: async () => {
          setup.processes.get(old)?.kill('SIGKILL')
          return old
        },
        promoted: async () => {
          promoted = await setup.waitForFailover(old, 100)
          return true
        },
        restart: () => setup.restart(old, promoted),
      })
      expectFailoverFigures(figures, { waitReplicas, othersServed: false })
    }, 120_000)
  }
})
