/**
 * @module storage/sql/store
 * The Store over SQL, shared by the PostgreSQL (postgres.js), PGlite and SQLite stores: one set of
 * statements, where they must differ the dialect's text (dialect.ts). One-time operations (code
 * consumption, refresh rotation) are one statement each on PostgreSQL, one round trip: the row
 * lock decides the one winner; on SQLite one atomic unit of statements (the dialect's `consume`).
 * So are taking a pushed request (a `DELETE … RETURNING`) and using a one-time identifier (an
 * upsert that only overwrites an expired row); device authorizations are in device_codes.ts, grants
 * in grants.ts. Hot-path queries are single statements with stable text, so a driver can keep
 * them prepared.
 */
import { StoreUnavailableError } from '../../errors.ts'
import type {
  ClientRecord,
  CodeRecord,
  Consumed,
  InteractionRecord,
  KeyRecord,
  PushedRequestRecord,
  RefreshTokenRecord,
  SessionRecord,
  Store,
} from '../types.ts'
import { membershipBatch } from '../membership_batch.ts'
import { sqlAttempts } from './attempts.ts'
import { sqlCibaRequests } from './ciba_requests.ts'
import { sqlDeviceCodes } from './device_codes.ts'
import { type SqlDialect, postgresDialect } from './dialect.ts'
import { pruneGrantUses, sqlGrants } from './grants.ts'
import { migrateSql, pendingSql } from './migrate.ts'
import { PRUNED_TABLES } from './statements.ts'
import { sqlRedemption } from './redeem.ts'

/** The little a SQL driver must offer. Parameters are `$1`, `$2`, … */
export interface SqlClient {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
  transaction<R>(fn: (tx: SqlClient) => Promise<R>): Promise<R>
  /**
   * Runs the statements, all with the same parameters, as one atomic unit (one transaction, no
   * logic between them; D1's `batch()`), and returns each one's rows. Needed by a dialect whose
   * consume is several statements (SQLite); a statement binds only the parameters it names.
   */
  batch?(statements: string[], params: unknown[]): Promise<unknown[][]>
  close(): Promise<void>
}

export interface SqlStoreOptions {
  /** Schema holding the tables (PostgreSQL); created by `migrate()`. Default `public`. */
  schema?: string
  /** The SQL dialect. Default PostgreSQL in `schema`. */
  dialect?: SqlDialect
  /** Clock in epoch seconds. */
  now?: () => number
  /** Expired rows are deleted after about this many writes. Default 1000. */
  pruneEvery?: number
  /** Classifies driver errors: true when the database could not be reached. */
  isUnavailable?: (err: unknown) => boolean
  /**
   * The scope concurrent lookups may share a query within (default: all of them): a Worker's
   * request, whose connections cannot serve another request (storage/postgres_worker.ts).
   */
  batchScope?: () => object | undefined
  /**
   * The driver encodes a JSON parameter itself (postgres.js: an object bound to `$n::jsonb` is
   * sent as its JSON, once; a string would be sent as a JSON string of that text). Then the hot
   * records (codes, refresh tokens, grants) are passed as objects, stored as jsonb objects, and
   * read back with one parse, not two (#44 item 1). Default false: records are passed as text.
   */
  driverEncodesJson?: boolean
}

/** A Store over SQL, plus the schema operations. */
export interface SqlStore extends Store {
  /** Applies pending migrations (idempotent, safe to run from several instances at once). */
  migrate(): Promise<number[]>
  /**
   * The versions `migrate()` would apply (every one on a schema never migrated). Reads only: creates
   * neither the schema nor a table (the CLI's read commands check with it, #27 item 13).
   */
  pendingMigrations(): Promise<number[]>
  /** Deletes rows that expired before `now`. */
  prune(): Promise<void>
  close(): Promise<void>
}

type Row = { record: unknown; consumed_at?: string | number | null }

function parse<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T
}

