/**
 * @module storage/sql/device_codes
 * The device authorizations of the SQL store (`Store.deviceCodes`, RFC 8628; table
 * `gatehouse_device_codes`, migration 4). The record is stored as inserted; what changes later is
 * in columns (`status`, `login`, `poll_interval`, `polled_at`, `consumed_at`), so that a decision
 * and a poll are each one conditional `UPDATE … RETURNING`: the row lock (PostgreSQL) or the one
 * writer (SQLite, D1) makes it atomic across processes. A poll's answer is decided by the `UPDATE`
 * itself (`poll_answer`, computed from the row as it was); when the `UPDATE` finds no row to change
 * (redeemed, denied, expired or unknown), a read of the row tells which.
 *
 * The user code is unique among live records: a unique index on `user_code`, and an insert first
 * clears the code from an expired holder (which stays, without a user code, until its retention
 * ends, so a late poll still learns `expired_token`). On SQLite the two statements are one
 * `batch()` (one transaction; D1 has no other); on PostgreSQL they run one after the other, and
 * the unique index decides between concurrent inserts.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8628#section-3.5
 */
import {
  type CibaRequestRecord,
  DEVICE_CODE_RETENTION,
  type DeviceCodeRecord,
  type DevicePoll,
  type Store,
} from '../types.ts'
import type { SqlDialect } from './dialect.ts'

/** What the device codes need of the driver (`SqlClient`). */
interface Client {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
  batch?(statements: string[], params: unknown[]): Promise<unknown[][]>
}

/** The row of a pending authorization (a device code, a CIBA request): the record and what changed since. */
export interface PendingRow<T extends DeviceCodeRecord | CibaRequestRecord> {
  record: unknown
  status: T['status']
  login: unknown
  poll_interval: number | string
  polled_at: number | string | null
  consumed_at: number | string | null
  poll_answer?: 'ok' | 'pending' | 'slow_down' | null
}
type DeviceRow = PendingRow<DeviceCodeRecord>

/** The columns a pending authorization is read from. */
export const PENDING_COLUMNS = 'record, status, login, poll_interval, polled_at, consumed_at'
const COLUMNS = PENDING_COLUMNS

function parse<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T
}

/** The record as it now is: the inserted record with the columns that changed since. */
export function pendingRecord<T extends DeviceCodeRecord | CibaRequestRecord>(row: PendingRow<T>): T {
  const { login: _login, polledAt: _polledAt, consumedAt: _consumedAt, ...base } = parse<T>(row.record)
  return {
    ...base,
    status: row.status,
    interval: Number(row.poll_interval),
    ...(row.login == null ? {} : { login: parse<NonNullable<T['login']>>(row.login) }),
    ...(row.polled_at == null ? {} : { polledAt: Number(row.polled_at) }),
    ...(row.consumed_at == null ? {} : { consumedAt: Number(row.consumed_at) }),
  } as T
}
const toRecord = (row: DeviceRow): DeviceCodeRecord => pendingRecord(row)

/**
 * One poll as one `UPDATE … RETURNING` ($1 id, $2 now) on `table`, whose lifetime column is
 * `lifetime`: SET expressions read the row as it was, so `poll_answer` is this call's answer.
 */
export function pollStatement(table: string, lifetime: string): string {
  const tooSoon = 'polled_at IS NOT NULL AND $2 - polled_at < poll_interval'
  return `UPDATE ${table} SET
      poll_answer = CASE WHEN status = 'approved' THEN 'ok' WHEN ${tooSoon} THEN 'slow_down' ELSE 'pending' END,
      consumed_at = CASE WHEN status = 'approved' THEN $2 ELSE consumed_at END,
      poll_interval = CASE WHEN status = 'pending' AND ${tooSoon} THEN poll_interval + 5 ELSE poll_interval END,
      polled_at = CASE WHEN status = 'pending' THEN $2 ELSE polled_at END
    WHERE id = $1 AND expires_at > $2 AND ${lifetime} > $2 AND consumed_at IS NULL AND status <> 'denied'
    RETURNING ${PENDING_COLUMNS}, poll_answer`
}

/** The highest `$n` of a statement: how many of the shared parameters it takes. */
function parameterCount(text: string): number {
  let count = 0
  for (const match of text.matchAll(/\$(\d+)/g)) count = Math.max(count, Number(match[1]))
  return count
}

