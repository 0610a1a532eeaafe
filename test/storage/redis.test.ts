/**
 * The storage contract on Redis. Needs REDIS_URL (CI sets it to the local server); each test uses
 * its own key prefix and deletes its keys afterwards.
 */
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/errors.ts'
import { type RedisStore, createRedisStore } from '../../src/storage/redis.ts'
import { describeStorageContract, uniqueId } from './contract.ts'

const url = process.env.REDIS_URL

describe.runIf(url)('Redis store', () => {
  let prefix = ''
  describeStorageContract({
    name: 'redis',
    async create({ now }) {
      prefix = `${uniqueId('gh-test')}:`
      const store = createRedisStore({ url: url as string, prefix, now })
      await store.connect()
      return store
    },
    async cleanup() {
      // The contract closed the store: delete this test's keys over a new connection.
      const sweeper: RedisStore = createRedisStore({ url: url as string, prefix })
      await sweeper.connect()
      await sweeper.clear()
      await sweeper.close()
    },
  })

  it('an unreachable server fails with StoreUnavailableError, at connect and per operation', async () => {
    const store = createRedisStore({ url: 'redis://127.0.0.1:1', connectTimeout: 1000 })
    await expect(store.connect()).rejects.toThrow(/cannot connect to Redis at 127\.0\.0\.1:1/)
    await expect(store.clients.get('x')).rejects.toBeInstanceOf(StoreUnavailableError)
    await store.close()
  })
})
