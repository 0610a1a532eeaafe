/**
 * @module storage/sql/statements
 * SQL text the store builds once: the one-statement consume/rotate and the tables that expire.
 */

/** Tables whose rows carry `expires_at` and are pruned once expired. */
export const PRUNED_TABLES: readonly string[] = [
  'codes',
  'refresh_tokens',
  'sessions',
  'interactions',
  'revoked_families',
  'revoked_access_tokens',
  'attempts',
  'pushed_requests',
  'replays',
]

/**
 * Consumes a one-time row in one statement (one round trip): locks the live row (`FOR UPDATE`
 * waits for a concurrent consumer to commit, then reads the row as that one left it), marks it
 * consumed if it was not, and only then inserts the next record (`$3`… `$6`), if any. The row
 * lock decides the one `ok`; the others read the winner's `consumed_at`. No row: missing.
 * `table` is the schema-qualified table name.
 */
export function consumeStatement(table: string, withNext: boolean): string {
  const insert = withNext
    ? `, inserted AS (
      INSERT INTO ${table} (id, family_id, record, expires_at)
      SELECT $3::text, $4::text, $5::jsonb, $6::bigint FROM consumed
    )`
    : ''
  return `WITH cur AS MATERIALIZED (
      SELECT record, consumed_at FROM ${table} WHERE id = $1 AND expires_at > $2 FOR UPDATE
    ), consumed AS (
      UPDATE ${table} SET consumed_at = $2
      WHERE id = $1 AND EXISTS (SELECT 1 FROM cur WHERE consumed_at IS NULL) RETURNING id
    )${insert}
    SELECT record, consumed_at, EXISTS (SELECT 1 FROM consumed) AS ok FROM cur`
}