/** Creates the SQL store over a driver. */
export function createSqlStore(client: SqlClient, options: SqlStoreOptions = {}): SqlStore {
  const dialect = options.dialect ?? postgresDialect(options.schema ?? 'public')
  const t = dialect.table
  const j = dialect.json
  const now = options.now ?? (() => Math.floor(Date.now() / 1000))
  const pruneEvery = options.pruneEvery ?? 1000
  const isUnavailable = options.isUnavailable ?? (() => true)
  let writes = 0

  /** Runs a store operation; backend failures become StoreUnavailableError. */
  async function run<R>(operation: string, fn: () => Promise<R>): Promise<R> {
    try {
      return await fn()
    } catch (err) {
      if (err instanceof StoreUnavailableError || err instanceof TypeError) throw err
      if (isUnavailable(err))
        throw new StoreUnavailableError(`database unavailable during ${operation}`, { cause: err })
      throw err
    }
  }

  // Revocation checks run on every introspection and refresh: concurrent ones, of access tokens
  // and of families alike, share one query (introspection asks both for one token).
  const queryRevoked = async (keys: string[]): Promise<string[]> => {
    const jtis: string[] = []
    const familyIds: string[] = []
    for (const key of keys) (key.startsWith('a:') ? jtis : familyIds).push(key.slice(2))
    const rows = await client.query<{ key: string }>(
      `SELECT 'a:' || jti AS key FROM ${t('revoked_access_tokens')} WHERE ${dialect.inList('jti', '$1')} AND expires_at > $3
       UNION ALL
       SELECT 'f:' || family_id FROM ${t('revoked_families')} WHERE ${dialect.inList('family_id', '$2')} AND expires_at > $3`,
      [dialect.list(jtis), dialect.list(familyIds), now()],
    )
    return rows.map((row) => row.key)
  }
  const everyone = {}
  const batches = new WeakMap<object, (key: string) => Promise<boolean>>()
  const revoked = (key: string): Promise<boolean> => {
    const scope = options.batchScope?.() ?? everyone
    let batch = batches.get(scope)
    if (!batch) {
      batch = membershipBatch(queryRevoked)
      batches.set(scope, batch)
    }
    return batch(key)
  }

  function wrote(): void {
    if (++writes >= pruneEvery) {
      writes = 0
      prune().catch(() => {})
    }
  }

  async function prune(): Promise<void> {
    const at = now()
    for (const table of PRUNED_TABLES) {
      await client.query(`DELETE FROM ${t(table)} WHERE expires_at <= $1`, [at])
    }
    await client.query(pruneGrantUses(dialect), [at])
  }

  const json = (value: unknown) => JSON.stringify(value)
  // Codes, refresh tokens, grants: see driverEncodesJson (rows stored as jsonb strings still read).
  const hot = options.driverEncodesJson ? (value: unknown) => value : json

  /** Inserts or replaces a record that expires (sessions, interactions, pushed requests). */
  async function putExpiring(table: string, record: { id: string; expiresAt: number }): Promise<void> {
    await client.query(
      `INSERT INTO ${t(table)} (id, record, expires_at) VALUES ($1, ${j('$2')}, $3)
       ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, expires_at = EXCLUDED.expires_at`,
      [record.id, json(record), record.expiresAt],
    )
    wrote()
  }

  /** A one-time record with its `consumedAt`, or undefined when unknown or expired. */
  async function getOnce<T>(table: string, id: string): Promise<T | undefined> {
    const rows = await client.query<Row>(
      `SELECT record, consumed_at FROM ${t(table)} WHERE id = $1 AND expires_at > $2`,
      [id, now()],
    )
    const row = rows[0]
    if (!row) return undefined
    const record = parse<T>(row.record)
    return row.consumed_at === null || row.consumed_at === undefined
      ? record
      : { ...record, consumedAt: Number(row.consumed_at) }
  }

  const redemption = sqlRedemption({ client, dialect, run, wrote, json: hot, scope: options.batchScope })
  const consumeCode = dialect.consume(t('codes'), false)
  const rotateRefreshToken = dialect.consume(t('refresh_tokens'), true)

  async function consumeOnce<T>(
    unit: ReturnType<SqlDialect['consume']>,
    params: unknown[],
    at: number,
  ): Promise<Consumed<T>> {
    const [only] = unit.statements
    let results: unknown[][]
    if (unit.statements.length === 1 && only !== undefined) results = [await client.query(only, params)]
    else if (client.batch) results = await client.batch(unit.statements, params)
    else throw new TypeError(`the ${dialect.name} dialect needs a driver with batch()`)
    const row = unit.read(results)
    if (!row) return { status: 'missing' }
    if (row.ok) return { status: 'ok', record: { ...parse<T>(row.record), consumedAt: at } }
    return { status: 'replayed', record: { ...parse<T>(row.record), consumedAt: Number(row.consumed_at ?? at) } }
  }

  return {
    clients: {
      get: (clientId) =>
        run('clients.get', async () => {
          const rows = await client.query<Row>(`SELECT record FROM ${t('clients')} WHERE client_id = $1`, [clientId])
          return rows[0] ? parse<ClientRecord>(rows[0].record) : undefined
        }),
      insert: (record) =>
        run('clients.insert', async () => {
          const rows = await client.query(
            `INSERT INTO ${t('clients')} (client_id, record) VALUES ($1, ${j('$2')}) ON CONFLICT (client_id) DO NOTHING RETURNING client_id`,
            [record.clientId, json(record)],
          )
          return rows.length === 1
        }),
      update: (record, expected) =>
        run('clients.update', async () => {
          // jsonb equality is structural (on SQLite the text equals the stored text, as read): the
          // row's own lock (SQLite: the one writer) makes the comparison and the write one step.
          const rows = expected
            ? await client.query(
                `UPDATE ${t('clients')} SET record = ${j('$2')} WHERE client_id = $1 AND record = ${j('$3')} RETURNING client_id`,
                [record.clientId, json(record), json(expected)],
              )
            : await client.query(
                `UPDATE ${t('clients')} SET record = ${j('$2')} WHERE client_id = $1 RETURNING client_id`,
                [record.clientId, json(record)],
              )
          return rows.length === 1
        }),
      delete: (clientId) =>
        run('clients.delete', async () => {
          const rows = await client.query(`DELETE FROM ${t('clients')} WHERE client_id = $1 RETURNING client_id`, [
            clientId,
          ])
          return rows.length === 1
        }),
      list: () =>
        run('clients.list', async () => {
          const rows = await client.query<Row>(`SELECT record FROM ${t('clients')} ORDER BY client_id`)
          return rows.map((row) => parse<ClientRecord>(row.record))
        }),
    },
    codes: {
      insert: (record) =>
        run('codes.insert', async () => {
          await client.query(
            `INSERT INTO ${t('codes')} (id, family_id, record, expires_at) VALUES ($1, $2, ${j('$3')}, $4)`,
            [record.id, record.familyId, hot(record), record.expiresAt],
          )
          wrote()
        }),
      get: (id) => run('codes.get', () => getOnce<CodeRecord>('codes', id)),
      consume: (id, at) => run('codes.consume', () => consumeOnce<CodeRecord>(consumeCode, [id, at], at)),
      ...(redemption ? { redeem: redemption.redeem } : {}),
    },
    refreshTokens: {
      insert: (record) =>
        run('refreshTokens.insert', async () => {
          await client.query(
            `INSERT INTO ${t('refresh_tokens')} (id, family_id, record, expires_at) VALUES ($1, $2, ${j('$3')}, $4)`,
            [record.id, record.familyId, hot(record), record.expiresAt],
          )
          wrote()
        }),
      get: (id) => run('refreshTokens.get', () => getOnce<RefreshTokenRecord>('refresh_tokens', id)),
      rotate: (id, next, at) =>
        run('refreshTokens.rotate', async () => {
          const params = [id, at, next.id, next.familyId, hot(next), next.expiresAt]
          const result = await consumeOnce<RefreshTokenRecord>(rotateRefreshToken, params, at)
          if (result.status === 'ok') wrote()
          return result
        }),
      ...(redemption ? { rotateUnlessRevoked: redemption.rotateUnlessRevoked } : {}),
    },
    sessions: {
      put: (record) => run('sessions.put', () => putExpiring('sessions', record)),
      get: (id) =>
        run('sessions.get', async () => {
          const rows = await client.query<Row>(
            `SELECT record FROM ${t('sessions')} WHERE id = $1 AND expires_at > $2`,
            [id, now()],
          )
          return rows[0] ? parse<SessionRecord>(rows[0].record) : undefined
        }),
      delete: (id) =>
        run('sessions.delete', async () => {
          await client.query(`DELETE FROM ${t('sessions')} WHERE id = $1`, [id])
        }),
      listBySub: (sub) =>
        run('sessions.listBySub', async () => {
          const rows = await client.query<Row>(
            `SELECT record FROM ${t('sessions')} WHERE ${dialect.jsonText('record', 'sub')} = ${dialect.text('$1')} AND expires_at > $2`,
            [sub, now()],
          )
          return rows.map((row) => parse<SessionRecord>(row.record))
        }),
    },
    grants: sqlGrants({ client, dialect, run, wrote, json: hot }),
    interactions: {
      put: (record) => run('interactions.put', () => putExpiring('interactions', record)),
      get: (id) =>
        run('interactions.get', async () => {
          const rows = await client.query<Row>(
            `SELECT record FROM ${t('interactions')} WHERE id = $1 AND expires_at > $2`,
            [id, now()],
          )
          return rows[0] ? parse<InteractionRecord>(rows[0].record) : undefined
        }),
      take: (id) =>
        run('interactions.take', async () => {
          const rows = await client.query<Row>(
            `DELETE FROM ${t('interactions')} WHERE id = $1 AND expires_at > $2 RETURNING record`,
            [id, now()],
          )
          return rows[0] ? parse<InteractionRecord>(rows[0].record) : undefined
        }),
    },
    revocations: {
      revokeFamily: (familyId, until) =>
        run('revocations.revokeFamily', async () => {
          await client.query(
            `INSERT INTO ${t('revoked_families')} (family_id, expires_at) VALUES ($1, $2)
             ON CONFLICT (family_id) DO UPDATE SET expires_at = ${dialect.greatest(`${t('revoked_families')}.expires_at`, 'EXCLUDED.expires_at')}`,
            [familyId, until],
          )
          wrote()
        }),
      isFamilyRevoked: (familyId) => run('revocations.isFamilyRevoked', () => revoked(`f:${familyId}`)),
      revokeAccessToken: (jti, until) =>
        run('revocations.revokeAccessToken', async () => {
          await client.query(
            `INSERT INTO ${t('revoked_access_tokens')} (jti, expires_at) VALUES ($1, $2)
             ON CONFLICT (jti) DO UPDATE SET expires_at = ${dialect.greatest(`${t('revoked_access_tokens')}.expires_at`, 'EXCLUDED.expires_at')}`,
            [jti, until],
          )
          wrote()
        }),
      isAccessTokenRevoked: (jti) => run('revocations.isAccessTokenRevoked', () => revoked(`a:${jti}`)),
    },
    attempts: sqlAttempts({ client, table: t('attempts'), run, wrote }),
    keys: {
      list: () =>
        run('keys.list', async () => {
          const rows = await client.query<Row>(`SELECT record FROM ${t('signing_keys')} ORDER BY kid`)
          return rows.map((row) => parse<KeyRecord>(row.record))
        }),
      put: (record) =>
        run('keys.put', async () => {
          await client.query(
            `INSERT INTO ${t('signing_keys')} (kid, record) VALUES ($1, ${j('$2')}) ON CONFLICT (kid) DO UPDATE SET record = EXCLUDED.record`,
            [record.kid, json(record)],
          )
        }),
    },
    pushedRequests: {
      put: (record) => run('pushedRequests.put', () => putExpiring('pushed_requests', record)),
      take: (id, at, clientId) =>
        run('pushedRequests.take', async () => {
          // RFC 9126 §4: a request_uri is one-time use. Of concurrent DELETEs, one returns the row;
          // with clientId, another client's row is not deleted (§2.2).
          const rows = await client.query<Row>(
            `DELETE FROM ${t('pushed_requests')} WHERE id = $1 AND expires_at > $2
             AND (${dialect.text('$3')} IS NULL OR ${dialect.jsonText('record', 'clientId')} = ${dialect.text('$3')}) RETURNING record`,
            [id, at, clientId ?? null],
          )
          return rows[0] ? parse<PushedRequestRecord>(rows[0].record) : undefined
        }),
    },
    deviceCodes: sqlDeviceCodes({ client, dialect, now, run, wrote }),
    cibaRequests: sqlCibaRequests({ client, dialect, now, run, wrote }),
    replays: {
      use: (key, expiresAt, at) =>
        run('replays.use', async () => {
          // One statement: insert, or take over a row whose record expired; a live row returns
          // nothing. Concurrent inserts of one key wait on its index entry, so one wins.
          const rows = await client.query(
            `INSERT INTO ${t('replays')} AS r (key, expires_at) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE r.expires_at <= $3
             RETURNING key`,
            [key, expiresAt, at],
          )
          wrote()
          return rows.length === 1
        }),
    },
    migrate: () => run('migrate', () => migrateSql(client, dialect)),
    pendingMigrations: () => run('pendingMigrations', () => pendingSql(client, dialect)),
    prune: () => run('prune', prune),
    close: () => client.close(),
  }
}
