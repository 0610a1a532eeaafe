/**
 * The storage contract behind Redis Sentinel, and the store following the primary through a
 * failover (#43 items 2 and 3): a primary, a replica and three sentinels started here
 * (test/helpers/redis_sentinel.ts) and torn down afterwards. The failovers (SENTINEL FAILOVER, then
 * the primary killed) run with a store in this process and a standalone server (REDIS_SENTINELS)
 * writing through them, and print how long each took to answer again. The option, environment and
 * configuration file checks need no Redis. Skipped, saying so, only where `redis-server` is missing.
 */
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chooseStore, describeStore, openStore } from '../../bin/store.ts'
import { StoreConfigSchema } from '../../src/config/file.ts'
import { StoreUnavailableError } from '../../src/errors.ts'
import { type RedisStore, createRedisStore } from '../../src/storage/redis.ts'
import { sentinelClientOptions } from '../../src/storage/redis_sentinel.ts'
import { type LocalRedisSentinel, hasRedisServer, startRedisSentinel } from '../helpers/redis_sentinel.ts'
import { CONFIG, type Running, bin, freePort, launch, waitUntilServing, writeConfig } from '../runtime/server.ts'
import { codeRecord, describeStorageContract, uniqueId } from './contract.ts'

const env = (vars: Record<string, string>) => (name: string) => vars[name]
const epoch = () => Math.floor(Date.now() / 1000)

