/**
 * @module storage/sql/dialect
 * The few places where the SQL store's text differs between PostgreSQL (postgres.js, PGlite) and
 * SQLite (node:sqlite, bun:sqlite, and later D1). Everything else (the statements in store.ts,
 * attempts.ts and the migrations) is one text for both: `$1`, `$2`, … parameters (a SQLite driver
 * sends them as `?1`, `?2`, …, see `toSqliteParameters`), `INSERT … ON CONFLICT … RETURNING`, and
 * `UPDATE`/`DELETE … RETURNING` (SQLite ≥ 3.35).
 *
 * The differences, all here:
 * - names: PostgreSQL tables live in a schema (`"schema".gatehouse_x`); SQLite has none, so the
 *   tables are plain `gatehouse_x` in the database file;
 * - JSON: a `jsonb` column and `$n::jsonb` parameters on PostgreSQL, `text` on SQLite;
 * - lists: `= ANY($n::text[])` of an array on PostgreSQL, `IN (SELECT value FROM json_each($n))`
 *   of a JSON array on SQLite;
 * - a one-time consume: one statement on PostgreSQL (the row lock decides, one round trip); on
 *   SQLite, which has no `FOR UPDATE`, an atomic unit of statements without logic between them
 *   (`UPDATE … WHERE consumed_at IS NULL RETURNING`, the next generation's insert guarded by
 *   `changes()`, and a read of the row as it now is), run as one transaction by the driver (one
 *   `batch()` on D1, which has no interactive transactions);
 * - migrations: PostgreSQL takes an advisory lock and creates the schema; SQLite's driver opens the
 *   transaction with `BEGIN IMMEDIATE`, which is the lock.
 *
 * @see https://www.sqlite.org/lang_returning.html
 * @see https://www.sqlite.org/lang_upsert.html
 */

/** One statement of an atomic unit: its text; every statement of the unit gets the same parameters. */
export interface ConsumeUnit {
  /** One statement (PostgreSQL) or several run as one transaction (SQLite). */
  statements: string[]
  /**
   * The outcome from each statement's rows: the row (record, consumed_at) and whether this call
   * consumed it; undefined when there is no live row.
   */
  read(results: unknown[][]): { record: unknown; consumed_at?: string | number | null; ok: boolean } | undefined
}

