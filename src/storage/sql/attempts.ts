/**
 * @module storage/sql/attempts
 * The attempt counters of the SQL store (`Store.attempts`, table `gatehouse_attempts`): fixed
 * windows, each hit or take one upsert statement, so the row lock serialises concurrent callers on
 * any number of instances. A check-then-hit pair let a burst past the registration cap on
 * PostgreSQL (#27 item 8); `take` checks and counts in the one statement.
 */
import type { Store } from '../types.ts'

/** What the counters need of the driver (`SqlClient.query`). */
interface Queries {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
}

type CounterRow = { count: number; expires_at: string | number }

/** `Store.attempts` over SQL. `table` is the schema-qualified table; `wrote` counts a write for pruning. */
export function sqlAttempts(deps: {
  client: Queries
  table: string
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
}): Store['attempts'] {
  const { client, table, run, wrote } = deps
  // An ended window restarts at 1; otherwise the count goes up by one and the window stays.
  const upsert = `INSERT INTO ${table} AS a (key, count, expires_at) VALUES ($1, 1, $2)
     ON CONFLICT (key) DO UPDATE SET
       count = CASE WHEN a.expires_at <= $3 THEN 1 ELSE a.count + 1 END,
       expires_at = CASE WHEN a.expires_at <= $3 THEN $2 ELSE a.expires_at END`
  return {
    hit: (key, window, at) =>
      run('attempts.hit', async () => {
        const rows = await client.query<CounterRow>(`${upsert} RETURNING count, expires_at`, [key, at + window, at])
        wrote()
        const row = rows[0]
        return { count: Number(row?.count ?? 1), resetAt: Number(row?.expires_at ?? at + window) }
      }),
    get: (key, at) =>
      run('attempts.get', async () => {
        const rows = await client.query<CounterRow>(
          `SELECT count, expires_at FROM ${table} WHERE key = $1 AND expires_at > $2`,
          [key, at],
        )
        const row = rows[0]
        return row ? { count: Number(row.count), resetAt: Number(row.expires_at) } : undefined
      }),
    take: (key, limit, window, at) =>
      run('attempts.take', async () => {
        // The WHERE leaves a full window untouched: no row comes back, nothing is counted.
        const rows = await client.query<CounterRow>(
          `${upsert} WHERE a.expires_at <= $3 OR a.count < $4 RETURNING count, expires_at`,
          [key, at + window, at, limit],
        )
        const row = rows[0]
        if (row) {
          wrote()
          return { taken: true, count: Number(row.count), resetAt: Number(row.expires_at) }
        }
        // Refused: the full counter, for Retry-After (a window ending meanwhile answers in 1 s).
        const full = await client.query<CounterRow>(`SELECT count, expires_at FROM ${table} WHERE key = $1`, [key])
        const counter = full[0]
        return {
          taken: false,
          count: Number(counter?.count ?? limit),
          resetAt: Math.max(at + 1, Number(counter?.expires_at ?? at + 1)),
        }
      }),
  }
}
