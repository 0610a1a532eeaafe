/**
 * The PostgreSQL store's share of one code redemption and one refresh (#44 item 1), without HTTP,
 * signing or the grants' checks: the store calls the grants make, in their order (the one-statement
 * `codes.redeem` / `refreshTokens.rotateUnlessRevoked` where the store has them, else the read, the
 * revocation check, the consume and the writes), one at a time on one connection. Prints this
 * process's CPU per grant (postgres.js, the store, JSON) and the CPU of the database backend that
 * served it (from /proc, so PostgreSQL must run on this machine). A profiling aid, not a bench
 * cell: CPU time is steadier than throughput on a shared machine, but run it a few times.
 *
 *   DATABASE_URL=postgres://… npx tsx bench/pg_store_cost.ts [grants] [rounds]
 */
import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import { createPostgresStore } from '../src/storage/postgres.ts'
import type { CodeRecord, GrantRecord, RefreshTokenRecord, Store } from '../src/storage/types.ts'

const count = Number(process.argv[2] ?? '3000')
const rounds = Number(process.argv[3] ?? '3')
const base = process.env.DATABASE_URL
if (!base) throw new Error('set DATABASE_URL')
const app = `gh_store_cost_${process.pid}`
const schema = `gh_bench_store_cost_${process.pid}`
const now = Math.floor(Date.now() / 1000)
let sequence = 0
const id = (prefix: string) => `${prefix}-${process.pid}-${++sequence}`

/** Records shaped as the grants write them (a code of the bench's web client, its refresh token, its grant). */
function records(): { code: CodeRecord; token: RefreshTokenRecord; next: RefreshTokenRecord; grant: GrantRecord } {
  const familyId = id('family')
  const common = { clientId: 'web', sub: 'alice', scope: 'openid profile email offline_access api1', authTime: now }
  const token = (): RefreshTokenRecord => ({
    ...common,
    id: id('rt'),
    familyId,
    sid: 'sid',
    issuedAt: now,
    expiresAt: now + 3600,
    familyExpiresAt: now + 86_400,
  })
  return {
    code: {
      ...common,
      id: id('code'),
      familyId,
      redirectUri: 'https://rp.example.test/cb',
      sid: 'sid',
      nonce: 'n-0S6_WzA2Mj',
      codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      codeChallengeMethod: 'S256',
      issuedAt: now,
      expiresAt: now + 300,
    },
    token: token(),
    next: token(),
    grant: { ...common, id: familyId, kind: 'authorization_code', createdAt: now, expiresAt: now + 86_400 },
  }
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`unexpected outcome: ${what}`)
}

/** The store's part of a code redemption, as grants/authorization_code.ts makes it. */
async function redeem(store: Store, r: ReturnType<typeof records>): Promise<void> {
  check((await store.codes.get(r.code.id)) !== undefined, 'code read')
  if (store.codes.redeem) {
    const unlessRevoked = [r.code.familyId]
    const outcome = await store.codes.redeem(r.code.id, now, { unlessRevoked, refreshToken: r.token, grant: r.grant })
    return check(outcome.status === 'ok', outcome.status)
  }
  check(!(await store.revocations.isFamilyRevoked(r.code.familyId)), 'revoked')
  check((await store.codes.consume(r.code.id, now)).status === 'ok', 'consume')
  await Promise.all([store.refreshTokens.insert(r.token), store.grants.put(r.grant)])
}

/** The store's part of a refresh, as grants/refresh_token.ts makes it (no grant touch: that is once a minute). */
async function refresh(store: Store, r: ReturnType<typeof records>): Promise<void> {
  check((await store.refreshTokens.get(r.token.id)) !== undefined, 'token read')
  const families = [r.token.familyId, `${r.token.familyId}:1`]
  if (store.refreshTokens.rotateUnlessRevoked) {
    const outcome = await store.refreshTokens.rotateUnlessRevoked(r.token.id, r.next, now, families)
    return check(outcome.status === 'ok', outcome.status)
  }
  const revoked = await Promise.all(families.map((f) => store.revocations.isFamilyRevoked(f)))
  check(!revoked.some(Boolean), 'revoked')
  check((await store.refreshTokens.rotate(r.token.id, r.next, now)).status === 'ok', 'rotate')
}

/** CPU seconds of the processes `pids` (utime + stime, in clock ticks of 10 ms). */
function cpuOf(pids: number[]): number {
  let ticks = 0
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    ticks += Number(fields[11]) + Number(fields[12])
  }
  return ticks / 100
}

const admin = postgres(base, { max: 1, onnotice: () => {} })
const store = createPostgresStore({ url: `${base}?application_name=${app}`, schema, max: 1 })
try {
  await store.migrate()
  for (let i = 0; i < 300; i++) {
    const r = records()
    await store.codes.insert(r.code)
    await redeem(store, r)
    await refresh(store, r)
  }
  const pids = (await admin.unsafe('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app])).map((row) =>
    Number(row.pid),
  )
  const path = store.codes.redeem ? 'one statement each (codes.redeem, rotateUnlessRevoked)' : 'in steps'
  console.log(`PostgreSQL store, ${path}: ${count} grants per round, µs per grant`)
  for (let round = 1; round <= rounds; round++) {
    let code = 0
    let rotation = 0
    const db = cpuOf(pids)
    for (let i = 0; i < count; i++) {
      const r = records()
      await store.codes.insert(r.code) // the authorization's write, not measured in the process
      let start = process.cpuUsage()
      await redeem(store, r)
      let spent = process.cpuUsage(start)
      code += spent.user + spent.system
      start = process.cpuUsage()
      await refresh(store, r)
      spent = process.cpuUsage(start)
      rotation += spent.user + spent.system
    }
    const database = ((cpuOf(pids) - db) * 1e6) / count
    console.log(
      `round ${round}: process ${Math.round(code / count)} (code) + ${Math.round(rotation / count)} (refresh); database ${Math.round(database)} (code insert + code + refresh)`,
    )
  }
} finally {
  await store.close()
  await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await admin.end()
}
