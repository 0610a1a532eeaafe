/**
 * @module storage/sql/redeem_sqlite
 * SQLite's one-transaction redemption and rotation (#44 item 3): `codes.redeem` and
 * `refreshTokens.rotateUnlessRevoked` as one `BEGIN IMMEDIATE … COMMIT` of statements with no
 * logic between them (the driver's `batch`, as D1 runs one), where the steps were three or four
 * transactions: one commit, so one WAL sync under `synchronous=FULL`, instead of one per write.
 *
 * The statements, all with the same parameters, in the one writer's transaction (SQLite runs one
 * at a time, so nothing interleaves): the guarded `UPDATE … WHERE consumed_at IS NULL` unless a
 * family in `$3` is revoked (the decision: of concurrent callers one changes the row); then, only
 * when it changed nothing, a read of why (the row, the revocation: what the update left as it
 * was); then the writes, each only when the statement before it changed a row (`changes()` counts
 * the last INSERT, UPDATE or DELETE on the connection; a SELECT leaves it): the grant's upsert
 * after the consume, the refresh token's insert after the grant's. A consume that succeeds reads
 * nothing more (#44: one lookup of the row and of the revocations, not two). A revoked family
 * changes nothing and wins over the other outcomes, as on PostgreSQL (redeem.ts).
 */
import type { Redeemed, RefreshTokenRecord, Store } from '../types.ts'
import type { SqlDialect } from './dialect.ts'

/** What the statements need of the store. */
interface Deps {
  batch(statements: string[], params: unknown[]): Promise<unknown[][]>
  dialect: SqlDialect
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
  json: (value: unknown) => unknown
}

/** After a consume that changed nothing (`changes() = 0`), why: the row (`found`) and the revocation. */
function refusalOf(dialect: SqlDialect, table: string): string {
  return `SELECT EXISTS (SELECT 1 FROM ${table} WHERE id = $1 AND expires_at > $2) AS found,
      EXISTS (SELECT 1 FROM ${dialect.table('revoked_families')}
        WHERE ${dialect.inList('family_id', '$3')} AND expires_at > $2) AS revoked
      WHERE changes() = 0`
}

/** The decision: consumes the live, unconsumed row `$1` at `$2` unless a family in `$3` is revoked. */
function consumeUnlessRevoked(dialect: SqlDialect, table: string): string {
  return `UPDATE ${table} SET consumed_at = $2 WHERE id = $1 AND expires_at > $2 AND consumed_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM ${dialect.table('revoked_families')}
        WHERE ${dialect.inList('family_id', '$3')} AND expires_at > $2)
      RETURNING 1 AS ok`
}

/** The outcome from the batch's results: the consume's row, else the refusal's. */
function outcome(results: unknown[][]): Redeemed {
  if (results[0]?.length === 1) return { status: 'ok' }
  const row = results[1]?.[0] as { found: number; revoked: number } | undefined
  if (!row) throw new Error('the redemption statements returned no row')
  if (row.revoked) return { status: 'revoked' }
  return { status: row.found ? 'replayed' : 'missing' }
}

/** `codes.redeem` and `refreshTokens.rotateUnlessRevoked` on SQLite. */
export function sqliteRedemption(deps: Deps): {
  redeem: NonNullable<Store['codes']['redeem']>
  rotateUnlessRevoked(id: string, next: RefreshTokenRecord, now: number, unlessRevoked: string[]): Promise<Redeemed>
} {
  const { dialect, run, wrote, json } = deps
  const codes = dialect.table('codes')
  const tokens = dialect.table('refresh_tokens')
  /** And the row was consumed by this call (`consumed_at` its `now`), as dialect.ts's writes check too. */
  const consumedHere = (table: string) => ` AND EXISTS (SELECT 1 FROM ${table} WHERE id = $1 AND consumed_at = $2)`
  const insertToken = (table: string, guard: string) =>
    `INSERT INTO ${tokens} (id, family_id, record, expires_at) SELECT $4, $5, $6, $7 WHERE changes() = 1${consumedHere(table)}${guard}`
  const redeemCode = [
    consumeUnlessRevoked(dialect, codes),
    refusalOf(dialect, codes),
    // `WHERE` before `ON CONFLICT`: SQLite's upsert after a SELECT needs one (lang_upsert.html).
    `INSERT INTO ${dialect.table('grants')} (id, sub, record, expires_at) SELECT $8, $9, $10, $11 WHERE changes() = 1${consumedHere(codes)}
     ON CONFLICT (id) DO UPDATE SET sub = EXCLUDED.sub, record = EXCLUDED.record, expires_at = EXCLUDED.expires_at`,
    insertToken(codes, ' AND $4 IS NOT NULL'),
  ]
  const rotate = [consumeUnlessRevoked(dialect, tokens), refusalOf(dialect, tokens), insertToken(tokens, '')]
  return {
    redeem: (id, now, { unlessRevoked, refreshToken, grant }) =>
      run('codes.redeem', async () => {
        const token = refreshToken
          ? [refreshToken.id, refreshToken.familyId, json(refreshToken), refreshToken.expiresAt]
          : [null, null, null, null]
        const params = [id, now, dialect.list(unlessRevoked), ...token]
        const results = await deps.batch(redeemCode, [...params, grant.id, grant.sub, json(grant), grant.expiresAt])
        const result = outcome(results)
        if (result.status === 'ok') wrote()
        return result
      }),
    rotateUnlessRevoked: (id, next, now, unlessRevoked) =>
      run('refreshTokens.rotateUnlessRevoked', async () => {
        const params = [id, now, dialect.list(unlessRevoked), next.id, next.familyId, json(next), next.expiresAt]
        const result = outcome(await deps.batch(rotate, params))
        if (result.status === 'ok') wrote()
        return result
      }),
  }
}