export interface SqlDialect {
  readonly name: 'postgres' | 'sqlite'
  /** What precedes a table name: `"schema".` on PostgreSQL, nothing on SQLite. */
  readonly prefix: string
  /** The name of table `gatehouse_<name>` as statements write it. */
  table(name: string): string
  /** A JSON parameter, e.g. `$2::jsonb` or `$2`. */
  json(parameter: string): string
  /** The column type of a JSON record. */
  readonly jsonType: string
  /** `column` is one of the strings in list parameter `parameter`; `list` encodes the values. */
  inList(column: string, parameter: string): string
  list(values: string[]): unknown
  /** The text field `field` of JSON column `column` (`NULL` when absent). */
  jsonText(column: string, field: string): string
  /** A text parameter compared with NULL and text, e.g. `$3::text`. */
  text(parameter: string): string
  /** The greater of two values. */
  greatest(a: string, b: string): string
  /** Consumes a one-time row: params `$1` id, `$2` at, and with `withNext` `$3`… `$6` the next row. */
  consume(table: string, withNext: boolean): ConsumeUnit
  /** Statements run first in the migration transaction (a lock, the schema). */
  migrationLock(): Array<{ text: string; params: unknown[] }>
  /** Creates the migrations table. */
  migrationsTable(): string
  /** A query whose one row has `name`, not null when the migrations table exists. */
  migrationsTableExists(): { text: string; params: unknown[] }
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * PostgreSQL: one-time rows are consumed in one statement (one round trip): it locks the live row
 * (`FOR UPDATE` waits for a concurrent consumer to commit, then reads the row as that one left it),
 * marks it consumed if it was not, and only then inserts the next record (`$3`… `$6`), if any. The
 * row lock decides the one `ok`; the others read the winner's `consumed_at`. No row: missing.
 */
function postgresConsume(table: string, withNext: boolean): ConsumeUnit {
  const insert = withNext
    ? `, inserted AS (
      INSERT INTO ${table} (id, family_id, record, expires_at)
      SELECT $3::text, $4::text, $5::jsonb, $6::bigint FROM consumed
    )`
    : ''
  const statement = `WITH cur AS MATERIALIZED (
      SELECT record, consumed_at FROM ${table} WHERE id = $1 AND expires_at > $2 FOR UPDATE
    ), consumed AS (
      UPDATE ${table} SET consumed_at = $2
      WHERE id = $1 AND EXISTS (SELECT 1 FROM cur WHERE consumed_at IS NULL) RETURNING id
    )${insert}
    SELECT record, consumed_at, EXISTS (SELECT 1 FROM consumed) AS ok FROM cur`
  return {
    statements: [statement],
    read: (results) => {
      const row = results[0]?.[0] as { record: unknown; consumed_at: string | number | null; ok: boolean } | undefined
      return row && { record: row.record, consumed_at: row.consumed_at, ok: Boolean(row.ok) }
    },
  }
}

/** The PostgreSQL dialect; tables in `schema` (default `public`). */
export function postgresDialect(schema = 'public'): SqlDialect {
  if (!SCHEMA_NAME.test(schema)) throw new TypeError('schema must be a lower-case SQL identifier')
  const s = `"${schema}"`
  const table = (name: string) => `${s}.gatehouse_${name}`
  return {
    name: 'postgres',
    prefix: `${s}.`,
    table,
    json: (parameter) => `${parameter}::jsonb`,
    jsonType: 'jsonb',
    inList: (column, parameter) => `${column} = ANY(${parameter}::text[])`,
    list: (values) => values,
    // `#>> '{}'` reads the record whether the driver stored it as a jsonb object or as a jsonb
    // string of its JSON.
    jsonText: (column, field) => `((${column} #>> '{}')::jsonb ->> '${field}')`,
    text: (parameter) => `${parameter}::text`,
    greatest: (a, b) => `GREATEST(${a}, ${b})`,
    consume: postgresConsume,
    migrationLock: () => [
      // One migrator at a time across instances (the key is the schema name's hash).
      { text: 'SELECT pg_advisory_xact_lock(hashtext($1))', params: [`gatehouse:${schema}`] },
      { text: `CREATE SCHEMA IF NOT EXISTS ${s}`, params: [] },
    ],
    migrationsTable: () =>
      `CREATE TABLE IF NOT EXISTS ${table('migrations')} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    migrationsTableExists: () => ({ text: 'SELECT to_regclass($1)::text AS name', params: [table('migrations')] }),
  }
}

/**
 * SQLite: a consume is three statements run as one transaction, with no logic between them (so one
 * D1 `batch()` runs them too): the guarded `UPDATE … RETURNING` is the decision (SQLite runs one
 * writer at a time, so of concurrent ones exactly one finds `consumed_at IS NULL`); the next
 * generation is inserted only when that update changed a row (`changes()` counts the previous
 * statement on the connection); the final read tells a replay (the row, with the winner's
 * `consumed_at`) from a missing or expired one (no row).
 */
function sqliteConsume(table: string, withNext: boolean): ConsumeUnit {
  const statements = [
    `UPDATE ${table} SET consumed_at = $2 WHERE id = $1 AND expires_at > $2 AND consumed_at IS NULL RETURNING record`,
    ...(withNext
      ? [
          `INSERT INTO ${table} (id, family_id, record, expires_at) SELECT $3, $4, $5, $6 WHERE changes() = 1
           AND EXISTS (SELECT 1 FROM ${table} WHERE id = $1 AND consumed_at = $2)`,
        ]
      : []),
    `SELECT record, consumed_at FROM ${table} WHERE id = $1 AND expires_at > $2`,
  ]
  return {
    statements,
    read: (results) => {
      const won = results[0]?.[0] as { record: unknown } | undefined
      if (won) return { record: won.record, ok: true }
      const row = results.at(-1)?.[0] as { record: unknown; consumed_at: number | null } | undefined
      return row && { record: row.record, consumed_at: row.consumed_at, ok: false }
    },
  }
}

/** The SQLite dialect: plain `gatehouse_*` tables, JSON as text. */
export function sqliteDialect(): SqlDialect {
  const table = (name: string) => `gatehouse_${name}`
  return {
    name: 'sqlite',
    prefix: '',
    table,
    json: (parameter) => parameter,
    jsonType: 'text',
    inList: (column, parameter) => `${column} IN (SELECT value FROM json_each(${parameter}))`,
    list: (values) => JSON.stringify(values),
    jsonText: (column, field) => `json_extract(${column}, '$.${field}')`,
    text: (parameter) => parameter,
    greatest: (a, b) => `max(${a}, ${b})`,
    consume: sqliteConsume,
    migrationLock: () => [],
    migrationsTable: () =>
      `CREATE TABLE IF NOT EXISTS ${table('migrations')} (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
    migrationsTableExists: () => ({
      text: `SELECT name FROM sqlite_master WHERE type = 'table' AND name = $1`,
      params: [table('migrations')],
    }),
  }
}

/**
 * Rewrites `$1`, `$2`, … into SQLite's `?1`, `?2`, … (outside string literals), and says how many
 * parameters the statement takes (its highest number), so a driver binds exactly those.
 */
export function toSqliteParameters(text: string): { text: string; count: number } {
  let count = 0
  const out = text.replace(/'(?:[^']|'')*'|\$(\d+)/g, (match, digits: string | undefined) => {
    if (digits === undefined) return match
    count = Math.max(count, Number(digits))
    return `?${digits}`
  })
  return { text: out, count }
}
