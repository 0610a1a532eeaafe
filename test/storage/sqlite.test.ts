/**
 * The storage contract on SQLite (#28 item 1), on node:sqlite. Under a Node with node:sqlite
 * (≥ 22.5) the suite runs here: one database file in WAL mode, emptied between tests. Under Node 20
 * (which runs `npm test`) this file runs itself again under Node 22 (GATEHOUSE_NODE22, else the
 * binary .ci/run installs in .tools/node22) and asserts that run passed, so a failure there fails
 * here with its output; and it checks that Node 20 refuses the import in one line.
 * Bun and Deno: test/runtime/sqlite_runtimes.test.ts; processes racing on one file:
 * test/storage/sqlite_race.test.ts.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../runtime/server.ts'
import { clientRecord, codeRecord, describeStorageContract, refreshRecord, uniqueId } from './contract.ts'
import { TABLES } from './sql_helpers.ts'
import { node22Binary } from './sqlite_node22.ts'

const builtin = 'node:sqlite'
const hasNodeSqlite = await import(builtin).then(
  () => true,
  () => false,
)
const node22 = node22Binary()
// Loaded only where node:sqlite exists (vitest collects a skipped describe's body too).
const sqlite = hasNodeSqlite
  ? {
      ...(await import('../../src/storage/sqlite.ts')),
      open: await (await import('../../src/storage/sqlite_driver.ts')).loadSqlite('test'),
    }
  : undefined

describe.runIf(sqlite)('SQLite store (node:sqlite)', () => {
  if (!sqlite) return
  const { createSqliteStore, open } = sqlite
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-'))
  const path = join(dir, 'gatehouse.db')
  const admin = open(path)

  beforeAll(async () => {
    const store = createSqliteStore({ path })
    expect(await store.pendingMigrations()).toEqual([1, 2, 3])
    expect(await store.migrate()).toEqual([1, 2, 3])
    expect(await store.migrate()).toEqual([]) // idempotent
    expect(await store.pendingMigrations()).toEqual([])
    await store.close()
  })
  afterAll(() => {
    admin.close()
    rmSync(dir, { recursive: true, force: true })
  })

  describeStorageContract({
    name: 'sqlite',
    create({ now }) {
      for (const table of [...TABLES, 'gatehouse_attempts']) admin.exec(`DELETE FROM ${table}`)
      return createSqliteStore({ path, now })
    },
  })

  it('#28 item 1 the file is in WAL mode, so that several processes share it', async () => {
    const store = createSqliteStore({ path })
    await store.clients.get('x')
    const [mode] = admin.prepare('PRAGMA journal_mode').all() as Array<{ journal_mode: string }>
    expect(mode?.journal_mode).toBe('wal')
    await store.close()
  })

  it('#28 item 1 migrations run once when several stores on one file migrate at once', async () => {
    const other = join(dir, 'migrate.db')
    const stores = Array.from({ length: 4 }, () => createSqliteStore({ path: other }))
    const applied = await Promise.all(stores.map((store) => store.migrate()))
    expect(applied.flat().sort()).toEqual([1, 2, 3])
    await Promise.all(stores.map((store) => store.close()))
  })

  it('#28 item 1 keeps its state across a restart on the same file', async () => {
    const file = join(dir, 'restart.db')
    const first = createSqliteStore({ path: file })
    await first.migrate()
    const client = clientRecord()
    await first.clients.insert(client)
    await first.close()
    const second = createSqliteStore({ path: file })
    expect(await second.migrate()).toEqual([])
    expect(await second.clients.get(client.clientId)).toEqual(client)
    await second.close()
  })

  it('#28 item 1 a busy database is retried, then a StoreUnavailableError (503), never another error', async () => {
    const now = Math.floor(Date.now() / 1000)
    const store = createSqliteStore({ path, busyTimeout: 300 })
    const code = codeRecord(now)
    await store.codes.insert(code)
    // Another connection holds the write lock for a while, then lets go: the consume waits it out.
    const other = open(path)
    other.exec('BEGIN IMMEDIATE')
    const waiting = store.codes.consume(code.id, now)
    setTimeout(() => other.exec('COMMIT'), 100)
    expect((await waiting).status).toBe('ok')
    // Held past busyTimeout: the store gives up with StoreUnavailableError.
    other.exec('BEGIN IMMEDIATE')
    try {
      await expect(store.refreshTokens.rotate(uniqueId('rt'), refreshRecord(now), now)).rejects.toMatchObject({
        name: 'StoreUnavailableError',
      })
    } finally {
      other.exec('COMMIT')
      other.close()
    }
    await store.close()
  })

  it('#28 item 1 the schema option does not exist on SQLite: plain gatehouse_* tables in the file', async () => {
    const names = admin
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
      .all()
      .map((row) => (row as { name: string }).name)
    expect(names).toEqual([...TABLES, 'gatehouse_attempts', 'gatehouse_migrations'].sort())
  })
})

describe.runIf(!hasNodeSqlite)('SQLite store on Node 20', () => {
  it('#28 item 1 importing gatehouse/storage/sqlite fails with one line naming the requirement', async () => {
    const error = await import('../../src/storage/sqlite.ts').then(
      () => undefined,
      (err: Error) => err,
    )
    expect(error?.message).toBe(
      `gatehouse/storage/sqlite needs node:sqlite (Node ≥ 22.5), Bun or Deno; this is Node ${process.versions.node}`,
    )
  })

  it.runIf(node22)(
    '#28 item 1 the SQLite contract suite passes under Node 22 (node:sqlite)',
    () => {
      const run = spawnSync(
        node22 as string,
        ['node_modules/vitest/vitest.mjs', 'run', '--reporter=dot', 'test/storage/sqlite.test.ts'],
        { cwd: ROOT, encoding: 'utf8', timeout: 240_000, env: { ...process.env, NO_COLOR: '1' } },
      )
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colours
      const output = `${run.stdout}\n${run.stderr}`.replace(/\x1b\[[0-9;]*m/g, '')
      expect(run.status, output).toBe(0)
      // The contract ran there (not skipped): its tests passed in numbers.
      expect(output).toMatch(/Tests\s+(\d{2,}) passed/)
    },
    300_000,
  )
})