/** `Store.deviceCodes` over SQL. `run` maps failures to 503; `wrote` counts a write for pruning. */
export function sqlDeviceCodes(deps: {
  client: Client
  dialect: SqlDialect
  now: () => number
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
}): Store['deviceCodes'] {
  const { client, dialect, now, run, wrote } = deps
  const t = dialect.table('device_codes')
  const j = dialect.json

  /**
   * Runs statements that share parameters (each takes the first ones it names): one `batch()`, one
   * transaction, where the driver has it (SQLite, D1); else one after the other, until `enough`
   * says the rows so far answer (PostgreSQL, where each statement is atomic on its own).
   */
  async function sequence(
    statements: string[],
    params: unknown[],
    enough: (rows: unknown[]) => boolean = () => false,
  ): Promise<unknown[][]> {
    if (client.batch) return client.batch(statements, params)
    const results: unknown[][] = []
    for (const text of statements) {
      const rows = await client.query(text, params.slice(0, parameterCount(text)))
      results.push(rows)
      if (enough(rows)) break
    }
    return results
  }

  // $1 user code, $2 now; the insert's guard repeats the unique index's rule for a clear answer.
  const freeUserCode = `UPDATE ${t} SET user_code = NULL WHERE user_code = $1 AND code_expires_at <= $2`
  const insert = `INSERT INTO ${t} (id, user_code, record, status, login, poll_interval, polled_at, code_expires_at, expires_at, consumed_at)
    SELECT CAST($3 AS text), CAST($1 AS text), ${j('$4')}, CAST($5 AS text), ${j('$6')}, CAST($7 AS integer),
      CAST($8 AS bigint), CAST($9 AS bigint), CAST($10 AS bigint), CAST($11 AS bigint)
    WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE user_code = $1 AND code_expires_at > $2)
    ON CONFLICT DO NOTHING RETURNING id`
  const poll = pollStatement(t, 'code_expires_at')
  const read = `SELECT ${COLUMNS} FROM ${t} WHERE id = $1 AND expires_at > $2`

  async function pollOnce(id: string, at: number, attempt: number): Promise<DevicePoll> {
    const results = await sequence([poll, read], [id, at], (rows) => rows.length > 0)
    const changed = results[0]?.[0] as DeviceRow | undefined
    if (changed) {
      const status =
        changed.poll_answer === 'ok' || changed.poll_answer === 'slow_down' ? changed.poll_answer : 'pending'
      return { status, record: toRecord(changed) }
    }
    const row = results[1]?.[0] as DeviceRow | undefined
    if (!row) return { status: 'missing' }
    const record = toRecord(row)
    if (record.consumedAt !== undefined) return { status: 'replayed', record }
    if (record.expiresAt <= at) return { status: 'expired', record }
    if (record.status === 'denied') return { status: 'denied', record }
    // Live and undecided, yet the UPDATE found nothing: the row appeared between the two
    // statements (PostgreSQL only). Poll again.
    return attempt < 3 ? pollOnce(id, at, attempt + 1) : { status: 'missing' }
  }

  return {
    insert: (record, at) =>
      run('deviceCodes.insert', async () => {
        const params = [
          record.userCode,
          at,
          record.id,
          JSON.stringify(record),
          record.status,
          record.login ? JSON.stringify(record.login) : null,
          record.interval,
          record.polledAt ?? null,
          record.expiresAt,
          record.expiresAt + DEVICE_CODE_RETENTION,
          record.consumedAt ?? null,
        ]
        const results = await sequence([freeUserCode, insert], params)
        const inserted = results[1]?.length === 1
        if (inserted) wrote()
        return inserted
      }),
    get: (id) =>
      run('deviceCodes.get', async () => {
        const rows = await client.query<DeviceRow>(read, [id, now()])
        return rows[0] && toRecord(rows[0])
      }),
    findByUserCode: (userCode, at) =>
      run('deviceCodes.findByUserCode', async () => {
        const rows = await client.query<DeviceRow>(
          `SELECT ${COLUMNS} FROM ${t} WHERE user_code = $1 AND code_expires_at > $2`,
          [userCode, at],
        )
        return rows[0] && toRecord(rows[0])
      }),
    decide: (id, decision, at) =>
      run('deviceCodes.decide', async () => {
        // Only a pending, unexpired row changes: of concurrent decisions, one finds it pending.
        const rows = await client.query(
          `UPDATE ${t} SET status = CAST($2 AS text), login = ${j('$3')}
           WHERE id = $1 AND status = 'pending' AND code_expires_at > $4 AND expires_at > $4 RETURNING id`,
          [id, decision.status, decision.status === 'approved' ? JSON.stringify(decision.login) : null, at],
        )
        return rows.length === 1
      }),
    poll: (id, at) => run('deviceCodes.poll', () => pollOnce(id, at, 0)),
  }
}
