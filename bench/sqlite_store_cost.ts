/**
 * The SQLite store's share of one code redemption and one refresh (#44 item 3), without HTTP,
 * signing or the grants' checks: the store calls the grants make, in their order, one grant at a
 * time, on a database file in a fresh temporary folder (not `:memory:`: the commit's sync is the
 * point). Four ways, alternated round by round in one sitting so that they share the machine's
 * state: the redemption in steps (as before #44 item 3: the read, the revocation check, the consume,
 * then the refresh token and the grant, three commits) or in one transaction (`codes.redeem`,
 * `refreshTokens.rotateUnlessRevoked`: one commit), each under `synchronous` full and normal.
 * Prints, per grant, this process's CPU µs (the driver, the store, JSON) and the wall µs (with the
 * WAL syncs, which cost wall time, not CPU); then what the records' JSON costs. A profiling aid, not a
 * bench cell: run it a few times and report ranges.
 *
 * `--concurrency=N` (default 1): N grants in flight at once, as the HTTP bench's 16 connections
 * make them: N codes redeemed at once, then their N refreshes at once. The batches asked for
 * together share one commit (group commit, #44 item 3), so the WAL syncs are per group, not per grant.
 *
 *   GATEHOUSE_NODE22=… $GATEHOUSE_NODE22 node_modules/tsx/dist/cli.mjs bench/sqlite_store_cost.ts [grants] [rounds] [--concurrency=N]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type SqliteSynchronous, createSqliteStore } from '../src/storage/sqlite.ts'
import type { CodeRecord, GrantRecord, RefreshTokenRecord, Store } from '../src/storage/types.ts'

const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'))
const count = Number(positional[0] ?? '1000')
const rounds = Number(positional[1] ?? '3')
const concurrency = Number(process.argv.find((arg) => arg.startsWith('--concurrency='))?.split('=')[1] ?? '1')
if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('--concurrency must be a positive integer')
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
async function redeem(store: Store, r: ReturnType<typeof records>, atOnce: boolean): Promise<void> {
  check((await store.codes.get(r.code.id)) !== undefined, 'code read')
  if (atOnce && store.codes.redeem) {
    const unlessRevoked = [r.code.familyId]
    const outcome = await store.codes.redeem(r.code.id, now, { unlessRevoked, refreshToken: r.token, grant: r.grant })
    return check(outcome.status === 'ok', outcome.status)
  }
  check(!(await store.revocations.isFamilyRevoked(r.code.familyId)), 'revoked')
  check((await store.codes.consume(r.code.id, now)).status === 'ok', 'consume')
  await Promise.all([store.refreshTokens.insert(r.token), store.grants.put(r.grant)])
}

/** The store's part of a refresh, as grants/refresh_token.ts makes it (no grant touch: that is once a minute). */
async function refresh(store: Store, r: ReturnType<typeof records>, atOnce: boolean): Promise<void> {
  check((await store.refreshTokens.get(r.token.id)) !== undefined, 'token read')
  const families = [r.token.familyId, `${r.token.familyId}:1`]
  if (atOnce && store.refreshTokens.rotateUnlessRevoked) {
    const outcome = await store.refreshTokens.rotateUnlessRevoked(r.token.id, r.next, now, families)
    return check(outcome.status === 'ok', outcome.status)
  }
  const revoked = await Promise.all(families.map((f) => store.revocations.isFamilyRevoked(f)))
  check(!revoked.some(Boolean), 'revoked')
  check((await store.refreshTokens.rotate(r.token.id, r.next, now)).status === 'ok', 'rotate')
}

interface Way {
  name: string
  atOnce: boolean
  synchronous: SqliteSynchronous
}

const ways: Way[] = [
  { name: 'steps, full', atOnce: false, synchronous: 'full' },
  { name: 'one transaction, full', atOnce: true, synchronous: 'full' },
  { name: 'steps, normal', atOnce: false, synchronous: 'normal' },
  { name: 'one transaction, normal', atOnce: true, synchronous: 'normal' },
]

/** One round of `count` grants on a fresh file: µs per grant of CPU and wall, code and refresh apart. */
async function round(way: Way, dir: string, n: number): Promise<{ cpu: [number, number]; wall: [number, number] }> {
  const store = createSqliteStore({
    path: join(dir, `${way.atOnce ? 'once' : 'steps'}-${way.synchronous}-${n}.db`),
    synchronous: way.synchronous,
  })
  await store.migrate()
  const cpu: [number, number] = [0, 0]
  const wall: [number, number] = [0, 0]
  const timed = async (slot: 0 | 1, work: () => Promise<void>) => {
    const start = process.cpuUsage()
    const began = performance.now()
    await work()
    wall[slot] += (performance.now() - began) * 1000
    const spent = process.cpuUsage(start)
    cpu[slot] += spent.user + spent.system
  }
  let measured = 0
  for (let i = 0; i < count + 200; i += concurrency) {
    const grants = Array.from({ length: concurrency }, records)
    for (const r of grants) await store.codes.insert(r.code) // the authorization's write, not measured
    // The grants in flight at once: all their redemptions, then all their refreshes.
    const redeemAll = async () => void (await Promise.all(grants.map((r) => redeem(store, r, way.atOnce))))
    const refreshAll = async () => void (await Promise.all(grants.map((r) => refresh(store, r, way.atOnce))))
    if (i < 200) {
      await redeemAll()
      await refreshAll()
      continue
    }
    await timed(0, redeemAll)
    await timed(1, refreshAll)
    measured += concurrency
  }
  await store.close()
  const per = (pair: [number, number]): [number, number] => [
    Math.round(pair[0] / measured),
    Math.round(pair[1] / measured),
  ]
  return { cpu: per(cpu), wall: per(wall) }
}

/** µs per call of `work`, over `times` calls. */
function micro(times: number, work: () => unknown): number {
  for (let i = 0; i < 1000; i++) work()
  const start = process.cpuUsage()
  for (let i = 0; i < times; i++) work()
  const spent = process.cpuUsage(start)
  return (spent.user + spent.system) / times
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-cost-'))
try {
  console.log(`SQLite store (${process.versions.node ? `Node ${process.versions.node}` : 'runtime'}), file in ${dir}`)
  console.log(
    `${count} grants per round, ${concurrency} at once, µs per grant: CPU code + refresh | wall code + refresh`,
  )
  const seen = new Map<string, string[]>()
  for (let n = 1; n <= rounds; n++) {
    for (const way of n % 2 ? ways : [...ways].reverse()) {
      const { cpu, wall } = await round(way, dir, n)
      const line = `CPU ${cpu[0]} + ${cpu[1]} | wall ${wall[0]} + ${wall[1]}`
      seen.set(way.name, [...(seen.get(way.name) ?? []), line])
      console.log(`round ${n}, ${way.name.padEnd(24)} ${line}`)
    }
  }
  const r = records()
  const texts = [JSON.stringify(r.code), JSON.stringify(r.token), JSON.stringify(r.grant)]
  const stringify = micro(20_000, () => [JSON.stringify(r.token), JSON.stringify(r.grant)])
  const parse = micro(20_000, () => JSON.parse(texts[0] as string))
  console.log(
    `JSON: a refresh token and a grant stringified ${stringify.toFixed(2)} µs; a code parsed ${parse.toFixed(2)} µs (${texts.map((t) => t.length).join(', ')} bytes)`,
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}
