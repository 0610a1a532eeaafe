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
