/**
 * #28 item 6: the storage contract on D1 inside workerd (run by vitest.workerd.config.ts through
 * @cloudflare/vitest-pool-workers; test/storage/workerd.test.ts runs that under Node 22 and
 * checks the result): the store runs in the Worker's isolate on its own `env.DB` binding, as a
 * deployed Worker's does. (test/storage/d1.test.ts runs it from Node on Miniflare's proxy of the
 * binding, and races two workerd processes on one local D1.)
 */
import { env } from 'cloudflare:workers'
import { beforeAll, describe, expect, it } from 'vitest'
import { type D1DatabaseLike, createD1Store } from '../../src/storage/d1.ts'
import { codeRecord, describeStorageContract } from '../storage/contract.ts'
import { TABLES } from '../storage/sql_helpers.ts'

const database = env.DB as D1DatabaseLike

describe('D1 store inside workerd', () => {
  beforeAll(async () => {
    const store = createD1Store({ database })
    expect(await store.pendingMigrations()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(await store.migrate()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(await store.migrate()).toEqual([]) // idempotent
  })

  describeStorageContract({
    name: 'd1 in workerd',
    async create({ now }) {
      await database.batch([...TABLES, 'gatehouse_attempts'].map((table) => database.prepare(`DELETE FROM ${table}`)))
      return createD1Store({ database, now })
    },
  })

  it('#28 item 6 the binding is the Worker’s own D1 (not a proxy from Node): a consume is one batch in the isolate', async () => {
    const store = createD1Store({ database })
    const now = Math.floor(Date.now() / 1000)
    const code = codeRecord(now)
    await store.codes.insert(code)
    const results = await Promise.all(Array.from({ length: 20 }, () => store.codes.consume(code.id, now)))
    expect(results.filter((result) => result.status === 'ok')).toHaveLength(1)
    expect(typeof (database as { withSession?: unknown }).withSession).toBe('function') // workerd's D1Database
  })
})
