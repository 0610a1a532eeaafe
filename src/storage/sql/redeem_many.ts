/**
 * @module storage/sql/redeem_many
 * PostgreSQL's redemptions and rotations of concurrent calls in one statement (#44): what
 * redeem.ts's one statement does for one code or refresh token, for a batch of them (call_batch.ts
 * gathers them; a batch of one runs redeem.ts's statement). The calls travel as one `jsonb` array;
 * the rows are locked in `id` order (two instances' batches naming the same rows cannot deadlock),
 * and every call's outcome is its own: its row, its `now`, its families' revocation, and its writes
 * only when it consumed. A batch names each row once (call_batch.ts holds a second call for a row
 * to the next batch); calls that write one grant keep the last call's record, as one after another
 * would. The statement commits once for all of them.
 */
import { StoreUnavailableError } from '../../errors.ts'
import { callBatch } from '../call_batch.ts'
import type { Redeemed } from '../types.ts'
import type { SqlDialect } from './dialect.ts'

/** The two batched operations. */
export type Kind = 'codes' | 'refreshTokens'

/** One call of a batch as the statement reads it (`n`: its place in the batch). */
export interface ManyItem {
  n: number
  id: string
  at: number
  unless: string[]
  /** The refresh token to write when this call consumes (a code's, or the next generation). */
  token?: { id: string; familyId: string; record: unknown; expiresAt: number }
  /** The grant to write when this call consumes (codes only). */
  grant?: { id: string; sub: string; record: unknown; expiresAt: number }
}

interface Row {
  n: number
  found: boolean
  ok: boolean
  revoked: boolean
}

/**
 * The batch's statement over `table` (`codes` or `refresh_tokens`), `writes` reading `consumed`.
 * Every row is reached by its key, one call at a time (`LATERAL`, `= ANY`), never by a join the
 * planner could turn into a scan: the statement is prepared, and a plan made while a table was
 * small (a fresh deployment) is kept once it is not, as a one-call statement's `id = $1` is.
 */
function consumeManyUnlessRevoked(dialect: SqlDialect, table: string, writes: string): string {
  return `WITH input AS MATERIALIZED (
      SELECT (e->>'n')::int AS n, e->>'id' AS id, (e->>'at')::bigint AS at, e->'unless' AS unless,
        e->'token' AS token, e->'grant' AS grant_
      FROM jsonb_array_elements($1::jsonb -> 'items') AS e
    ), cur AS MATERIALIZED (
      SELECT i.n, i.id, i.at, r.consumed_at FROM (SELECT * FROM input ORDER BY id) AS i
      CROSS JOIN LATERAL (
        SELECT consumed_at FROM ${table} WHERE id = i.id AND expires_at > i.at FOR UPDATE
      ) AS r
    ), revoked AS MATERIALIZED (
      SELECT i.n FROM input i WHERE EXISTS (
        SELECT 1 FROM ${dialect.table('revoked_families')}
        WHERE family_id = ANY (ARRAY(SELECT jsonb_array_elements_text(i.unless))) AND expires_at > i.at
      )
    ), consumed AS (
      UPDATE ${table} r SET consumed_at = c.at FROM cur c
      WHERE r.id = ANY (ARRAY(SELECT id FROM cur WHERE consumed_at IS NULL AND n NOT IN (SELECT n FROM revoked)))
        AND c.id = r.id
      RETURNING c.n
    ), refreshed AS (
      INSERT INTO ${dialect.table('refresh_tokens')} (id, family_id, record, expires_at)
      SELECT i.token->>'id', i.token->>'familyId', i.token->'record', (i.token->>'expiresAt')::bigint
      FROM input i JOIN consumed c ON c.n = i.n WHERE jsonb_typeof(i.token) = 'object'
    )${writes}
    SELECT i.n, EXISTS (SELECT 1 FROM cur WHERE cur.n = i.n) AS found,
      EXISTS (SELECT 1 FROM consumed c WHERE c.n = i.n) AS ok,
      EXISTS (SELECT 1 FROM revoked v WHERE v.n = i.n) AS revoked
    FROM input i ORDER BY i.n`
}

