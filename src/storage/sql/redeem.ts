/**
 * @module storage/sql/redeem
 * PostgreSQL's one-statement redemption and rotation (#44 item 1): `codes.redeem` and
 * `refreshTokens.rotateUnlessRevoked`. Each is the dialect's consume (dialect.ts: the row lock
 * decides the one winner, a loser reads the winner's `consumed_at`) with, in the same statement,
 * the revocation check the grant asked separately before, and for a code the writes that followed
 * it (the refresh token, the grant's record). One round trip where there were three or four.
 *
 * Revocation is read from the statement's snapshot, taken before the row lock is waited for: a
 * replay revokes a family only after its own consume saw the winner's, so a check in the winner's
 * statement never sees the revocation its own success provoked (as when it was asked first, #27
 * item 12). A revoked family changes nothing (`revoked` wins over the other outcomes, as the
 * separate check did by coming first). Nothing of the record is returned: the caller read it.
 */
import type { Redeemed, RefreshTokenRecord, Store } from '../types.ts'
import type { SqlDialect } from './dialect.ts'
import { type Kind, type ManyItem, manyStatements, redemptionBatches } from './redeem_many.ts'
import { sqliteRedemption } from './redeem_sqlite.ts'

/** What the statements need of the store. */
interface Deps {
  client: {
    query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
  }
  dialect: SqlDialect
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
  /** A record as the statements' `jsonb` parameters take it. */
  json: (value: unknown) => unknown
  /** The scope calls may share a statement within (a Worker's request); default all of them. */
  scope?: (() => object | undefined) | undefined
}

interface Outcome {
  found: boolean
  ok: boolean
  revoked: boolean
}

/**
 * The consume of `table`'s row `$1` at `$2` unless a family in `$3` is revoked, `writes` (CTEs
 * reading `consumed`, which has a row only when this statement consumed) in the same statement.
 */
function consumeUnlessRevoked(dialect: SqlDialect, table: string, writes: string): string {
  return `WITH cur AS MATERIALIZED (
      SELECT consumed_at FROM ${table} WHERE id = $1 AND expires_at > $2 FOR UPDATE
    ), revoked AS MATERIALIZED (
      SELECT 1 FROM ${dialect.table('revoked_families')} WHERE family_id = ANY($3::text[]) AND expires_at > $2 LIMIT 1
    ), consumed AS (
      UPDATE ${table} SET consumed_at = $2 WHERE id = $1
      AND EXISTS (SELECT 1 FROM cur WHERE consumed_at IS NULL) AND NOT EXISTS (SELECT 1 FROM revoked)
      RETURNING id
    )${writes}
    SELECT EXISTS (SELECT 1 FROM cur) AS found, EXISTS (SELECT 1 FROM consumed) AS ok,
      EXISTS (SELECT 1 FROM revoked) AS revoked`
}

function outcome(rows: Outcome[]): Redeemed {
  const row = rows[0]
  if (!row) throw new Error('the redemption statement returned no row')
  if (row.revoked) return { status: 'revoked' }
  if (!row.found) return { status: 'missing' }
  return { status: row.ok ? 'ok' : 'replayed' }
}

/** `codes.redeem` and `refreshTokens.rotateUnlessRevoked` on PostgreSQL (and PGlite). */
export function postgresRedemption(deps: Deps): {
  redeem: NonNullable<Store['codes']['redeem']>
  rotateUnlessRevoked(id: string, next: RefreshTokenRecord, now: number, unlessRevoked: string[]): Promise<Redeemed>
} {
  const { client, dialect, json } = deps
  const tokens = dialect.table('refresh_tokens')
  const redeemCode = consumeUnlessRevoked(
    dialect,
    dialect.table('codes'),
    `, refreshed AS (
      INSERT INTO ${tokens} (id, family_id, record, expires_at)
      SELECT $4::text, $5::text, $6::jsonb, $7::bigint FROM consumed WHERE $4::text IS NOT NULL
    ), granted AS (
      INSERT INTO ${dialect.table('grants')} (id, sub, record, expires_at)
      SELECT $8::text, $9::text, $10::jsonb, $11::bigint FROM consumed
      ON CONFLICT (id) DO UPDATE SET sub = EXCLUDED.sub, record = EXCLUDED.record, expires_at = EXCLUDED.expires_at
    )`,
  )
  const rotate = consumeUnlessRevoked(
    dialect,
    tokens,
    `, inserted AS (
      INSERT INTO ${tokens} (id, family_id, record, expires_at)
      SELECT $4::text, $5::text, $6::jsonb, $7::bigint FROM consumed
    )`,
  )
  // #44: concurrent calls share a statement (call_batch.ts, redeem_many.ts); one call alone runs
  // the statement above, prepared once per connection.
  const single: Record<Kind, (item: ManyItem) => Promise<Redeemed>> = {
    codes: (item) =>
      client
        .query<Outcome>(redeemCode, [
          item.id,
          item.at,
          item.unless,
          ...(item.token
            ? [item.token.id, item.token.familyId, json(item.token.record), item.token.expiresAt]
            : [null, null, null, null]),
          item.grant?.id,
          item.grant?.sub,
          json(item.grant?.record),
          item.grant?.expiresAt,
        ])
        .then(outcome),
    refreshTokens: (item) => {
      const next = item.token as NonNullable<ManyItem['token']>
      return client
        .query<Outcome>(rotate, [
          item.id,
          item.at,
          item.unless,
          next.id,
          next.familyId,
          json(next.record),
          next.expiresAt,
        ])
        .then(outcome)
    },
  }
  const batchOf = redemptionBatches({ ...deps, single, statements: manyStatements(dialect) })
  const redeemOne = (item: Omit<ManyItem, 'n'>) => batchOf('codes')(item)
  const rotateOne = (item: Omit<ManyItem, 'n'>) => batchOf('refreshTokens')(item)
  return {
    redeem: (id, now, { unlessRevoked, refreshToken, grant }) =>
      redeemOne({
        id,
        at: now,
        unless: unlessRevoked,
        ...(refreshToken
          ? {
              token: {
                id: refreshToken.id,
                familyId: refreshToken.familyId,
                record: refreshToken,
                expiresAt: refreshToken.expiresAt,
              },
            }
          : {}),
        grant: { id: grant.id, sub: grant.sub, record: grant, expiresAt: grant.expiresAt },
      }),
    rotateUnlessRevoked: (id, next, now, unlessRevoked) =>
      rotateOne({
        id,
        at: now,
        unless: unlessRevoked,
        token: { id: next.id, familyId: next.familyId, record: next, expiresAt: next.expiresAt },
      }),
  }
}

/**
 * The dialect's redemption: PostgreSQL's one statement; on SQLite (a driver with `batch`) one
 * transaction of statements (#44 item 3, redeem_sqlite.ts); else none (the grants take the steps).
 */
export function sqlRedemption(
  deps: Deps & { client: { batch?(statements: string[], params: unknown[]): Promise<unknown[][]> } },
): ReturnType<typeof postgresRedemption> | undefined {
  if (deps.dialect.name === 'postgres') return postgresRedemption(deps)
  const { client } = deps
  return client.batch ? sqliteRedemption({ ...deps, batch: client.batch.bind(client) }) : undefined
}
