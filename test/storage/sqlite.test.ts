/**
 * The storage contract on SQLite (#28 item 1). Where the runtime has SQLite (Node ≥ 22.5 and Deno:
 * node:sqlite; Bun: bun:sqlite) the suite runs here: one database file in WAL mode, emptied between
 * tests. Under Node 20 (which runs `npm test`) this file runs itself again under Node 22
 * (GATEHOUSE_NODE22, else the binary .ci/run installs in .tools/node22), Bun and Deno, each through
 * vitest, and asserts that each run passed with the suite run on that runtime, so a failure there
 * fails here with its output; and it checks that Node 20 refuses the import in one line.
 * Processes of several runtimes racing on one file: test/storage/sqlite_race.test.ts.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sqliteDialect, toSqliteParameters } from '../../src/storage/sql/dialect.ts'
import { type SqlClient, createSqlStore } from '../../src/storage/sql/store.ts'
import { type SqliteDatabase, loadSqlite } from '../../src/storage/sqlite_driver.ts'
import { ROOT } from '../runtime/server.ts'
import {
  clientRecord,
  codeRecord,
  describeStorageContract,
  deviceCodeRecord,
  grantRecord,
  pushedRequestRecord,
  refreshRecord,
  uniqueId,
} from './contract.ts'
import type { CodeRecord, RefreshTokenRecord } from '../../src/storage/types.ts'
import { TABLES } from './sql_helpers.ts'
import { node22Binary } from './sqlite_node22.ts'

const versions = process.versions as Record<string, string | undefined>
const runtime = versions.bun
  ? 'Bun (bun:sqlite)'
  : versions.deno
    ? 'Deno (node:sqlite)'
    : `Node ${versions.node?.split('.')[0]} (node:sqlite)`
// The runtime's SQLite where it has one (not Node 20), and the store module only there: vitest
// collects a skipped describe's body too.
const sqlite = await loadSqlite('test').then(
  async (open) => ({ ...(await import('../../src/storage/sqlite.ts')), open }),
  () => undefined,
)
const node22 = node22Binary()
const BIN = join(ROOT, 'node_modules/.bin')

/**
 * Watches the runtime's own driver (its database class's prototype, which the store's connection
 * uses): the databases that run a statement, and counts of prepares, statements run, commits,
 * rollbacks and writes run outside a transaction (each its own commit). `restore()` puts the methods back.
 */
async function spyOnDriver() {
  const module = (await import(versions.bun ? 'bun:sqlite' : 'node:sqlite')) as Record<
    string,
    { prototype: SqliteDatabase }
  >
  const proto = (module.Database ?? module.DatabaseSync)?.prototype as SqliteDatabase
  const { exec, prepare } = proto
  const opened: SqliteDatabase[] = []
  const totals = { prepared: 0, statements: 0, commits: 0, rollbacks: 0, writesOutsideTransaction: 0 }
  let inside = false
  proto.exec = function (this: SqliteDatabase, sql: string) {
    if (sql === 'BEGIN IMMEDIATE') inside = true
    if (sql === 'COMMIT') totals.commits++
    if (sql === 'ROLLBACK') totals.rollbacks++
    if (sql === 'COMMIT' || sql === 'ROLLBACK') inside = false
    return exec.call(this, sql)
  }
  proto.prepare = function (this: SqliteDatabase, sql: string) {
    totals.prepared++
    const statement = prepare.call(this, sql)
    const all = statement.all
    statement.all = (...params: unknown[]) => {
      if (!opened.includes(this)) opened.push(this)
      totals.statements++
      if (!inside && /^\s*(INSERT|UPDATE|DELETE)/i.test(sql)) totals.writesOutsideTransaction++
      return all.apply(statement, params)
    }
    return statement
  }
  return {
    opened,
    /** The counts from now on, when called. */
    count: () => {
      const from = { ...totals }
      return () =>
        Object.fromEntries(Object.entries(totals).map(([key, value]) => [key, value - from[key as keyof typeof from]]))
    },
    restore: () => {
      proto.exec = exec
      proto.prepare = prepare
    },
  }
}