describe('#43 item 2: Sentinel options, environment and configuration file', () => {
  it('#43 item 2: the store takes exactly one of url, cluster and sentinel; the sentinel form is checked', () => {
    const sentinel = (value: unknown) => () => createRedisStore({ sentinel: value as never })
    expect(sentinel({ nodes: ['h:26379'] })).toThrow(/sentinel\.name: must be the name of the master/)
    expect(sentinel({ nodes: ['h:26379'], name: ' ' })).toThrow(/sentinel\.name/)
    expect(sentinel({ nodes: [], name: 'm' })).toThrow(/sentinel\.nodes: must be a non-empty array/)
    expect(sentinel({ nodes: ['h:26379', 'nohost'], name: 'm' })).toThrow(
      /sentinel\.nodes: each node must be "host:port", got "nohost"/,
    )
    expect(sentinel({ nodes: ['h:0'], name: 'm' })).toThrow(/host:port/)
    expect(sentinel(['h:26379'])).toThrow(/sentinel: must be \{ nodes/)
    expect(sentinel({ nodes: ['h:26379'], name: 'm', options: 'x' })).toThrow(/sentinel\.options: must be an object/)
    const both = { url: 'redis://h', sentinel: { nodes: ['h:26379'], name: 'm' } }
    expect(() => createRedisStore(both as never)).toThrow(
      /exactly one of url, cluster and sentinel \(got url and sentinel\)/,
    )
    const three = { ...both, cluster: ['h:7000'] }
    expect(() => createRedisStore(three as never)).toThrow(/got url and cluster and sentinel/)
    expect(() => createRedisStore({} as never)).toThrow(/exactly one of url, cluster and sentinel \(got none\)/)
    expect(() => createRedisStore({ sentinel: { nodes: ['[::1]:26379', 'h:1'], name: 'm' } })).not.toThrow()
  })

  it('#43 item 2: the Sentinel client keeps the store’s failure policy and follows the primary (READONLY reconnects)', () => {
    let ready = false
    const policy = { enableOfflineQueue: false, maxRetriesPerRequest: 0, socketTimeout: 2000, connectTimeout: 700 }
    const options = sentinelClientOptions(
      {
        nodes: ['h:26379'],
        name: 'm',
        options: { sentinelPassword: 's', maxRetriesPerRequest: 5, role: 'slave' } as never,
      },
      policy,
      () => ready,
    )
    expect(options).toMatchObject({
      ...policy,
      sentinels: [{ host: 'h', port: 26379 }],
      name: 'm',
      role: 'master',
      sentinelPassword: 's',
      sentinelCommandTimeout: 700,
      failoverDetector: true,
    })
    const reconnect = options.reconnectOnError as (err: Error) => boolean
    expect(reconnect(new Error("READONLY You can't write against a read only replica."))).toBe(true)
    expect(reconnect(new Error('ERR wrong number of arguments'))).toBe(false)
    // Sentinels out of reach: connect() fails before the first connection, is retried after it.
    const retry = options.sentinelRetryStrategy as (times: number) => number | null
    expect(retry(1)).toBeNull()
    ready = true
    expect(retry(1)).toBe(100)
    expect(retry(50)).toBe(1000)
  })

  it('#43 item 2: sentinels that cannot be reached fail connect() with StoreUnavailableError naming them and the master', async () => {
    const store = createRedisStore({
      sentinel: { nodes: ['127.0.0.1:1', '127.0.0.1:2'], name: 'mymaster' },
      connectTimeout: 500,
    })
    await expect(store.connect()).rejects.toThrow(
      /cannot connect to Redis at sentinels 127\.0\.0\.1:1,127\.0\.0\.1:2 \(master mymaster\): All sentinels are unreachable/,
    )
    await expect(store.clients.get('x')).rejects.toBeInstanceOf(StoreUnavailableError)
    await store.close()
  })

  it('#43 item 2: REDIS_SENTINELS with REDIS_SENTINEL_NAME; REDIS_CLUSTER_NODES wins over it, it wins over REDIS_URL', () => {
    const sentinels = { REDIS_SENTINELS: '10.0.0.1:26379, 10.0.0.2:26379', REDIS_SENTINEL_NAME: 'mymaster' }
    const config = chooseStore(env({ ...sentinels, REDIS_URL: 'redis://127.0.0.1:1' }), undefined)
    expect(config).toEqual({
      type: 'redis',
      sentinel: { nodes: ['10.0.0.1:26379', '10.0.0.2:26379'], name: 'mymaster' },
    })
    expect(describeStore(config)).toBe('Redis Sentinel store at 10.0.0.1:26379,10.0.0.2:26379 (master mymaster)')
    expect(chooseStore(env({ ...sentinels, REDIS_CLUSTER_NODES: 'h:7000' }), undefined)).toEqual({
      type: 'redis',
      cluster: ['h:7000'],
    })
    expect(
      chooseStore(env({ ...sentinels, GATEHOUSE_STORE: 'redis', GATEHOUSE_REDIS_PREFIX: 'p:' }), undefined),
    ).toEqual({
      type: 'redis',
      sentinel: { nodes: ['10.0.0.1:26379', '10.0.0.2:26379'], name: 'mymaster' },
      prefix: 'p:',
    })
    expect(() => chooseStore(env({ REDIS_SENTINELS: 'h:26379' }), undefined)).toThrow(
      /REDIS_SENTINELS needs REDIS_SENTINEL_NAME/,
    )
    expect(() => chooseStore(env({ REDIS_SENTINELS: 'h:26379,nohost', REDIS_SENTINEL_NAME: 'm' }), undefined)).toThrow(
      /REDIS_SENTINELS: each node must be host:port, got "nohost"/,
    )
    expect(() => chooseStore(env({ GATEHOUSE_STORE: 'redis' }), undefined)).toThrow(/REDIS_SENTINELS/)
  })

  it('#43 item 2: the configuration file takes a redis store with url, cluster or sentinel, exactly one', () => {
    const parse = (store: unknown) => v.safeParse(StoreConfigSchema, store).success
    expect(parse({ type: 'redis', sentinel: { nodes: ['10.0.0.1:26379', '[::1]:26380'], name: 'mymaster' } })).toBe(
      true,
    )
    expect(parse({ type: 'redis', sentinel: { nodes: ['h:26379'] } })).toBe(false)
    expect(parse({ type: 'redis', sentinel: { nodes: ['h:26379'], name: '' } })).toBe(false)
    expect(parse({ type: 'redis', sentinel: { nodes: [], name: 'm' } })).toBe(false)
    expect(parse({ type: 'redis', sentinel: { nodes: ['h'], name: 'm' } })).toBe(false)
    expect(parse({ type: 'redis', sentinel: { nodes: ['h:1'], name: 'm', user: 'x' } })).toBe(false)
    expect(
      parse({ type: 'redis', sentinel: { nodes: ['h:1'], name: 'm', password: 'p', sentinelPassword: 's' } }),
    ).toBe(true)
    expect(parse({ type: 'redis', url: 'redis://h', sentinel: { nodes: ['h:1'], name: 'm' } })).toBe(false)
    expect(parse({ type: 'redis', cluster: ['h:7000'], sentinel: { nodes: ['h:1'], name: 'm' } })).toBe(false)
  })
})

if (!hasRedisServer) {
  describe('Redis Sentinel store', () => {
    it.skip('needs redis-server and redis-cli on the PATH (apt-get install redis-server)', () => {})
  })
}

describe.runIf(hasRedisServer)('Redis Sentinel store', () => {
  let setup: LocalRedisSentinel
  beforeAll(async () => {
    setup = await startRedisSentinel()
  }, 60_000)
  afterAll(async () => {
    await setup?.stop()
  })
  const sentinel = () => ({ nodes: setup.sentinels, name: setup.name })

  let prefix = ''
  describeStorageContract({
    name: 'redis sentinel',
    async create({ now }) {
      prefix = `${uniqueId('gh-test')}:`
      const store = createRedisStore({ sentinel: sentinel(), prefix, now })
      await store.connect()
      return store
    },
    async cleanup() {
      const sweeper: RedisStore = createRedisStore({ sentinel: sentinel(), prefix })
      await sweeper.connect()
      await sweeper.clear()
      await sweeper.close()
    },
  })

  it('#43 item 2: REDIS_PASSWORD and REDIS_SENTINEL_PASSWORD open a store behind sentinels that require them', async () => {
    const locked = await startRedisSentinel({ name: 'locked', password: 'sesame' })
    const vars = { REDIS_SENTINELS: locked.sentinels.join(','), REDIS_SENTINEL_NAME: 'locked' }
    const lockedPrefix = `${uniqueId('gh-locked')}:`
    try {
      const without = chooseStore(env({ ...vars, GATEHOUSE_REDIS_PREFIX: lockedPrefix }), undefined)
      await expect(openStore(without)).rejects.toThrow(/cannot connect to Redis at sentinels .* \(master locked\)/)
      const config = chooseStore(
        env({
          ...vars,
          GATEHOUSE_REDIS_PREFIX: lockedPrefix,
          REDIS_PASSWORD: 'sesame',
          REDIS_SENTINEL_PASSWORD: 'sesame',
        }),
        undefined,
      )
      expect(describeStore(config)).not.toContain('sesame')
      const store = (await openStore(config)) as RedisStore
      try {
        const record = codeRecord(epoch())
        await store.codes.insert(record)
        expect((await store.codes.consume(record.id, epoch())).status).toBe('ok')
        expect(await locked.cli(await locked.primary(), 'exists', `${lockedPrefix}code:${record.id}`)).toContain('1')
      } finally {
        await store.clear()
        await store.close()
      }
    } finally {
      await locked.stop()
    }
  }, 60_000)

  describe('#43 item 2: through a failover', () => {
    const failoverPrefix = `${uniqueId('gh-failover')}:`
    let store: RedisStore
    let server: Running
    let config: ReturnType<typeof writeConfig>
    let base = ''

    beforeAll(async () => {
      store = createRedisStore({
        sentinel: sentinel(),
        prefix: failoverPrefix,
        connectTimeout: 1000,
        commandTimeout: 1000,
      })
      await store.connect()
      config = writeConfig({ ...CONFIG, throttle: false })
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      server = launch([bin('tsx'), 'bin/serve_node.ts', '--config', config.path], {
        HOST: '127.0.0.1',
        PORT: String(port),
        ISSUER: base,
        REDIS_SENTINELS: setup.sentinels.join(','),
        REDIS_SENTINEL_NAME: setup.name,
        GATEHOUSE_REDIS_PREFIX: failoverPrefix,
      })
      await waitUntilServing(server, `${base}/.well-known/openid-configuration`, 40_000)
      expect(server.output().stdout + server.output().stderr).toMatch(/Redis Sentinel store at .* \(master gatehouse\)/)
    }, 60_000)
    afterAll(async () => {
      await server?.stop().catch(() => undefined)
      config?.remove()
      await store?.clear().catch(() => undefined)
      await store?.close()
    })

    /** A write and a read through the store in this process: a code inserted and redeemed. */
    async function storeWrites(): Promise<string> {
      const record = codeRecord(epoch())
      await store.codes.insert(record)
      const result = await store.codes.consume(record.id, epoch())
      if (result.status !== 'ok') throw new Error(`consume: ${result.status}`)
      return `${failoverPrefix}code:${record.id}`
    }

    /** A token from the standalone server, then revoked there (a write): the key of its revocation. */
    async function serverWrites(statuses: number[]): Promise<string> {
      const auth = `Basic ${btoa('rt-service:rt-service-secret')}`
      const headers = { 'content-type': 'application/x-www-form-urlencoded', authorization: auth }
      const token = await fetch(`${base}/connect/token`, {
        method: 'POST',
        headers,
        body: 'grant_type=client_credentials&scope=api1',
      })
      statuses.push(token.status)
      if (token.status !== 200) throw new Error(`token: ${token.status}`)
      const { access_token } = (await token.json()) as { access_token: string }
      const revoke = await fetch(`${base}/connect/revoke`, { method: 'POST', headers, body: `token=${access_token}` })
      statuses.push(revoke.status)
      if (revoke.status !== 200) throw new Error(`revoke: ${revoke.status}`)
      const payload = JSON.parse(atob((access_token.split('.')[1] as string).replace(/-/g, '+').replace(/_/g, '/')))
      return `${failoverPrefix}revoked-at:${payload.jti}`
    }

    /**
     * Runs `probe` (a write, giving its key) every 100 ms from `since` until a write lands on the
     * promoted primary (known once `failover` resolves): the seconds from `since` to that write,
     * the tries that failed on the way and the keys of the writes that answered.
     */
    async function untilOnNewPrimary(since: number, failover: Promise<string>, probe: () => Promise<string>) {
      let promoted: string | undefined
      void failover.then((node) => {
        promoted = node
      })
      let failures = 0
      const acknowledged: string[] = []
      while (Date.now() - since < 20_000) {
        const key = await probe().catch(() => undefined)
        if (key === undefined) failures++
        else {
          acknowledged.push(key)
          if (promoted !== undefined && (await setup.cli(promoted, 'exists', key)).trim() === '1') {
            return { seconds: (Date.now() - since) / 1000, failures, acknowledged }
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error(`no write reached the promoted primary ${promoted} within 20 s (${failures} failed tries)`)
    }

    /** Loses the primary by `lose`, then shows the store and the server write to the promoted one. */
    async function survives(what: string, lose: (primary: string) => Promise<void>): Promise<void> {
      const before = await setup.primary()
      expect(await setup.cli(before, 'exists', await storeWrites())).toContain('1')
      expect(await setup.cli(before, 'exists', await serverWrites([]))).toContain('1')
      const statuses: number[] = []
      const started = Date.now()
      await lose(before)
      let failoverAt = 0
      const failover = setup.waitForFailover(before).then((node) => {
        failoverAt = Date.now()
        return node
      })
      const [storeBack, serverBack, after] = await Promise.all([
        untilOnNewPrimary(started, failover, storeWrites),
        untilOnNewPrimary(started, failover, () => serverWrites(statuses)),
        failover,
      ])
      expect(after).not.toBe(before)
      expect(await setup.cli(after, 'role')).toMatch(/^master/)
      // Writes that answered but are not on the new primary: taken by the old one after the
      // promotion, or not yet replicated when it died (asynchronous replication).
      const acknowledged = [...storeBack.acknowledged, ...serverBack.acknowledged]
      const kept = Number(await setup.cli(after, 'exists', ...acknowledged))
      const failed = statuses.filter((status) => status !== 200)
      const seconds = (at: number) => ((at - started) / 1000).toFixed(1)
      console.log(
        `#43 item 2 ${what}: primary ${before} → ${after} (named by every sentinel after ${seconds(failoverAt)} s); ` +
          `writes on the new primary from the store after ${storeBack.seconds.toFixed(1)} s ` +
          `(${storeBack.failures} failed tries), from the standalone server after ${serverBack.seconds.toFixed(1)} s ` +
          `(answers: ${statuses.length - failed.length} × 200, ${failed.length} × ${[...new Set(failed)].join('/') || '-'}); ` +
          `${acknowledged.length} writes answered since the loss, ${acknowledged.length - kept} of them not on the new primary`,
      )
      expect(failed.every((status) => status === 503)).toBe(true)
      // Following the primary is the client's: within 3 s of the sentinels naming it (failoverDetector:
      // without it, a manual failover left the store writing to the old primary for ~10 s more).
      for (const back of [storeBack, serverBack]) expect(started + back.seconds * 1000 - failoverAt).toBeLessThan(3000)
    }

    it('#43 item 2: SENTINEL FAILOVER: the store and the standalone server follow the promoted replica', async () => {
      await survives('SENTINEL FAILOVER', async () => {
        await setup.cli(setup.sentinels[0] as string, 'sentinel', 'failover', setup.name)
      })
    }, 40_000)

    it('#43 item 2: the primary killed (SIGKILL): the store and the standalone server follow the promoted replica', async () => {
      // The demoted primary of the last test is the replica now: in sync, and seen so by every sentinel.
      const primary = await setup.primary()
      const replica = setup.nodes.find((node) => node !== primary) as string
      const deadline = Date.now() + 20_000
      for (;;) {
        const link = (await setup.cli(replica, 'info', 'replication')).includes('master_link_status:up')
        const seen = await Promise.all(
          setup.sentinels.map(async (s) =>
            /flags\nslave\n/.test(await setup.cli(s, 'sentinel', 'replicas', setup.name)),
          ),
        )
        if (link && seen.every(Boolean)) break
        if (Date.now() > deadline) throw new Error(`${replica} not a healthy replica within 20 s`)
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
      await survives('primary killed', async (before) => {
        setup.processes.get(before)?.kill('SIGKILL')
      })
    }, 60_000)
  })
})
