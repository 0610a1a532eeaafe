/**
 * @module storage/sql/grants
 * The grants of the SQL store (`Store.grants`, table `gatehouse_grants`, migration 5): one row per
 * grant under its family id, the record as JSON beside the `sub` and `expires_at` columns it is
 * looked up and pruned by. An end-user's grants are read through the index on `sub`.
 */
import type { GrantRecord, Store } from '../types.ts'
import type { SqlDialect } from './dialect.ts'

/** What the grants need of the driver (`SqlClient.query`). */
interface Queries {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
}

function parse(value: unknown): GrantRecord {
  return (typeof value === 'string' ? JSON.parse(value) : value) as GrantRecord
}

/** `Store.grants` over SQL. `run` maps failures to 503; `wrote` counts a write for pruning. */
export function sqlGrants(deps: {
  client: Queries
  dialect: SqlDialect
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
}): Store['grants'] {
  const { client, dialect, run, wrote } = deps
  const t = dialect.table('grants')
  return {
    put: (record) =>
      run('grants.put', async () => {
        await client.query(
          `INSERT INTO ${t} (id, sub, record, expires_at) VALUES ($1, $2, ${dialect.json('$3')}, $4)
           ON CONFLICT (id) DO UPDATE SET sub = EXCLUDED.sub, record = EXCLUDED.record, expires_at = EXCLUDED.expires_at`,
          [record.id, record.sub, JSON.stringify(record), record.expiresAt],
        )
        wrote()
      }),
    get: (id, at) =>
      run('grants.get', async () => {
        const rows = await client.query<{ record: unknown }>(
          `SELECT record FROM ${t} WHERE id = $1 AND expires_at > $2`,
          [id, at],
        )
        return rows[0] ? parse(rows[0].record) : undefined
      }),
    listBySub: (sub, at) =>
      run('grants.listBySub', async () => {
        const rows = await client.query<{ record: unknown }>(
          `SELECT record FROM ${t} WHERE sub = $1 AND expires_at > $2`,
          [sub, at],
        )
        return rows.map((row) => parse(row.record))
      }),
    delete: (id) =>
      run('grants.delete', async () => {
        await client.query(`DELETE FROM ${t} WHERE id = $1`, [id])
      }),
  }
}
