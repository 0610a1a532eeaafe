/**
 * @module storage/sql/ciba_requests
 * The backchannel authentication requests of the SQL store (`Store.cibaRequests`, OpenID CIBA;
 * table `gatehouse_ciba_requests`, migration 6). As for device codes (device_codes.ts): the record
 * is stored as inserted and what changes later is in columns (`status`, `login`, `poll_interval`,
 * `polled_at`, `consumed_at`), so a decision and a poll are each one conditional
 * `UPDATE … RETURNING`, atomic across processes (the row lock on PostgreSQL, the one writer on
 * SQLite and D1). When a poll's `UPDATE` changes no row, a read tells why.
 *
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.11
 */
import { CIBA_REQUEST_RETENTION, type CibaPoll, type CibaRequestRecord, type Store } from '../types.ts'
import type { SqlDialect } from './dialect.ts'
import { PENDING_COLUMNS, type PendingRow, pendingRecord, pollStatement } from './device_codes.ts'

/** What the CIBA requests need of the driver (`SqlClient`). */
interface Client {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
}

/** The device codes' row, columns and poll (device_codes.ts): a CIBA request is polled alike. */
type CibaRow = PendingRow<CibaRequestRecord>
const COLUMNS = PENDING_COLUMNS
const toRecord = (row: CibaRow): CibaRequestRecord => pendingRecord(row)

/** `Store.cibaRequests` over SQL. `run` maps failures to 503; `wrote` counts a write for pruning. */
export function sqlCibaRequests(deps: {
  client: Client
  dialect: SqlDialect
  now: () => number
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
}): Store['cibaRequests'] {
  const { client, dialect, now, run, wrote } = deps
  const t = dialect.table('ciba_requests')
  const j = dialect.json

  const insert = `INSERT INTO ${t} (id, approval_id, record, status, login, poll_interval, polled_at, request_expires_at, expires_at, consumed_at)
    VALUES (CAST($1 AS text), CAST($2 AS text), ${j('$3')}, CAST($4 AS text), ${j('$5')}, CAST($6 AS integer),
      CAST($7 AS bigint), CAST($8 AS bigint), CAST($9 AS bigint), CAST($10 AS bigint))`
  const poll = pollStatement(t, 'request_expires_at')
  const read = `SELECT ${COLUMNS} FROM ${t} WHERE id = $1 AND expires_at > $2`

  async function pollOnce(id: string, at: number): Promise<CibaPoll> {
    const changed = (await client.query<CibaRow>(poll, [id, at]))[0]
    if (changed) {
      const status =
        changed.poll_answer === 'ok' || changed.poll_answer === 'slow_down' ? changed.poll_answer : 'pending'
      return { status, record: toRecord(changed) }
    }
    const row = (await client.query<CibaRow>(read, [id, at]))[0]
    if (!row) return { status: 'missing' }
    const record = toRecord(row)
    if (record.consumedAt !== undefined) return { status: 'replayed', record }
    if (record.expiresAt <= at) return { status: 'expired', record }
    if (record.status === 'denied') return { status: 'denied', record }
    // Inserted before the UPDATE ran is the only way here (a row is never un-decided): say pending.
    return { status: 'pending', record }
  }

  return {
    insert: (record) =>
      run('cibaRequests.insert', async () => {
        await client.query(insert, [
          record.id,
          record.approvalId,
          JSON.stringify(record),
          record.status,
          record.login ? JSON.stringify(record.login) : null,
          record.interval,
          record.polledAt ?? null,
          record.expiresAt,
          record.expiresAt + CIBA_REQUEST_RETENTION,
          record.consumedAt ?? null,
        ])
        wrote()
      }),
    get: (id) =>
      run('cibaRequests.get', async () => {
        const rows = await client.query<CibaRow>(read, [id, now()])
        return rows[0] && toRecord(rows[0])
      }),
    findByApproval: (approvalId, at) =>
      run('cibaRequests.findByApproval', async () => {
        const rows = await client.query<CibaRow>(
          `SELECT ${COLUMNS} FROM ${t} WHERE approval_id = $1 AND request_expires_at > $2`,
          [approvalId, at],
        )
        return rows[0] && toRecord(rows[0])
      }),
    decide: (id, decision, at) =>
      run('cibaRequests.decide', async () => {
        // Only a pending, unexpired row changes: of concurrent decisions, one finds it pending.
        const rows = await client.query(
          `UPDATE ${t} SET status = CAST($2 AS text), login = ${j('$3')}
           WHERE id = $1 AND status = 'pending' AND request_expires_at > $4 AND expires_at > $4 RETURNING id`,
          [id, decision.status, decision.status === 'approved' ? JSON.stringify(decision.login) : null, at],
        )
        return rows.length === 1
      }),
    poll: (id, at) => run('cibaRequests.poll', () => pollOnce(id, at)),
  }
}
