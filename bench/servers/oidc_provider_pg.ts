/**
 * A PostgreSQL storage adapter for node-oidc-provider (its adapter interface: upsert, find,
 * findByUid, findByUserCode, consume, destroy, revokeByGrantId), for the bench's
 * `oidc-provider-postgres` rows (#20): the peer on the same database Gatehouse's PostgreSQL rows
 * use. One table keyed by model and id, the payload as jsonb, as the adapters node-oidc-provider's
 * documentation points to keep it; the grant id, uid and user code in their own indexed columns,
 * so that `revokeByGrantId` and `findByUid` are index lookups. Over postgres.js with prepared
 * statements (its default), the driver Gatehouse's store uses.
 */
import postgres from 'postgres'

export interface PayloadAdapter {
  upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void>
  find(id: string): Promise<Record<string, unknown> | undefined>
  findByUid(uid: string): Promise<Record<string, unknown> | undefined>
  findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined>
  consume(id: string): Promise<void>
  destroy(id: string): Promise<void>
  revokeByGrantId(grantId: string): Promise<void>
}

/** Creates the schema `schema` afresh (dropped first) and returns the adapter class over it. */
export async function postgresAdapter(url: string, schema: string): Promise<new (model: string) => PayloadAdapter> {
  const sql = postgres(url, { max: 10, onnotice: () => {} })
  const table = `${schema}.oidc_payloads`
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await sql.unsafe(`CREATE SCHEMA ${schema}`)
  await sql.unsafe(`CREATE TABLE ${table} (
    model text NOT NULL,
    id text NOT NULL,
    payload jsonb NOT NULL,
    grant_id text,
    uid text,
    user_code text,
    expires_at timestamptz,
    consumed_at timestamptz,
    PRIMARY KEY (model, id)
  )`)
  await sql.unsafe(`CREATE INDEX ON ${table} (grant_id)`)
  await sql.unsafe(`CREATE INDEX ON ${table} (uid)`)
  await sql.unsafe(`CREATE INDEX ON ${table} (user_code)`)

  const live = '(expires_at IS NULL OR expires_at > now())'
  const select = `SELECT payload, consumed_at FROM ${table}`
  const row = (rows: { payload: Record<string, unknown>; consumed_at: Date | null }[]) => {
    const found = rows[0]
    if (!found) return undefined
    return found.consumed_at
      ? { ...found.payload, consumed: Math.floor(found.consumed_at.getTime() / 1000) }
      : found.payload
  }
  const run = (text: string, params: unknown[]) => sql.unsafe(text, params as never[], { prepare: true })

  return class PostgresAdapter implements PayloadAdapter {
    readonly #model: string
    constructor(model: string) {
      this.#model = model
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void> {
      await run(
        `INSERT INTO ${table} (model, id, payload, grant_id, uid, user_code, expires_at)
         VALUES ($1, $2, $3::jsonb, $4, $5, $6, now() + make_interval(secs => $7::double precision))
         ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
           uid = EXCLUDED.uid, user_code = EXCLUDED.user_code, expires_at = EXCLUDED.expires_at`,
        [
          this.#model,
          id,
          payload,
          payload.grantId ?? null,
          payload.uid ?? null,
          payload.userCode ?? null,
          expiresIn ?? null,
        ],
      )
    }
    async find(id: string): Promise<Record<string, unknown> | undefined> {
      return row((await run(`${select} WHERE model = $1 AND id = $2 AND ${live}`, [this.#model, id])) as never)
    }
    async findByUid(uid: string): Promise<Record<string, unknown> | undefined> {
      return row((await run(`${select} WHERE model = $1 AND uid = $2 AND ${live}`, [this.#model, uid])) as never)
    }
    async findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined> {
      return row(
        (await run(`${select} WHERE model = $1 AND user_code = $2 AND ${live}`, [this.#model, userCode])) as never,
      )
    }
    async consume(id: string): Promise<void> {
      await run(`UPDATE ${table} SET consumed_at = now() WHERE model = $1 AND id = $2`, [this.#model, id])
    }
    async destroy(id: string): Promise<void> {
      await run(`DELETE FROM ${table} WHERE model = $1 AND id = $2`, [this.#model, id])
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      await run(`DELETE FROM ${table} WHERE grant_id = $1`, [grantId])
    }
  }
}
