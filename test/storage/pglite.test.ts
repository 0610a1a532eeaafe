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
import { clientRecord, describeStorageContract } from './contract.ts'
import { TABLES } from './sql_helpers.ts'

describe('PGlite store', () => {
  const db = new PGlite()

  beforeAll(async () => {
    expect(await createPgliteStore({ db }).migrate()).toEqual([1, 2])
  })
  afterAll(async () => {
    await db.close()
  })

  describeStorageContract({
    name: 'pglite',
    async create({ now }) {
      await db.exec(`TRUNCATE ${TABLES.map((t) => `public.${t}`).join(', ')}`)
      return createPgliteStore({ db, now })
    },
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
