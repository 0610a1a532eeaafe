/**
 * @module storage/sql/grants
 * The grants of the SQL store (`Store.grants`, table `gatehouse_grants`, migration 5): one row per
 * grant under its family id, the record as JSON beside the `sub` and `expires_at` columns it is
 * looked up and pruned by. An end-user's grants are read through the index on `sub`. A grant's
 * last use (`touch`) is a row of its own in `gatehouse_grant_uses` (migration 7), read with it.
 */
import type { GrantRecord, Store } from '../types.ts'
import type { SqlDialect } from './dialect.ts'

/** What the grants need of the driver (`SqlClient.query`). */
interface Queries {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
}

/** A grant's row as read: the record, and its last use from `gatehouse_grant_uses` if touched. */
interface Row {
  record: unknown
  last_used_at: string | number | null
}

/**
 * The record of a row, with the later of the two last uses: the one a put wrote in the record and
 * the one `touch` keeps beside it. A put thus never lowers it, and a touch is never undone.
 */
function parse(row: Row): GrantRecord {
  const record = (typeof row.record === 'string' ? JSON.parse(row.record) : row.record) as GrantRecord
  const touched = row.last_used_at == null ? undefined : Number(row.last_used_at)
  if (touched !== undefined && !(Number(record.lastUsedAt) >= touched)) record.lastUsedAt = touched
  return record
}

/**
 * Prunes the last uses of grants that ended: rows touched before their grant's end, unless the
 * grant lives on (put again with a later end). Run by the store's `prune` with `$1` the time.
 */
export function pruneGrantUses(dialect: SqlDialect): string {
  const uses = dialect.table('grant_uses')
  return `DELETE FROM ${uses} WHERE expires_at <= $1
    AND NOT EXISTS (SELECT 1 FROM ${dialect.table('grants')} g WHERE g.id = ${uses}.id AND g.expires_at > $1)`
}

/** `Store.grants` over SQL. `run` maps failures to 503; `wrote` counts a write for pruning. */
export function sqlGrants(deps: {
  client: Queries
  dialect: SqlDialect
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
  /** A record as its JSON parameter (text, or the record itself where the driver encodes it). */
  json?: (value: unknown) => unknown
}): Store['grants'] {
  const { client, dialect, run, wrote } = deps
  const json = deps.json ?? JSON.stringify
  const t = dialect.table('grants')
  const uses = dialect.table('grant_uses')
  const select = `SELECT g.record, u.last_used_at FROM ${t} g LEFT JOIN ${uses} u ON u.id = g.id`
  // PostgreSQL: the grant's row is share-locked while its use is written, so a concurrent delete
  // either waits for the touch (and then deletes its use too) or has committed (nothing to touch).
  // SQLite runs one writer at a time.
  const lock = dialect.name === 'postgres' ? ' FOR SHARE' : ''
  return {
    put: (record) =>
      run('grants.put', async () => {
        await client.query(
          `INSERT INTO ${t} (id, sub, record, expires_at) VALUES ($1, $2, ${dialect.json('$3')}, $4)
           ON CONFLICT (id) DO UPDATE SET sub = EXCLUDED.sub, record = EXCLUDED.record, expires_at = EXCLUDED.expires_at`,
          [record.id, record.sub, json(record), record.expiresAt],
        )
        wrote()
      }),
    get: (id, at) =>
      run('grants.get', async () => {
        const rows = await client.query<Row>(`${select} WHERE g.id = $1 AND g.expires_at > $2`, [id, at])
        return rows[0] ? parse(rows[0]) : undefined
      }),
    listBySub: (sub, at) =>
      run('grants.listBySub', async () => {
        const rows = await client.query<Row>(`${select} WHERE g.sub = $1 AND g.expires_at > $2`, [sub, at])
        return rows.map(parse)
      }),
    delete: (id) =>
      run('grants.delete', async () => {
        // The grant first: from then on a touch finds nothing to write a use for.
        await client.query(`DELETE FROM ${t} WHERE id = $1`, [id])
        await client.query(`DELETE FROM ${uses} WHERE id = $1`, [id])
      }),
    touch: (id, at) =>
      run('grants.touch', async () => {
        // One upsert, only for a live grant and only to a later time; the record is not rewritten.
        await client.query(
          `INSERT INTO ${uses} AS u (id, last_used_at, expires_at)
           SELECT id, CAST($2 AS bigint), expires_at FROM ${t} WHERE id = $1 AND expires_at > $2${lock}
           ON CONFLICT (id) DO UPDATE SET last_used_at = EXCLUDED.last_used_at, expires_at = EXCLUDED.expires_at
           WHERE u.last_used_at < EXCLUDED.last_used_at`,
          [id, at],
        )
        wrote()
      }),
  }
}
