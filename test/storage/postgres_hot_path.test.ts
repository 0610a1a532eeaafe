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
import type { CodeRecord, RefreshTokenRecord } from '../../src/storage/types.ts'
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

  it('#44: concurrent redemptions and rotations share a statement (every outcome, two codes of one grant), and the records they write are the records each call gave', async () => {
    const now = Math.floor(Date.now() / 1000)
    const codes = Array.from({ length: 8 }, () => codeRecord(now))
    const tokens = Array.from({ length: 8 }, () => refreshRecord(now))
    for (const record of codes) await store.codes.insert(record)
    for (const record of tokens) await store.refreshTokens.insert(record)
    const grantOf = (record: CodeRecord, i: number) =>
      // codes 5 and 6 write one grant (the statement upserts it once, with the later call's record)
      grantRecord(now, {
        id: i === 6 ? (codes[5] as CodeRecord).familyId : record.familyId,
        sub: record.sub,
        scope: `openid call-${i}`,
      })
    const spent = codes[7] as CodeRecord
    await store.codes.redeem?.(spent.id, now, { unlessRevoked: [spent.familyId], grant: grantOf(spent, 7) })
    await store.revocations.revokeFamily((tokens[7] as RefreshTokenRecord).familyId, now + 60)
    const issued = codes.map((record) => refreshRecord(now, { familyId: record.familyId }))
    const nexts = tokens.map((record) => refreshRecord(now, { familyId: record.familyId }))
    reset()
    // Each call its own clock: the odd ones a second later.
    const at = (i: number) => now + (i % 2)
    const redeemed = await Promise.all(
      codes.map((record, i) =>
        store.codes.redeem?.(record.id, at(i), {
          unlessRevoked: [record.familyId],
          refreshToken: issued[i] as RefreshTokenRecord,
          grant: grantOf(record, i),
        }),
      ),
    )
    const rotated = await Promise.all(
      tokens.map((record, i) =>
        store.refreshTokens.rotateUnlessRevoked?.(record.id, nexts[i] as RefreshTokenRecord, at(i), [record.familyId]),
      ),
    )
    const { statements, texts } = snapshot()
    expect(redeemed.map((result) => result?.status)).toEqual([...Array(7).fill('ok'), 'replayed'])
    expect(rotated.map((result) => result?.status)).toEqual([...Array(7).fill('ok'), 'revoked'])
    // The 8 calls of each kind made in one turn leave together (call_batch.ts): one statement each.
    // A statement that failed would be retried call by call (redeem_many.ts), 8 statements more.
    expect(statements).toBe(2)
    expect(texts.every((text) => text.includes('jsonb_array_elements'))).toBe(true)
    for (const [i, record] of codes.entries()) {
      if (i < 7) expect((await store.codes.get(record.id))?.consumedAt).toBe(at(i))
    }
    for (const [i, record] of tokens.entries()) {
      if (i < 7) expect((await store.refreshTokens.get(record.id))?.consumedAt).toBe(at(i))
    }
    for (const i of [0, 1, 2, 3, 4, 5, 6]) {
      expect(await store.refreshTokens.get((issued[i] as RefreshTokenRecord).id)).toEqual(issued[i])
      expect(await store.refreshTokens.get((nexts[i] as RefreshTokenRecord).id)).toEqual(nexts[i])
    }
    expect(await store.refreshTokens.get((issued[7] as RefreshTokenRecord).id)).toBeUndefined()
    expect(await store.refreshTokens.get((nexts[7] as RefreshTokenRecord).id)).toBeUndefined()
    expect(await store.grants.get((codes[3] as CodeRecord).familyId, now)).toEqual(grantOf(codes[3] as CodeRecord, 3))
    expect(await store.grants.get((codes[5] as CodeRecord).familyId, now)).toEqual(grantOf(codes[6] as CodeRecord, 6))
    // Stored as the one-call statement stores them: jsonb objects, not strings of JSON.
    const admin = postgres(url as string, { max: 1, onnotice: () => {} })
    try {
      const types = await admin.unsafe(
        `SELECT jsonb_typeof(record) AS t FROM "${schema}".gatehouse_refresh_tokens WHERE id = ANY($1)
         UNION ALL SELECT jsonb_typeof(record) FROM "${schema}".gatehouse_grants WHERE id = $2`,
        [
          [(issued[0] as RefreshTokenRecord).id, (nexts[0] as RefreshTokenRecord).id],
          (codes[0] as CodeRecord).familyId,
        ],
      )
      expect(types.map((row) => row.t)).toEqual(['object', 'object', 'object'])
    } finally {
      await admin.end()
    }
  })

  it('#44: two instances whose batches name the same code: the row lock gives it to one of them, and every other call of both batches is ok', async () => {
    const other = createPostgresStore({ url: url as string, schema, max: 1 })
    try {
      const now = Math.floor(Date.now() / 1000)
      const contested = codeRecord(now)
      const own = Array.from({ length: 6 }, () => codeRecord(now))
      for (const record of [contested, ...own]) await store.codes.insert(record)
      const redeem = (where: typeof store, record: CodeRecord) =>
        where.codes.redeem?.(record.id, now, {
          unlessRevoked: [record.familyId],
          refreshToken: refreshRecord(now, { familyId: record.familyId }),
          grant: grantRecord(now, { id: record.familyId, sub: record.sub }),
        })
      const [first, second] = await Promise.all([
        Promise.all([own[0], contested, own[1], own[2]].map((record) => redeem(store, record as CodeRecord))),
        Promise.all([own[3], own[4], contested, own[5]].map((record) => redeem(other, record as CodeRecord))),
      ])
      const contestedResults = [first?.[1]?.status, second?.[2]?.status].sort()
      expect(contestedResults).toEqual(['ok', 'replayed'])
      const others = [first?.[0], first?.[2], first?.[3], second?.[0], second?.[1], second?.[3]]
      expect(others.map((result) => result?.status)).toEqual(Array(6).fill('ok'))
    } finally {
      await other.close()
    }
  })

  it('#44: a batch whose statement fails for one call (its refresh token id is taken) retries each call alone: only that call fails, and its code is not consumed', async () => {
    const now = Math.floor(Date.now() / 1000)
    const taken = refreshRecord(now)
    await store.refreshTokens.insert(taken)
    const codes = Array.from({ length: 4 }, () => codeRecord(now))
    for (const record of codes) await store.codes.insert(record)
    reset()
    const results = await Promise.allSettled(
      codes.map((record, i) =>
        store.codes.redeem?.(record.id, now, {
          unlessRevoked: [record.familyId],
          refreshToken:
            i === 2 ? { ...taken, familyId: record.familyId } : refreshRecord(now, { familyId: record.familyId }),
          grant: grantRecord(now, { id: record.familyId, sub: record.sub }),
        }),
      ),
    )
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
    // The batch's statement, then each call alone.
    expect(snapshot().statements).toBe(5)
    expect(results.filter((r) => r.status === 'fulfilled').map((r) => r.value)).toEqual([
      { status: 'ok' },
      { status: 'ok' },
      { status: 'ok' },
    ])
    expect((await store.codes.get((codes[2] as CodeRecord).id))?.consumedAt).toBeUndefined()
    expect(await store.refreshTokens.get(taken.id)).toEqual(taken)
  })

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
