/**
 * `migrationScript` (`gatehouse migrate --print sqlite|postgres`, #28 item 7): the SQL store's
 * migrations as one script, for tools that apply schema files themselves (`wrangler d1 migrations
 * apply`). Applied to an empty database the script leaves the store nothing pending (each version
 * recorded in gatehouse_migrations); applied twice, or after the store migrated itself, it changes
 * nothing. PostgreSQL through PGlite here; SQLite through node:sqlite on Node 22 (a child process,
 * since `npm test` runs on Node 20), skipped when no Node 22 is found.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { PGlite } from '@electric-sql/pglite'
import { describe, expect, it } from 'vitest'
import { createPgliteStore } from '../../src/storage/pglite.ts'
import { postgresDialect, sqliteDialect } from '../../src/storage/sql/dialect.ts'
import { migrationScript } from '../../src/storage/sql/migrate.ts'
import { MIGRATIONS } from '../../src/storage/sql/migrations.ts'
import { ROOT } from '../runtime/server.ts'
import { node22Binary } from './sqlite_node22.ts'

const run = promisify(execFile)
const VERSIONS = MIGRATIONS.map((migration) => migration.version)
const node22 = node22Binary()

describe('#28 item 7 the migrations as one SQL script', () => {
  it('#28 item 7 lists every migration once, recorded after its statements, without transaction statements', () => {
    const script = migrationScript(sqliteDialect())
    for (const migration of MIGRATIONS) {
      const record = script.indexOf(`VALUES (${migration.version}, `)
      expect(record).toBeGreaterThan(script.indexOf(`-- ${migration.version}: ${migration.name}`))
    }
    expect(script).not.toMatch(/\b(BEGIN|COMMIT|ROLLBACK)\b/i)
    expect(script).not.toMatch(/\{schema\}|\{json\}|jsonb/)
    // --from: only the later migrations, for the next migration file.
    const last = VERSIONS.at(-1) as number
    const tail = migrationScript(sqliteDialect(), last)
    expect(tail).toContain(`VALUES (${last}, `)
    expect(tail).not.toContain(`VALUES (${last - 1}, `)
  })

  it('#28 item 7 PostgreSQL (PGlite): after the script the store has nothing pending; the script runs twice, even after the store migrated', async () => {
    const db = new PGlite()
    try {
      const store = createPgliteStore({ db })
      expect(await store.pendingMigrations()).toEqual(VERSIONS)
      const script = migrationScript(postgresDialect('gh_script'))
      expect(script).toContain('CREATE SCHEMA IF NOT EXISTS "gh_script";')
      await db.exec(migrationScript(postgresDialect()))
      await db.exec(migrationScript(postgresDialect()))
      expect(await store.pendingMigrations()).toEqual([])
      expect(await store.migrate()).toEqual([])
      const rows = await db.query<{ version: number }>(
        'SELECT version FROM public.gatehouse_migrations ORDER BY version',
      )
      expect(rows.rows.map((row) => row.version)).toEqual(VERSIONS)
    } finally {
      await db.close()
    }
    const migratedFirst = new PGlite()
    try {
      expect(await createPgliteStore({ db: migratedFirst }).migrate()).toEqual(VERSIONS)
      await migratedFirst.exec(migrationScript(postgresDialect()))
      const rows = await migratedFirst.query('SELECT version FROM public.gatehouse_migrations')
      expect(rows.rows).toHaveLength(VERSIONS.length)
    } finally {
      await migratedFirst.close()
    }
  })

  it.skipIf(!node22)(
    '#28 item 7 SQLite (node:sqlite on Node 22): after the script the SQLite store has nothing pending; the script runs twice',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-script-'))
      try {
        const check = `
          import { DatabaseSync } from 'node:sqlite'
          import { sqliteDialect } from './src/storage/sql/dialect.ts'
          import { migrationScript } from './src/storage/sql/migrate.ts'
          import { createSqliteStore } from './src/storage/sqlite.ts'
          const path = ${JSON.stringify(join(dir, 'gatehouse.db'))}
          const db = new DatabaseSync(path)
          db.exec(migrationScript(sqliteDialect()))
          db.exec(migrationScript(sqliteDialect()))
          db.close()
          const store = createSqliteStore({ path })
          const pending = await store.pendingMigrations()
          const applied = await store.migrate()
          await store.close()
          console.log(JSON.stringify({ pending, applied }))
        `
        const { stdout } = await run(node22 as string, ['--import', 'tsx', '--input-type=module', '-e', check], {
          cwd: ROOT,
        })
        expect(JSON.parse(stdout.trim().split('\n').at(-1) as string)).toEqual({ pending: [], applied: [] })
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )
})