/** The statements: `codes` (with the grant's upsert) and `refreshTokens`. */
export function manyStatements(dialect: SqlDialect): { codes: string; refreshTokens: string } {
  const grants = dialect.table('grants')
  return {
    codes: consumeManyUnlessRevoked(
      dialect,
      dialect.table('codes'),
      `, granted AS (
      INSERT INTO ${grants} (id, sub, record, expires_at)
      SELECT DISTINCT ON (i.grant_->>'id') i.grant_->>'id', i.grant_->>'sub', i.grant_->'record',
        (i.grant_->>'expiresAt')::bigint
      FROM input i JOIN consumed c ON c.n = i.n WHERE jsonb_typeof(i.grant_) = 'object'
      ORDER BY i.grant_->>'id', i.n DESC
      ON CONFLICT (id) DO UPDATE SET sub = EXCLUDED.sub, record = EXCLUDED.record, expires_at = EXCLUDED.expires_at
    )`,
    ),
    refreshTokens: consumeManyUnlessRevoked(dialect, dialect.table('refresh_tokens'), ''),
  }
}

/** Each call's outcome, in the batch's order, from the statement's rows. */
function outcomes(rows: Row[], count: number): Redeemed[] {
  const results: Redeemed[] = []
  for (const row of rows) {
    const status = row.revoked ? 'revoked' : !row.found ? 'missing' : row.ok ? 'ok' : 'replayed'
    results[Number(row.n)] = { status }
  }
  if (results.length !== count || results.includes(undefined as never))
    throw new Error('the batched redemption statement did not answer every call')
  return results
}

interface BatchDeps {
  client: {
    query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
  }
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
  wrote: () => void
  json: (value: unknown) => unknown
  /** The scope calls may share a statement within (a Worker's request); default all of them. */
  scope?: (() => object | undefined) | undefined
  /** One call alone: redeem.ts's statement, prepared. */
  single: Record<Kind, (item: ManyItem) => Promise<Redeemed>>
  statements: Record<Kind, string>
}

const OPERATIONS: Record<Kind, string> = {
  codes: 'codes.redeem',
  refreshTokens: 'refreshTokens.rotateUnlessRevoked',
}

/** The batched calls of each kind, per scope: `(kind) => (call) => its outcome`. */
export function redemptionBatches(deps: BatchDeps): (kind: Kind) => (item: Omit<ManyItem, 'n'>) => Promise<Redeemed> {
  const { client, run, wrote, json, single, statements } = deps
  /**
   * A batch in one statement. A statement that fails rolls back as a whole, so a failure that is
   * not the database's being unavailable (one call's row refused, say) retries each call alone:
   * only that call fails.
   */
  async function sendMany(kind: Kind, items: ManyItem[]): Promise<PromiseSettledResult<Redeemed>[]> {
    let rows: Row[]
    try {
      rows = await run(OPERATIONS[kind], () => client.query<Row>(statements[kind], [json({ items })]))
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err
      return Promise.allSettled(items.map((item) => run(OPERATIONS[kind], () => single[kind](item))))
    }
    return outcomes(rows, items.length).map((value) => ({ status: 'fulfilled', value }))
  }
  const batched = (kind: Kind) =>
    callBatch<Omit<ManyItem, 'n'>, Redeemed>(
      async (items) => {
        const numbered = items.map((item, n) => ({ ...item, n }))
        const [only] = numbered
        const settled =
          numbered.length === 1 && only
            ? await Promise.allSettled([run(OPERATIONS[kind], () => single[kind](only))])
            : await sendMany(kind, numbered)
        for (const one of settled) if (one.status === 'fulfilled' && one.value.status === 'ok') wrote()
        return settled
      },
      { keyOf: (item) => item.id },
    )
  const everyone = {}
  const scopes = new WeakMap<object, Record<Kind, ReturnType<typeof batched>>>()
  return (kind) => {
    const scope = deps.scope?.() ?? everyone
    let batches = scopes.get(scope)
    if (!batches) {
      batches = { codes: batched('codes'), refreshTokens: batched('refreshTokens') }
      scopes.set(scope, batches)
    }
    return batches[kind]
  }
}
