/**
 * The storage contract on PGlite (the embedded persistent store): one in-process database for the
 * file, emptied between tests; plus persistence across a restart on a data directory.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPgliteStore } from '../../src/storage/pglite.ts'
import { type SqlClient, createSqlStore } from '../../src/storage/sql/store.ts'
import {
  clientRecord,
  codeRecord,
  describeStorageContract,
  deviceCodeRecord,
  pushedRequestRecord,
  refreshRecord,
  uniqueId,
} from './contract.ts'
import { TABLES } from './sql_helpers.ts'

describe('PGlite store', () => {
  const db = new PGlite()

  beforeAll(async () => {
    expect(await createPgliteStore({ db }).migrate()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
  })
  afterAll(async () => {
    await db.close()
  })

  describeStorageContract({
    name: 'pglite',
    redeem: true,
    async create({ now }) {
      await db.exec(`TRUNCATE ${TABLES.map((t) => `public.${t}`).join(', ')}`)
      return createPgliteStore({ db, now })
    },
  })

  it('#20 hot-path operations are one statement each (one round trip on a server), none in a transaction', async () => {
    const statements: string[] = []
    let transactions = 0
    const counting: SqlClient = {
      query: async (text, params = []) => {
        statements.push(text)
        return (await db.query(text, params)).rows as never
      },
      transaction: async (fn) => {
        transactions++
        return fn(counting)
      },
      close: async () => {},
    }
    const now = Math.floor(Date.now() / 1000)
    const store = createSqlStore(counting, { now: () => now })
    const code = codeRecord(now)
    const token = refreshRecord(now)
    await store.codes.insert(code)
    await store.refreshTokens.insert(token)
    const pushed = pushedRequestRecord(now)
    await store.pushedRequests.put(pushed)
    const jti = `dpop:${uniqueId('jti')}`
    const device = deviceCodeRecord(now)
    const pending = deviceCodeRecord(now)
    await store.deviceCodes.insert(device, now)
    await store.deviceCodes.insert(pending, now)
    const login = { sub: 'user-1', authTime: now }
    const count = async (operation: () => Promise<unknown>) => {
      statements.length = 0
      await operation()
      return statements.length
    }
    const next = () => refreshRecord(now, { familyId: token.familyId })
    const counts = {
      'codes.get': await count(() => store.codes.get(code.id)),
      'codes.consume ok': await count(() => store.codes.consume(code.id, now)),
      'codes.consume replayed': await count(() => store.codes.consume(code.id, now)),
      'codes.consume missing': await count(() => store.codes.consume(uniqueId('code'), now)),
      'refreshTokens.get': await count(() => store.refreshTokens.get(token.id)),
      'refreshTokens.rotate ok': await count(() => store.refreshTokens.rotate(token.id, next(), now)),
      'refreshTokens.rotate replayed': await count(() => store.refreshTokens.rotate(token.id, next(), now)),
      'refreshTokens.rotate missing': await count(() => store.refreshTokens.rotate(uniqueId('rt'), next(), now)),
      '#21 pushedRequests.take ok': await count(() => store.pushedRequests.take(pushed.id, now)),
      '#21 pushedRequests.take missing': await count(() => store.pushedRequests.take(pushed.id, now)),
      '#21 replays.use new': await count(() => store.replays.use(jti, now + 60, now)),
      '#21 replays.use replayed': await count(() => store.replays.use(jti, now + 60, now)),
      '#21 replays.use expired': await count(() => store.replays.use(jti, now + 120, now + 60)),
      '#29 deviceCodes.poll pending': await count(() => store.deviceCodes.poll(pending.id, now)),
      '#29 deviceCodes.decide': await count(() =>
        store.deviceCodes.decide(device.id, { status: 'approved', login }, now),
      ),
      '#29 deviceCodes.poll ok': await count(() => store.deviceCodes.poll(device.id, now)),
      '#29 deviceCodes.poll replayed': await count(() => store.deviceCodes.poll(device.id, now)),
      '#29 deviceCodes.findByUserCode': await count(() => store.deviceCodes.findByUserCode(device.userCode, now)),
      'revocations, both checks at once': await count(() =>
        Promise.all([store.revocations.isAccessTokenRevoked('j'), store.revocations.isFamilyRevoked('f')]),
      ),
    }
    expect(counts).toEqual({
      'codes.get': 1,
      'codes.consume ok': 1,
      'codes.consume replayed': 1,
      'codes.consume missing': 1,
      'refreshTokens.get': 1,
      'refreshTokens.rotate ok': 1,
      'refreshTokens.rotate replayed': 1,
      'refreshTokens.rotate missing': 1,
      '#21 pushedRequests.take ok': 1,
      '#21 pushedRequests.take missing': 1,
      '#21 replays.use new': 1,
      '#21 replays.use replayed': 1,
      '#21 replays.use expired': 1,
      // A poll that answers pending or ok is its UPDATE alone; a replayed one reads the row after.
      '#29 deviceCodes.poll pending': 1,
      '#29 deviceCodes.decide': 1,
      '#29 deviceCodes.poll ok': 1,
      '#29 deviceCodes.poll replayed': 2,
      '#29 deviceCodes.findByUserCode': 1,
      // Checks asked in the same turn (introspection's token and grant) leave as one query; under
      // load, waiting checks of both kinds share one query too.
      'revocations, both checks at once': 1,
    })
    expect(transactions).toBe(0)
  })

  it('keeps its state across a restart on a data directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-pglite-'))
    try {
      const first = createPgliteStore({ dataDir: dir })
      await first.migrate()
      const client = clientRecord()
      await first.clients.insert(client)
      await first.close()
      const second = createPgliteStore({ dataDir: dir })
      expect(await second.migrate()).toEqual([])
      expect(await second.clients.get(client.clientId)).toEqual(client)
      await second.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
