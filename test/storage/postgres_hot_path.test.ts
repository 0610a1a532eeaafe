/**
 * #44 item 1: what one code redemption and one refresh cost on PostgreSQL, counted on the wire
 * through the service in process: the statements postgres.js runs (its `debug` hook), the writes
 * to the database's socket (a write is one round trip's request, pipelined statements included)
 * and the waits in sequence (a statement started while none is in flight). Pinned so that a change
 * which adds a statement or a round trip to either grant fails here.
 */
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { authorizationUrl, authorize, setup } from '../helpers/flow.ts'
import { RU, clock, form } from '../helpers/service.ts'
import { createPostgresStore } from '../../src/storage/postgres.ts'
import { codeRecord, grantRecord, refreshRecord } from './contract.ts'
import { runSchema } from './sql_helpers.ts'

/** What the wrapped postgres.js saw since the last `reset`. */
const seen = { statements: [] as string[], writes: 0, waits: 0, inFlight: 0 }

vi.mock('postgres', async (importOriginal) => {
  const real = (await importOriginal<{ default: typeof postgres }>()).default
  const net = await import('node:net')
  const counting = (url: string, options: Record<string, unknown> = {}) => {
    const sql = real(url, {
      ...options,
      debug: (_connection: number, text: string) => seen.statements.push(text.replace(/\s+/g, ' ').trim()),
      socket: async ({ host, port }: { host: string[]; port: number[] }) => {
        const socket = net.connect(port[0] as number, host[0] as string)
        await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
        const write = socket.write.bind(socket) as (...args: unknown[]) => boolean
        socket.write = ((...args: unknown[]) => {
          seen.writes++
          return write(...args)
        }) as typeof socket.write
        return socket
      },
    } as never)
    const unsafe = sql.unsafe.bind(sql)
    sql.unsafe = ((...args: Parameters<typeof sql.unsafe>) => {
      const query = unsafe(...args)
      if (seen.inFlight++ === 0) seen.waits++
      const done = () => void seen.inFlight--
      query.then(done, done)
      return query
    }) as typeof sql.unsafe
    return sql
  }
  return { default: Object.assign(counting, real) }
})

function reset(): void {
  seen.statements = []
  seen.writes = 0
  seen.waits = 0
}

function snapshot(): { statements: number; writes: number; waits: number; texts: string[] } {
  return { statements: seen.statements.length, writes: seen.writes, waits: seen.waits, texts: seen.statements }
}

const url = process.env.DATABASE_URL

describe.runIf(url)('#44 item 1 statements per grant on PostgreSQL', () => {
  const schema = runSchema('pgcount')
  // One connection: after the first round every statement is prepared on it, so the counts are the
  // steady state's (a pool of ten prepares each statement once per connection).
  const store = createPostgresStore({ url: url as string, schema, max: 1 })
  const time = clock()

  beforeAll(async () => {
    await store.migrate()
  })
  afterAll(async () => {
    await store.close()
    const admin = postgres(url as string, { max: 1, onnotice: () => {} })
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })

  async function round(ctx: Awaited<ReturnType<typeof setup>>) {
    const request = await authorizationUrl(ctx.as, { scope: 'openid offline_access api1' })
    const callback = await authorize(ctx.browser, request.url)
    const token = (fields: Record<string, string>) =>
      ctx.service.fetch(
        form(ctx.as.token_endpoint as string, { ...fields, client_id: 'web', client_secret: 'web-secret' }),
      )
    reset()
    const redeemed = await token({
      grant_type: 'authorization_code',
      redirect_uri: RU,
      code: callback.searchParams.get('code') as string,
      code_verifier: request.verifier,
    })
    expect(redeemed.status).toBe(200)
    const code = snapshot()
    const { refresh_token } = (await redeemed.json()) as { refresh_token: string }
    reset()
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token })
    expect(refreshed.status).toBe(200)
    return { code, refresh: snapshot() }
  }

  it.each([
    { where: 'at the instance that wrote the code and the token (no read)', options: {}, expected: 1 },
    {
      where: 'at another instance (issuedRecordCache: 0: the read, then the atomic step)',
      options: { issuedRecordCache: 0 },
      expected: 2,
    },
  ])(
    '#44 item 1: $where, a code redemption makes $expected statement(s) in as many round trips, a refresh too',
    async ({ options, expected }) => {
      const ctx = await setup({ store, now: time.now, ...options })
      await round(ctx) // prepares every statement on the connection, fills the client cache
      const { code, refresh } = await round(ctx)
      console.info(`#44 code redemption: ${JSON.stringify(code, null, 1)}`)
      console.info(`#44 refresh: ${JSON.stringify(refresh, null, 1)}`)
      const each = { statements: expected, writes: expected, waits: expected }
      expect({ statements: code.statements, writes: code.writes, waits: code.waits }).toEqual(each)
      expect({ statements: refresh.statements, writes: refresh.writes, waits: refresh.waits }).toEqual(each)
    },
  )

  it('#44 item 1: hot records are stored as jsonb objects (encoded once); rows an earlier version stored as jsonb strings still read and redeem', async () => {
    const admin = postgres(url as string, { max: 1, onnotice: () => {} })
    try {
      const now = Math.floor(Date.now() / 1000)
      const fresh = codeRecord(now)
      await store.codes.insert(fresh)
      const types = async (table: string, id: string) =>
        (await admin.unsafe(`SELECT jsonb_typeof(record) AS t FROM "${schema}".${table} WHERE id = $1`, [id]))[0]?.t
      expect(await types('gatehouse_codes', fresh.id)).toBe('object')
      // As the store wrote them before #44: the JSON text bound to $n::jsonb, which postgres.js
      // encodes again (a jsonb string).
      const old = codeRecord(now)
      const oldToken = refreshRecord(now)
      const oldGrant = grantRecord(now)
      const text = (table: string, record: { id: string; expiresAt: number }, column: string, key: string) =>
        admin.unsafe(
          `INSERT INTO "${schema}".${table} (id, ${column}, record, expires_at) VALUES ($1, $2, $3::jsonb, $4)`,
          [record.id, key, JSON.stringify(record), record.expiresAt],
        )
      await text('gatehouse_codes', old, 'family_id', old.familyId)
      await text('gatehouse_refresh_tokens', oldToken, 'family_id', oldToken.familyId)
      await text('gatehouse_grants', oldGrant, 'sub', oldGrant.sub)
      expect(await types('gatehouse_codes', old.id)).toBe('string')
      expect(await store.codes.get(old.id)).toEqual(old)
      expect(await store.refreshTokens.get(oldToken.id)).toEqual(oldToken)
      expect(await store.grants.get(oldGrant.id, now)).toEqual(oldGrant)
      const next = refreshRecord(now, { familyId: oldToken.familyId })
      expect(await store.refreshTokens.rotateUnlessRevoked?.(oldToken.id, next, now, [oldToken.familyId])).toEqual({
        status: 'ok',
      })
      expect(await store.refreshTokens.get(next.id)).toEqual(next)
      expect(await types('gatehouse_refresh_tokens', next.id)).toBe('object')
    } finally {
      await admin.end()
    }
  })
})
