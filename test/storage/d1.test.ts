/**
 * The storage contract on D1 (#28 items 1 and 6), through Miniflare: the D1 binding Miniflare
 * hands to Node is a proxy to the D1 of a local workerd, so every statement runs in workerd's
 * D1 (its SQLite), as in a Worker. Two Miniflare instances persisted to one folder are two workerd
 * processes sharing one local D1, as two `start:workers` processes on one GATEHOUSE_DATA_DIR are:
 * they race to consume the same codes and rotate the same refresh tokens, round after round,
 * and every round has exactly one winner of each (the loser sees `replayed`, never an error:
 * SQLITE_BUSY between the processes is retried in the store).
 *
 * Miniflare needs Node 22: under Node 20 (which runs `npm test`) this file runs itself again under
 * Node 22 (GATEHOUSE_NODE22, else .tools/node22) and asserts that run passed with the suites run.
 * The suite inside workerd itself (the store in the Worker's isolate): test/workerd/.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type D1DatabaseLike, createD1Store } from '../../src/storage/d1.ts'
import type { Store } from '../../src/storage/types.ts'
import { ROOT } from '../runtime/server.ts'
import { codeRecord, describeStorageContract, refreshRecord } from './contract.ts'
import { TABLES } from './sql_helpers.ts'
import { node22Binary } from './sqlite_node22.ts'

const major = Number(process.versions.node.split('.')[0])
const here = !('bun' in process.versions) && !('deno' in process.versions) && major >= 22
const node22 = node22Binary()
const ROUNDS = 30

interface Local {
  database: D1DatabaseLike
  dispose(): Promise<void>
}

/** A local workerd with a D1 binding persisted in `persist` (Miniflare, as start:workers runs it). */
async function localD1(persist: string): Promise<Local> {
  const { Miniflare, convertV4MiniflareOptions } = await import('miniflare')
  const miniflare = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: 'export default { fetch: () => new Response(null, { status: 204 }) }',
      compatibilityDate: '2026-08-01',
      d1Databases: { DB: 'gatehouse' },
      resourcePersistencePath: persist,
      telemetry: { enabled: false },
    }),
  )
  const database = (await miniflare.getD1Database('DB')) as unknown as D1DatabaseLike
  return { database, dispose: () => miniflare.dispose() }
}

