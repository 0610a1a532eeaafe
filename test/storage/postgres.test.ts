/**
 * The storage contract on PostgreSQL. Needs DATABASE_URL (CI sets it to the local server); each run
 * uses its own schema, emptied between tests and dropped at the end.
 */
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/errors.ts'
import { createPostgresStore } from '../../src/storage/postgres.ts'
import { describeStorageContract } from './contract.ts'
import { TABLES, runSchema } from './sql_helpers.ts'

const url = process.env.DATABASE_URL
const schema = runSchema('pg')

describe.runIf(url)('PostgreSQL store', () => {
  const admin = postgres(url as string, { max: 1, onnotice: () => {} })

  beforeAll(async () => {
    const store = createPostgresStore({ url: url as string, schema })
    expect(await store.migrate()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(await store.migrate()).toEqual([]) // idempotent
    await store.close()
  })

  afterAll(async () => {
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })

  describeStorageContract({
    name: 'postgres',
    redeem: true,
    async create({ now }) {
      await admin.unsafe(`TRUNCATE ${TABLES.map((t) => `"${schema}".${t}`).join(', ')}`)
      return createPostgresStore({ url: url as string, schema, now })
    },
  })

  it('migrations run once even when several instances start at the same time', async () => {
    const other = runSchema('pgm')
    const stores = Array.from({ length: 4 }, () => createPostgresStore({ url: url as string, schema: other }))
    try {
      const applied = await Promise.all(stores.map((s) => s.migrate()))
      expect(applied.flat().sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    } finally {
      await Promise.all(stores.map((s) => s.close()))
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${other}" CASCADE`)
    }
  })

  it('every lookup has an index', async () => {
    const rows = await admin.unsafe(
      `SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY tablename`,
      [schema],
    )
    const defs = rows.map((r) => String(r.indexdef)).join('\n')
    for (const table of TABLES) expect(defs).toContain(`${table}`)
    // #44: no lookup reads refresh tokens by family; migration 8 dropped the index every rotation paid for.
    expect(defs).not.toMatch(/gatehouse_refresh_tokens USING btree \(family_id\)/)
    expect(defs).toMatch(/gatehouse_refresh_tokens USING btree \(expires_at\)/)
    expect(defs).toMatch(/gatehouse_codes USING btree \(expires_at\)/)
    expect(defs).toMatch(/gatehouse_grants USING btree \(sub\)/)
    expect(defs).toMatch(/gatehouse_grants USING btree \(expires_at\)/)
  })

  it('prune deletes expired rows only', async () => {
    let now = Math.floor(Date.now() / 1000)
    const store = createPostgresStore({ url: url as string, schema, now: () => now })
    await store.revocations.revokeFamily('short', now + 5)
    await store.revocations.revokeFamily('long', now + 500)
    now += 10
    await store.prune()
    const rows = await admin.unsafe(`SELECT family_id FROM "${schema}".gatehouse_revoked_families ORDER BY family_id`)
    expect(rows.map((r) => r.family_id)).toContain('long')
    expect(rows.map((r) => r.family_id)).not.toContain('short')
    await store.close()
  })

  it('#42 item 1: prune drops the last use of an ended grant and keeps that of a grant put again with a later end; delete drops it at once', async () => {
    const start = Math.floor(Date.now() / 1000)
    let now = start
    const store = createPostgresStore({ url: url as string, schema, now: () => now })
    const uses = async () =>
      (await admin.unsafe(`SELECT id FROM "${schema}".gatehouse_grant_uses ORDER BY id`)).map((r) => String(r.id))
    const grant = (id: string) => ({
      ...{ id, clientId: 'web', sub: 'user-prune', scope: 'openid', kind: 'authorization_code' as const },
      ...{ authTime: start, createdAt: start, expiresAt: start + 100 },
    })
    for (const id of ['prune-extended', 'prune-ended', 'prune-deleted']) {
      await store.grants.put(grant(id))
      await store.grants.touch?.(id, start + 10)
    }
    await store.grants.put({ ...grant('prune-extended'), expiresAt: start + 1000 })
    await store.grants.delete('prune-deleted')
    expect(await uses()).toEqual(['prune-ended', 'prune-extended'])
    now = start + 200
    await store.prune()
    expect(await uses()).toEqual(['prune-extended'])
    expect((await store.grants.get('prune-extended', now))?.lastUsedAt).toBe(start + 10)
    await store.close()
  })

  it('an unreachable server fails with StoreUnavailableError, at connect and per operation', async () => {
    const store = createPostgresStore({ url: 'postgres://postgres@127.0.0.1:1/test', connectTimeout: 2 })
    await expect(store.connect()).rejects.toThrow(/cannot connect to PostgreSQL at 127\.0\.0\.1:1/)
    await expect(store.clients.get('x')).rejects.toBeInstanceOf(StoreUnavailableError)
    await store.close()
  })
})
