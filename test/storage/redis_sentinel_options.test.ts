/**
 * Redis Sentinel (#43 item 2): the store's `sentinel` option, REDIS_SENTINELS / REDIS_SENTINEL_NAME
 * for the standalone server and the configuration file's `sentinel`, checked at the boundary; the
 * Sentinel client's options (the store's failure policy, following the primary); sentinels out of
 * reach. None needs a Redis: the Sentinel setup's tests are in redis_sentinel.test.ts.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { chooseStore, describeStore } from '../../bin/store.ts'
import { StoreConfigSchema } from '../../src/config/file.ts'
import { StoreUnavailableError } from '../../src/errors.ts'
import { createRedisStore } from '../../src/storage/redis.ts'
import { sentinelClientOptions } from '../../src/storage/redis_sentinel.ts'

const env = (vars: Record<string, string>) => (name: string) => vars[name]

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
