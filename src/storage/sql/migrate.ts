/**
 * @module storage/sql/migrate
 * Applies the SQL store's migrations (`migrations.ts`) in the store's dialect and tells which are
 * pending. PostgreSQL: one transaction under an advisory lock, statement by statement. SQLite: the
 * pending migrations and their records as one `batch()` (one `BEGIN IMMEDIATE` transaction, no
 * logic inside it, as D1 runs a batch: it has no interactive transactions); of concurrent
 * migrators, the second batch fails on the versions the first recorded, rolls back whole, and finds
 * nothing pending.
 */
import type { SqlDialect } from './dialect.ts'
import { MIGRATIONS, type Migration } from './migrations.ts'

/** What migrating needs of the driver (`SqlClient`). */
interface Client {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
  transaction<R>(fn: (tx: Client) => Promise<R>): Promise<R>
  batch?(statements: string[], params: unknown[]): Promise<unknown[][]>
}

/** A migration statement in the dialect. */
function render(statement: string, dialect: SqlDialect): string {
  return statement.replaceAll('{schema}.', dialect.prefix).replaceAll('{json}', dialect.jsonType)
}

async function applied(client: Pick<Client, 'query'>, dialect: SqlDialect): Promise<Set<number>> {
  const rows = await client.query<{ version: number }>(`SELECT version FROM ${dialect.table('migrations')}`)
  return new Set(rows.map((row) => Number(row.version)))
}

/** The migrations not yet applied, in order. */
function pending(done: Set<number>): Migration[] {
  return MIGRATIONS.filter((migration) => !done.has(migration.version))
}

/** Applies the pending migrations; the versions this call applied. */
export async function migrateSql(client: Client, dialect: SqlDialect): Promise<number[]> {
  if (dialect.name === 'sqlite' && client.batch) {
    await client.query(dialect.migrationsTable())
    const todo = pending(await applied(client, dialect))
    if (todo.length === 0) return []
    const statements = todo.flatMap((migration) => [
      ...migration.statements.map((statement) => render(statement, dialect)),
      `INSERT INTO ${dialect.table('migrations')} (version, name) VALUES (${migration.version}, '${migration.name.replaceAll("'", "''")}')`,
    ])
    try {
      await client.batch(statements, [])
    } catch (err) {
      // Committed but not confirmed on the disk (SQLite's WAL sync failed): not "nothing to do".
      if (err instanceof Error && err.name === 'SqliteSyncError') throw err
      // Another migrator recorded these versions first (its batch committed, ours rolled back).
      if (pending(await applied(client, dialect)).length === 0) return []
      throw err
    }
    return todo.map((migration) => migration.version)
  }
  return client.transaction(async (tx) => {
    // One migrator at a time across instances (PostgreSQL: an advisory lock).
    for (const lock of dialect.migrationLock()) await tx.query(lock.text, lock.params)
    await tx.query(dialect.migrationsTable())
    const versions: number[] = []
    for (const migration of pending(await applied(tx, dialect))) {
      for (const statement of migration.statements) await tx.query(render(statement, dialect))
      await tx.query(`INSERT INTO ${dialect.table('migrations')} (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ])
      versions.push(migration.version)
    }
    return versions
  })
}

/** The versions `migrateSql` would apply. Reads only: creates neither the schema nor a table. */
export async function pendingSql(client: Pick<Client, 'query'>, dialect: SqlDialect): Promise<number[]> {
  const exists = dialect.migrationsTableExists()
  const [found] = await client.query<{ name: string | null }>(exists.text, exists.params)
  const done = found?.name == null ? new Set<number>() : await applied(client, dialect)
  return pending(done).map((migration) => migration.version)
}

/**
 * The migrations from version `from` on as one SQL script in the dialect, for tools that apply schema
 * files themselves (`wrangler d1 migrations apply`, a PostgreSQL migration tool). Each migration is
 * followed by its record in `gatehouse_migrations`, so the store finds nothing pending afterwards;
 * every statement may run again (`IF NOT EXISTS`, `ON CONFLICT DO NOTHING`), so applying it to a
 * store that migrated itself first changes nothing. No transaction statements: D1 refuses them
 * (it runs a migration file as one unit itself); wrap it on PostgreSQL if the tool does not.
 */
export function migrationScript(dialect: SqlDialect, from = 1): string {
  const todo = MIGRATIONS.filter((migration) => migration.version >= from)
  const versions = todo.length === 0 ? 'none' : `${todo[0]?.version} to ${todo.at(-1)?.version}`
  const lines = [
    `-- Gatehouse SQL store (${dialect.name}), migrations ${versions}, each recorded in gatehouse_migrations.`,
    `-- Printed by \`npx gatehouse migrate --print ${dialect.name}${from === 1 ? '' : ` --from ${from}`}\`: do not edit.`,
  ]
  if (dialect.prefix !== '') lines.push(`CREATE SCHEMA IF NOT EXISTS ${dialect.prefix.slice(0, -1)};`)
  lines.push(`${dialect.migrationsTable()};`)
  for (const migration of todo) {
    lines.push('', `-- ${migration.version}: ${migration.name}`)
    for (const statement of migration.statements) lines.push(`${render(statement, dialect).replace(/\n {6}/g, '\n')};`)
    lines.push(
      `INSERT INTO ${dialect.table('migrations')} (version, name) VALUES (${migration.version}, '${migration.name.replaceAll("'", "''")}') ON CONFLICT (version) DO NOTHING;`,
    )
  }
  return `${lines.join('\n')}\n`
}