describe.runIf(here)('D1 store (local workerd through Miniflare)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-d1-'))
  let local: Local
  let other: Local

  beforeAll(async () => {
    local = await localD1(join(dir, 'state'))
    other = await localD1(join(dir, 'state'))
    const store = createD1Store({ database: local.database })
    expect(await store.pendingMigrations()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    // Two instances migrating at once: the versions are applied once.
    const applied = await Promise.all([store.migrate(), createD1Store({ database: other.database }).migrate()])
    expect(applied.flat().sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(await store.migrate()).toEqual([])
  }, 60_000)
  afterAll(async () => {
    await local?.dispose()
    await other?.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  describeStorageContract({
    name: 'd1',
    async create({ now }) {
      await local.database.batch(
        [...TABLES, 'gatehouse_attempts'].map((table) => local.database.prepare(`DELETE FROM ${table}`)),
      )
      return createD1Store({ database: local.database, now })
    },
    redeem: true, // #44 item 3: the SQLite dialect's redemption, one batch each
  })

  it(`#28 item 1 two workerd processes on one persisted D1: in each of ${ROUNDS} rounds exactly one consumes the code and exactly one rotates the token`, async () => {
    const now = Math.floor(Date.now() / 1000)
    const stores: Store[] = [
      createD1Store({ database: local.database, now: () => now }),
      createD1Store({ database: other.database, now: () => now }),
    ]
    for (let round = 0; round < ROUNDS; round++) {
      const code = codeRecord(now)
      const token = refreshRecord(now)
      await stores[0]?.codes.insert(code)
      await stores[1]?.refreshTokens.insert(token)
      const nexts = stores.map(() => refreshRecord(now, { familyId: token.familyId }))
      // Each process calls twice at once: four callers over two processes.
      const callers = [...stores, ...stores]
      const [codes, rotations] = await Promise.all([
        Promise.all(callers.map((store) => store.codes.consume(code.id, now))),
        Promise.all(callers.map((store, i) => store.refreshTokens.rotate(token.id, nexts[i % 2] as never, now))),
      ])
      expect(codes.map((result) => result.status).sort(), `round ${round} codes`).toEqual([
        'ok',
        'replayed',
        'replayed',
        'replayed',
      ])
      const statuses = rotations.map((result) => result.status)
      expect([...statuses].sort(), `round ${round} rotations`).toEqual(['ok', 'replayed', 'replayed', 'replayed'])
      // Only the winner's next generation exists.
      const winner = statuses.indexOf('ok') % 2
      const found = await Promise.all(nexts.map((next) => stores[0]?.refreshTokens.get(next.id)))
      expect(
        found.map((record) => record !== undefined),
        `round ${round} next generations`,
      ).toEqual([winner === 0, winner === 1])
    }
  }, 120_000)

  it('#28 item 1 keeps its state across a restart on the same folder', async () => {
    const persist = join(dir, 'restart')
    const first = await localD1(persist)
    const store = createD1Store({ database: first.database })
    await store.migrate()
    const now = Math.floor(Date.now() / 1000)
    const code = codeRecord(now)
    await store.codes.insert(code)
    await first.dispose()
    const second = await localD1(persist)
    try {
      const again = createD1Store({ database: second.database })
      expect(await again.migrate()).toEqual([])
      expect((await again.codes.consume(code.id, now)).status).toBe('ok')
    } finally {
      await second.dispose()
    }
  }, 60_000)

  it('#28 item 1 a consume is one batch() (D1 has no interactive transactions); a failure that is not a statement’s is a StoreUnavailableError (503)', async () => {
    const calls: string[] = []
    const database: D1DatabaseLike = {
      prepare: (query) => local.database.prepare(query),
      batch: async (statements) => {
        calls.push(`batch of ${statements.length}`)
        return local.database.batch(statements)
      },
    }
    const now = Math.floor(Date.now() / 1000)
    const store = createD1Store({ database })
    const code = codeRecord(now)
    await store.codes.insert(code)
    expect((await store.codes.consume(code.id, now)).status).toBe('ok')
    expect(calls).toEqual(['batch of 2'])
    // D1's own failures (Cloudflare's error list) mean the database, not the query, failed.
    const failing = (message: string): Store =>
      createD1Store({
        database: {
          prepare: () => {
            throw new Error(message)
          },
          batch: () => Promise.reject(new Error(message)),
        },
        busyTimeout: 50,
      })
    for (const message of ['D1 DB is overloaded. Too many requests queued.', 'Network connection lost.']) {
      await expect(failing(message).codes.consume(code.id, now)).rejects.toMatchObject({
        name: 'StoreUnavailableError',
      })
    }
    await expect(failing('D1_ERROR: database is locked: SQLITE_BUSY').clients.get('x')).rejects.toMatchObject({
      name: 'StoreUnavailableError',
    })
  })
})

describe.runIf(!here && major < 22 && !('bun' in process.versions) && !('deno' in process.versions))(
  'D1 store under Node 22',
  () => {
    it.runIf(node22)(
      '#28 item 1 the D1 contract suite and the two-process race pass (Miniflare under Node 22)',
      () => {
        const run = spawnSync(
          node22 as string,
          ['node_modules/vitest/vitest.mjs', 'run', '--reporter=verbose', 'test/storage/d1.test.ts'],
          {
            cwd: ROOT,
            encoding: 'utf8',
            timeout: 240_000,
            maxBuffer: 64 * 1024 * 1024,
            env: { ...process.env, NO_COLOR: '1' },
          },
        )
        // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colours
        const output = `${run.stdout}\n${run.stderr}`.replace(/\x1b\[[0-9;]*m/g, '')
        expect(run.status, output).toBe(0)
        expect(output).toContain(
          'D1 store (local workerd through Miniflare) > storage contract: d1 > codes > consume: exactly one of 100 concurrent callers wins',
        )
        expect(output).toContain('two workerd processes on one persisted D1')
        expect(output).toMatch(/Tests\s+\d{2,} passed/)
        expect(output).not.toMatch(/\d+ failed/)
      },
      300_000,
    )
  },
)
