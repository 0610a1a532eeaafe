/**
 * The storage contract on a Redis Cluster (#43 items 1 and 3): three masters with a replica each,
 * started here (test/helpers/redis_cluster.ts) and torn down afterwards. Skipped, saying so, only
 * where `redis-server` is not installed.
 */
import calculateSlot from 'cluster-key-slot'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chooseStore, describeStore, openStore } from '../../bin/store.ts'
import { StoreConfigSchema } from '../../src/config/file.ts'
import { StoreUnavailableError } from '../../src/errors.ts'
import { type RedisStore, createRedisStore } from '../../src/storage/redis.ts'
import { type LocalRedisCluster, hasRedisServer, startRedisCluster } from '../helpers/redis_cluster.ts'
import { codeRecord, describeStorageContract, refreshRecord, uniqueId } from './contract.ts'

if (!hasRedisServer) {
  describe('Redis Cluster store', () => {
    it.skip('needs redis-server and redis-cli on the PATH (apt-get install redis-server)', () => {})
  })
}

describe.runIf(hasRedisServer)('Redis Cluster store', () => {
  let cluster: LocalRedisCluster
  beforeAll(async () => {
    cluster = await startRedisCluster()
  }, 90_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  let prefix = ''
  describeStorageContract({
    name: 'redis cluster',
    async create({ now }) {
      prefix = `${uniqueId('gh-test')}:`
      const store = createRedisStore({ cluster: cluster.nodes, prefix, now })
      await store.connect()
      return store
    },
    async cleanup() {
      const sweeper: RedisStore = createRedisStore({ cluster: cluster.nodes, prefix })
      await sweeper.connect()
      await sweeper.clear()
      await sweeper.close()
    },
  })

  // #43 item 4: the same guarantees when the writes that must survive a failover wait for a replica.
  let waitPrefix = ''
  describeStorageContract({
    name: 'redis cluster, waitReplicas 1',
    async create({ now }) {
      waitPrefix = `${uniqueId('gh-test-wait')}:`
      const store = createRedisStore({
        cluster: cluster.nodes,
        prefix: waitPrefix,
        now,
        waitReplicas: 1,
        waitTimeout: 1500,
      })
      await store.connect()
      return store
    },
    async cleanup() {
      const sweeper: RedisStore = createRedisStore({ cluster: cluster.nodes, prefix: waitPrefix })
      await sweeper.connect()
      await sweeper.clear()
      await sweeper.close()
    },
  })

  /** Every key under `prefix`, from every master, with the master that holds it. */
  async function keysByMaster(store: string): Promise<Map<string, string[]>> {
    const byMaster = new Map<string, string[]>()
    for (const node of cluster.nodes) {
      if (!(await cluster.cli(node, 'role')).startsWith('master')) continue
      const keys = (await cluster.cli(node, '--scan', '--pattern', `${store}*`)).split('\n').filter(Boolean)
      byMaster.set(node, keys)
    }
    return byMaster
  }

  it('#43 item 1: the keys of 10,000 tokens spread over the slots and the three masters', async () => {
    const spreadPrefix = `${uniqueId('gh-spread')}:`
    const now = Math.floor(Date.now() / 1000)
    const store = createRedisStore({ cluster: cluster.nodes, prefix: spreadPrefix, now: () => now })
    await store.connect()
    try {
      for (let batch = 0; batch < 20; batch++) {
        await Promise.all(
          Array.from({ length: 250 }, async () => {
            const familyId = uniqueId('family')
            await store.codes.insert(codeRecord(now, { familyId }))
            await store.refreshTokens.insert(refreshRecord(now, { familyId }))
          }),
        )
      }
      const byMaster = await keysByMaster(spreadPrefix)
      const all = [...byMaster.values()].flat()
      const perSlot = new Map<number, number>()
      for (const key of all) perSlot.set(calculateSlot(key), (perSlot.get(calculateSlot(key)) ?? 0) + 1)
      const shares = [...byMaster.entries()].map(
        ([node, keys]) => `${node} ${((100 * keys.length) / all.length).toFixed(1)}%`,
      )
      const busiest = Math.max(...perSlot.values())
      console.log(
        `#43 spread: ${all.length} keys of 5,000 codes + 5,000 refresh tokens (record + family pointer) ` +
          `in ${perSlot.size} of 16384 slots, at most ${busiest} keys in one slot; per master: ${shares.join(', ')}`,
      )
      expect(all).toHaveLength(15_000)
      expect(perSlot.size).toBeGreaterThan(8_000)
      expect(busiest).toBeLessThan(15)
      for (const keys of byMaster.values()) expect(keys.length / all.length).toBeGreaterThan(0.25)
    } finally {
      await store.clear()
      await store.close()
    }
  }, 60_000)

  it('#43 item 1: a rotation’s two tokens share a slot (their family’s); clear() empties every master', async () => {
    const rotatePrefix = `${uniqueId('gh-rotate')}:`
    const now = Math.floor(Date.now() / 1000)
    const store = createRedisStore({ cluster: cluster.nodes, prefix: rotatePrefix, now: () => now })
    await store.connect()
    try {
      const first = refreshRecord(now)
      await store.refreshTokens.insert(first)
      const next = refreshRecord(now, { familyId: first.familyId })
      expect((await store.refreshTokens.rotate(first.id, next, now)).status).toBe('ok')
      const keys = [...(await keysByMaster(rotatePrefix)).values()].flat().filter((key) => key.includes(':rt:'))
      expect(keys).toHaveLength(2)
      expect(new Set(keys.map((key) => calculateSlot(key))).size).toBe(1)
      await store.clear()
      expect([...(await keysByMaster(rotatePrefix)).values()].flat()).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('#44 item 2: a cluster store has no one-step redemption (a code, its token, grant and marks span hash slots): the grants take their steps', async () => {
    const store = createRedisStore({ cluster: cluster.nodes, prefix: `${uniqueId('gh-steps')}:` })
    try {
      expect(store.codes.redeem).toBeUndefined()
      expect(store.refreshTokens.rotateUnlessRevoked).toBeUndefined()
    } finally {
      await store.close()
    }
  })

  it('#43 item 1: options are checked at the boundary', () => {
    expect(() => createRedisStore({ cluster: [] })).toThrow(/cluster: must be a non-empty array/)
    expect(() => createRedisStore({ cluster: ['localhost'] })).toThrow(/each node must be "host:port", got "localhost"/)
    expect(() => createRedisStore({ cluster: ['h:70000'] })).toThrow(/host:port/)
    expect(() => createRedisStore({ cluster: ['h:7000'], prefix: 'a{b}:' })).toThrow(/prefix: must not contain/)
    // @ts-expect-error both forms at once
    expect(() => createRedisStore({ url: 'redis://h', cluster: ['h:7000'] })).toThrow(
      /exactly one of url, cluster and sentinel \(got url and cluster\)/,
    )
  })

  it('#43 item 1: an unreachable cluster fails with StoreUnavailableError naming its seeds', async () => {
    const store = createRedisStore({ cluster: ['127.0.0.1:1'], connectTimeout: 500 })
    await expect(store.connect()).rejects.toThrow(/cannot connect to Redis at cluster 127\.0\.0\.1:1/)
    await expect(store.clients.get('x')).rejects.toBeInstanceOf(StoreUnavailableError)
    await store.close()
  })

  it('#43 item 1: REDIS_CLUSTER_NODES opens the standalone server’s store on the cluster (and wins over REDIS_URL)', async () => {
    const env = (vars: Record<string, string>) => (name: string) => vars[name]
    const nodes = cluster.nodes.slice(0, 2).join(', ')
    const config = chooseStore(env({ REDIS_CLUSTER_NODES: nodes, REDIS_URL: 'redis://127.0.0.1:1' }), undefined)
    expect(config).toEqual({ type: 'redis', cluster: cluster.nodes.slice(0, 2) })
    expect(describeStore(config)).toBe(`Redis Cluster store at ${cluster.nodes.slice(0, 2).join(',')}`)
    expect(
      chooseStore(
        env({ GATEHOUSE_STORE: 'redis', REDIS_CLUSTER_NODES: 'h:1', GATEHOUSE_REDIS_PREFIX: 'p:' }),
        undefined,
      ),
    ).toEqual({ type: 'redis', cluster: ['h:1'], prefix: 'p:' })
    expect(() => chooseStore(env({ REDIS_CLUSTER_NODES: 'h:1,nohost' }), undefined)).toThrow(
      /REDIS_CLUSTER_NODES: each node must be host:port, got "nohost"/,
    )
    const store = (await openStore({
      type: 'redis',
      cluster: cluster.nodes,
      prefix: `${uniqueId('gh-open')}:`,
    })) as RedisStore
    try {
      const record = codeRecord(Math.floor(Date.now() / 1000))
      await store.codes.insert(record)
      expect((await store.codes.consume(record.id, Math.floor(Date.now() / 1000))).status).toBe('ok')
    } finally {
      await store.clear()
      await store.close()
    }
  })

  it('#43 item 4: REDIS_WAIT_REPLICAS / REDIS_WAIT_TIMEOUT and the file’s waitReplicas / waitTimeout reach the store', async () => {
    const env = (vars: Record<string, string>) => (name: string) => vars[name]
    const config = chooseStore(
      env({ REDIS_CLUSTER_NODES: cluster.nodes.join(','), REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT: '1500' }),
      undefined,
    )
    expect(config).toEqual({ type: 'redis', cluster: cluster.nodes, waitReplicas: 1, waitTimeout: 1500 })
    expect(chooseStore(env({ REDIS_URL: 'redis://h:1', REDIS_WAIT_REPLICAS: '2' }), undefined)).toEqual({
      type: 'redis',
      url: 'redis://h:1',
      waitReplicas: 2,
    })
    expect(() => chooseStore(env({ REDIS_URL: 'redis://h:1', REDIS_WAIT_REPLICAS: 'one' }), undefined)).toThrow(
      /REDIS_WAIT_REPLICAS must be a whole number, got "one"/,
    )
    // #43 review: a store chosen by the configuration file takes them too.
    expect(
      chooseStore(env({ REDIS_WAIT_REPLICAS: '1' }), { type: 'redis', url: 'redis://h:1', waitTimeout: 100 }),
    ).toEqual({
      type: 'redis',
      url: 'redis://h:1',
      waitReplicas: 1,
      waitTimeout: 100,
    })
    const parse = (store: unknown) => v.safeParse(StoreConfigSchema, store).success
    expect(parse({ type: 'redis', url: 'redis://h:6379', waitReplicas: 1, waitTimeout: 100 })).toBe(true)
    expect(parse({ type: 'redis', url: 'redis://h:6379', waitReplicas: -1 })).toBe(false)
    expect(parse({ type: 'redis', url: 'redis://h:6379', waitTimeout: 0 })).toBe(false)
    // On the cluster every master has its replica: the waiting store works; asking for two fails closed.
    for (const [replicas, works] of [
      [1, true],
      [2, false],
    ] as const) {
      const store = (await openStore({
        type: 'redis',
        cluster: cluster.nodes,
        waitReplicas: replicas,
        prefix: `${uniqueId('gh-open')}:`,
      })) as RedisStore
      try {
        const insert = store.codes.insert(codeRecord(Math.floor(Date.now() / 1000)))
        if (works) await insert
        else await expect(insert).rejects.toThrow(/redis unavailable during codes\.insert/)
      } finally {
        await store.clear()
        await store.close()
      }
    }
  })

  it('#43 item 1: the configuration file takes a redis store with url or cluster, exactly one', () => {
    const parse = (store: unknown) => v.safeParse(StoreConfigSchema, store).success
    expect(parse({ type: 'redis', cluster: ['10.0.0.1:7000', '[::1]:7001'], prefix: 'gh:' })).toBe(true)
    expect(parse({ type: 'redis', url: 'redis://h:6379' })).toBe(true)
    expect(parse({ type: 'redis' })).toBe(false)
    expect(parse({ type: 'redis', url: 'redis://h:6379', cluster: ['h:7000'] })).toBe(false)
    expect(parse({ type: 'redis', cluster: [] })).toBe(false)
    expect(parse({ type: 'redis', cluster: ['h'] })).toBe(false)
  })
})