describe.runIf(sqlite)(`SQLite store on ${runtime}`, () => {
  if (!sqlite) return
  const { createSqliteStore, open } = sqlite
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-'))
  const path = join(dir, 'gatehouse.db')
  const admin = open(path)

  beforeAll(async () => {
    const store = createSqliteStore({ path })
    expect(await store.pendingMigrations()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(await store.migrate()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
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
    redeem: true, // #44 item 3: one transaction each
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
    expect(applied.flat().sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
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

  it('#28 item 1 a consume or a rotation is one atomic unit of statements (one batch, as D1 runs it); the other hot-path operations one statement', async () => {
    const db = open(path)
    const calls: string[] = []
    const run = (text: string, params: unknown[]) => {
      const converted = toSqliteParameters(text)
      return db.prepare(converted.text).all(...params.slice(0, converted.count).map((value) => value ?? null))
    }
    const client: SqlClient = {
      query: async (text, params = []) => {
        calls.push('query')
        return run(text, params) as never
      },
      batch: async (statements, params) => {
        calls.push(`batch of ${statements.length}`)
        db.exec('BEGIN IMMEDIATE')
        try {
          const results = statements.map((text) => run(text, params))
          db.exec('COMMIT')
          return results
        } catch (err) {
          db.exec('ROLLBACK')
          throw err
        }
      },
      transaction: async (fn) => {
        calls.push('transaction')
        return fn(client)
      },
      close: async () => db.close(),
    }
    const now = Math.floor(Date.now() / 1000)
    const store = createSqlStore(client, { dialect: sqliteDialect(), now: () => now })
    const code = codeRecord(now)
    const token = refreshRecord(now)
    await store.codes.insert(code)
    await store.refreshTokens.insert(token)
    const pushed = pushedRequestRecord(now)
    await store.pushedRequests.put(pushed)
    const next = () => refreshRecord(now, { familyId: token.familyId })
    const device = deviceCodeRecord(now)
    const login = { sub: 'user-1', authTime: now }
    const calling = async (operation: () => Promise<unknown>) => {
      calls.length = 0
      await operation()
      return [...calls]
    }
    expect({
      'codes.get': await calling(() => store.codes.get(code.id)),
      'codes.consume ok': await calling(() => store.codes.consume(code.id, now)),
      'codes.consume replayed': await calling(() => store.codes.consume(code.id, now)),
      'codes.consume missing': await calling(() => store.codes.consume(uniqueId('code'), now)),
      'refreshTokens.rotate ok': await calling(() => store.refreshTokens.rotate(token.id, next(), now)),
      'refreshTokens.rotate replayed': await calling(() => store.refreshTokens.rotate(token.id, next(), now)),
      'refreshTokens.rotate missing': await calling(() => store.refreshTokens.rotate(uniqueId('rt'), next(), now)),
      'pushedRequests.take': await calling(() => store.pushedRequests.take(pushed.id, now)),
      'replays.use': await calling(() => store.replays.use(uniqueId('jti'), now + 60, now)),
      '#29 deviceCodes.insert': await calling(() => store.deviceCodes.insert(device, now)),
      '#29 deviceCodes.decide': await calling(() =>
        store.deviceCodes.decide(device.id, { status: 'approved', login }, now),
      ),
      '#29 deviceCodes.poll': await calling(() => store.deviceCodes.poll(device.id, now)),
      'revocations, both checks at once': await calling(() =>
        Promise.all([store.revocations.isAccessTokenRevoked('j'), store.revocations.isFamilyRevoked('f')]),
      ),
    }).toEqual({
      'codes.get': ['query'],
      'codes.consume ok': ['batch of 2'],
      'codes.consume replayed': ['batch of 2'],
      'codes.consume missing': ['batch of 2'],
      'refreshTokens.rotate ok': ['batch of 3'],
      'refreshTokens.rotate replayed': ['batch of 3'],
      'refreshTokens.rotate missing': ['batch of 3'],
      'pushedRequests.take': ['query'],
      'replays.use': ['query'],
      // Freeing an expired holder's user code and the insert; the UPDATE and the read of a poll.
      '#29 deviceCodes.insert': ['batch of 2'],
      '#29 deviceCodes.decide': ['query'],
      '#29 deviceCodes.poll': ['batch of 2'],
      'revocations, both checks at once': ['query'],
    })
    await store.close()
  })

  it("#44 item 3: synchronous is applied on the store's own connection (read back): SQLite's NORMAL under both, full (the default) syncing the WAL itself off the event loop; anything else is a TypeError", async () => {
    const spy = await spyOnDriver()
    try {
      const levels: Record<string, unknown> = {}
      for (const synchronous of [undefined, 'normal', 'full'] as const) {
        spy.opened.length = 0
        const store = createSqliteStore({ path, ...(synchronous ? { synchronous } : {}) })
        await store.clients.get('x')
        const own = spy.opened[0] as SqliteDatabase
        const [row] = own.prepare('PRAGMA synchronous').all() as Array<{ synchronous: number }>
        levels[synchronous ?? 'default'] = row?.synchronous
        await store.close()
      }
      // SQLite's numbers: 2 FULL, 1 NORMAL. Under `full` the store syncs the WAL before it answers a
      // writer (test/storage/sqlite_wal_sync.test.ts), so SQLite does not sync inside COMMIT.
      expect(levels).toEqual({ default: 1, normal: 1, full: 1 })
    } finally {
      spy.restore()
    }
    expect(() => createSqliteStore({ path, synchronous: 'off' as never })).toThrow(
      /synchronous must be "full" or "normal"/,
    )
  })

  it('#44 item 3: a code redemption is one read and one transaction, a refresh one read and one transaction, with no statement prepared again', async () => {
    const now = Math.floor(Date.now() / 1000)
    const spy = await spyOnDriver()
    try {
      const store = createSqliteStore({ path, now: () => now })
      const grant = async () => {
        const code = codeRecord(now)
        await store.codes.insert(code)
        let counted = spy.count()
        expect(await store.codes.get(code.id)).toBeDefined()
        const token = refreshRecord(now, { familyId: code.familyId })
        const grant = grantRecord(now, { id: code.familyId })
        const redemption = { unlessRevoked: [code.familyId], refreshToken: token, grant }
        expect(await store.codes.redeem?.(code.id, now, redemption)).toEqual({ status: 'ok' })
        const redeemed = counted()
        counted = spy.count()
        expect(await store.refreshTokens.get(token.id)).toBeDefined()
        const next = refreshRecord(now, { familyId: code.familyId })
        const families = [code.familyId, `${code.familyId}:1`]
        expect(await store.refreshTokens.rotateUnlessRevoked?.(token.id, next, now, families)).toEqual({ status: 'ok' })
        return { redeemed, refreshed: counted() }
      }
      await grant() // prepares every statement once
      // Before: the read, the revocation check, the consume's transaction, then the refresh token's
      // and the grant's writes, each a transaction (and a WAL sync) of its own.
      expect(await grant()).toEqual({
        redeemed: { prepared: 0, statements: 5, commits: 1, rollbacks: 0, writesOutsideTransaction: 0 },
        refreshed: { prepared: 0, statements: 4, commits: 1, rollbacks: 0, writesOutsideTransaction: 0 },
      })
      await store.close()
    } finally {
      spy.restore()
    }
  })

  it('#44 item 3: redemptions and refreshes asked for at once share one commit (group commit), each answered after it, one winner per code', async () => {
    const now = Math.floor(Date.now() / 1000)
    const spy = await spyOnDriver()
    try {
      const store = createSqliteStore({ path, now: () => now })
      const codes = Array.from({ length: 8 }, () => codeRecord(now))
      for (const code of codes) await store.codes.insert(code)
      const tokens = codes.map((code) => refreshRecord(now, { familyId: code.familyId }))
      const counted = spy.count()
      // Each caller's promise, when it settles: its outcome and the commits made by then.
      const answered = (outcome: Promise<unknown> | undefined) =>
        (outcome as Promise<unknown>).then((result) => ({ result, commits: counted().commits }))
      // Each code redeemed twice at once: 16 batches in one transaction, in the order asked, so the
      // first of each pair consumes the code and the second finds it consumed.
      const redeemed = await Promise.all(
        codes.flatMap((code, i) =>
          [0, 1].map(() =>
            answered(
              store.codes.redeem?.(code.id, now, {
                unlessRevoked: [code.familyId],
                refreshToken: tokens[i],
                grant: grantRecord(now, { id: code.familyId }),
              }),
            ),
          ),
        ),
      )
      expect(redeemed).toEqual(
        codes.flatMap(() => [
          { result: { status: 'ok' }, commits: 1 },
          { result: { status: 'replayed' }, commits: 1 },
        ]),
      )
      const nexts = tokens.map((token) => refreshRecord(now, { familyId: token.familyId }))
      const refreshed = await Promise.all(
        tokens.map((token, i) =>
          answered(store.refreshTokens.rotateUnlessRevoked?.(token.id, nexts[i] as never, now, [token.familyId])),
        ),
      )
      expect(refreshed).toEqual(tokens.map(() => ({ result: { status: 'ok' }, commits: 2 })))
      expect(counted()).toMatchObject({ commits: 2, rollbacks: 0, writesOutsideTransaction: 0 })
      for (const next of nexts) expect(await store.refreshTokens.get(next.id)).toEqual(next)
      await store.close()
    } finally {
      spy.restore()
    }
  })

  it('#44 item 3: a batch that fails in a group (a duplicate refresh token id) fails only its own caller; the others commit', async () => {
    const now = Math.floor(Date.now() / 1000)
    const spy = await spyOnDriver()
    try {
      const store = createSqliteStore({ path, now: () => now })
      const tokens = Array.from({ length: 8 }, () => refreshRecord(now))
      for (const token of tokens) await store.refreshTokens.insert(token)
      const nexts = tokens.map((token) => refreshRecord(now, { familyId: token.familyId }))
      // The fourth rotation's next token takes the sixth token's id: its insert breaks the primary key.
      nexts[3] = { ...(nexts[3] as RefreshTokenRecord), id: (tokens[5] as RefreshTokenRecord).id }
      const counted = spy.count()
      const outcomes = await Promise.allSettled(
        tokens.map((token, i) =>
          store.refreshTokens.rotateUnlessRevoked?.(token.id, nexts[i] as RefreshTokenRecord, now, [token.familyId]),
        ),
      )
      expect(outcomes.map((outcome) => outcome.status)).toEqual([
        ...Array(3).fill('fulfilled'),
        'rejected',
        ...Array(4).fill('fulfilled'),
      ])
      expect(String((outcomes[3] as PromiseRejectedResult).reason)).toMatch(/UNIQUE constraint failed/)
      for (const outcome of outcomes.filter((o) => o.status === 'fulfilled'))
        expect(outcome.value).toEqual({ status: 'ok' })
      // The group rolled back, then each batch alone: seven commits, the failing one rolled back too.
      expect(counted()).toMatchObject({ commits: 7, rollbacks: 2 })
      expect(await store.refreshTokens.get((tokens[3] as RefreshTokenRecord).id)).toEqual(tokens[3])
      for (const i of [0, 1, 2, 4, 5, 6, 7]) {
        expect(await store.refreshTokens.get((nexts[i] as RefreshTokenRecord).id)).toEqual(nexts[i])
        expect((await store.refreshTokens.get((tokens[i] as RefreshTokenRecord).id))?.consumedAt).toBe(now)
      }
      await store.close()
    } finally {
      spy.restore()
    }
  })

  it('#44 item 3: a group busy past busyTimeout fails each of its callers with StoreUnavailableError (503), once, without running them again', async () => {
    const now = Math.floor(Date.now() / 1000)
    const store = createSqliteStore({ path, busyTimeout: 300, now: () => now })
    const codes = Array.from({ length: 4 }, () => codeRecord(now))
    for (const code of codes) await store.codes.insert(code)
    const other = open(path)
    other.exec('BEGIN IMMEDIATE')
    const started = Date.now()
    try {
      const outcomes = await Promise.allSettled(codes.map((code) => store.codes.consume(code.id, now)))
      expect(outcomes.map((outcome) => outcome.status === 'rejected' && (outcome.reason as Error).name)).toEqual(
        codes.map(() => 'StoreUnavailableError'),
      )
      // About one busyTimeout, not one per batch.
      expect(Date.now() - started).toBeLessThan(1000)
    } finally {
      other.exec('COMMIT')
      other.close()
    }
    expect((await store.codes.consume((codes[0] as CodeRecord).id, now)).status).toBe('ok')
    await store.close()
  })

  it('#28 item 1 the schema option does not exist on SQLite: plain gatehouse_* tables in the file', async () => {
    const names = admin
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
      .all()
      .map((row) => (row as { name: string }).name)
    expect(names).toEqual([...TABLES, 'gatehouse_attempts', 'gatehouse_migrations'].sort())
  })

  it('#44 item 3: the refresh tokens are indexed by expiry only (beside their key): no query reads them by family, so migration 8 dropped that index and a rotation writes one index page fewer', async () => {
    const indexes = admin
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name`)
      .all('gatehouse_refresh_tokens')
      .map((row) => (row as { name: string }).name)
    expect(indexes).toEqual(['gatehouse_refresh_tokens_expires_at'])
  })
})

describe.runIf(!sqlite)('SQLite store on Node 20', () => {
  it('#28 item 1 importing gatehouse-oidc/storage/sqlite fails with one line naming the requirement', async () => {
    const error = await import('../../src/storage/sqlite.ts').then(
      () => undefined,
      (err: Error) => err,
    )
    expect(error?.message).toBe(
      `gatehouse-oidc/storage/sqlite needs node:sqlite (Node ≥ 22.5), Bun or Deno; this is Node ${process.versions.node}`,
    )
  })

  it.runIf(node22)(
    '#28 item 1 #29 the conformance tests that run on every store (double redemption, DPoP replays, registration caps, device code and CIBA races, …) pass on SQLite under Node 22',
    () => {
      const files = [
        'test/conformance/grants/code_double_redemption.test.ts',
        'test/conformance/dpop/dpop_shared_store.test.ts',
        'test/conformance/clients/permissions_at_use.test.ts',
        'test/conformance/clients/dynamic_registration_caps.test.ts',
        'test/conformance/endpoints/request_hygiene.test.ts',
        'test/conformance/grants/token_exchange_stores.test.ts',
        'test/conformance/grants/device_stores.test.ts',
        'test/conformance/grants/ciba_stores.test.ts',
        'test/conformance/grants/grant_records.test.ts',
        // #45: the ID-JAG's jti once (concurrent presentations: one token), the opt-in grant.
        'test/conformance/grants/jwt_bearer_validation.test.ts',
        'test/conformance/grants/jwt_bearer_accounts.test.ts',
        // #44: the codes and refresh tokens an instance wrote, across two instances of one store.
        'test/conformance/grants/issued_records.test.ts',
      ]
      // Memory and SQLite only: PostgreSQL and Redis ran them already under this Node.
      const { DATABASE_URL: _d, REDIS_URL: _r, ...env } = process.env
      const run = spawnSync(
        node22 as string,
        [
          '--disable-warning=ExperimentalWarning',
          'node_modules/vitest/vitest.mjs',
          'run',
          '--reporter=verbose',
          ...files,
        ],
        { cwd: ROOT, encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024, env: { ...env, NO_COLOR: '1' } },
      )
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colours
      const output = `${run.stdout}\n${run.stderr}`.replace(/\x1b\[[0-9;]*m/g, '')
      expect(run.status, output).toBe(0)
      expect(output).toMatch(/✓ .*#27 item 12 concurrent double redemption on the 'sqlite' store > #27 item 12 CODE-02/)
      expect(output).toMatch(/✓ .*#39 item 1 grant records on the 'sqlite' store > #39 item 1 a device code redemption/)
      expect(output).toMatch(/✓ .*#44 records the instance wrote, on the 'sqlite' store > CODE-02 CODE-03/)
      expect(output).not.toMatch(/\d+ failed/)
    },
    300_000,
  )

  /** This file under another runtime's vitest: it passed, with the suite run (not skipped) on that runtime. */
  const runs = [
    { name: 'Node 22', label: 'Node 22 (node:sqlite)', command: node22 ? [node22] : undefined },
    { name: 'Bun', label: 'Bun (bun:sqlite)', command: [join(BIN, 'bun')] },
    { name: 'Deno', label: 'Deno (node:sqlite)', command: [join(BIN, 'deno'), 'run', '--allow-all'] },
  ]
  for (const { name, label, command } of runs) {
    it.runIf(command)(
      `#28 item 1 the SQLite contract suite passes on ${name}`,
      () => {
        const [file, ...args] = command as [string, ...string[]]
        const run = spawnSync(
          file,
          [
            ...args,
            'node_modules/vitest/vitest.mjs',
            'run',
            '--reporter=verbose',
            'test/storage/sqlite.test.ts',
            'test/storage/sqlite_wal_sync.test.ts',
          ],
          {
            cwd: ROOT,
            encoding: 'utf8',
            timeout: 240_000,
            maxBuffer: 64 * 1024 * 1024,
            env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
          },
        )
        // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colours
        const output = `${run.stdout}\n${run.stderr}`.replace(/\x1b\[[0-9;]*m/g, '')
        expect(run.status, output).toBe(0)
        expect(output).toContain(
          `SQLite store on ${label} > storage contract: sqlite > codes > consume: exactly one of 100 concurrent callers wins`,
        )
        expect(output).toMatch(/✓ .*#44 item 3: a WAL sync that fails answers its writers StoreUnavailableError/)
        expect(output).toMatch(/Tests\s+\d{2,} passed/)
        expect(output).not.toMatch(/\d+ failed/)
      },
      300_000,
    )
  }
})
