/**
 * The Redis store's share of one code redemption and one refresh (#44 item 2), without HTTP,
 * signing or the grants' checks: the store calls the grants make, in their order (the one-script
 * `codes.redeem` / `refreshTokens.rotateUnlessRevoked` where the store has them, else the read, the
 * revocation check, the consume and the writes), one grant at a time (or `--concurrency=n` chains
 * at once, as n HTTP connections would). Prints this process's CPU per grant (ioredis, the store,
 * JSON) and the CPU of the redis-server that served it (from /proc). By default it starts a
 * redis-server of its own on a free port (no other client's work in its CPU); `--url` uses
 * REDIS_URL's server instead (its CPU then includes every other client's). `--steps` hides the
 * one-script methods: the path before #44 item 2, to alternate with in one sitting. A profiling
 * aid, not a bench cell: CPU time is steadier than throughput on a shared machine, but run it a
 * few times.
 *
 *   npx tsx bench/redis_store_cost.ts [grants] [rounds] [--steps] [--concurrency=16] [--url]
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import { createRedisStore } from '../src/storage/redis.ts'
import type { CodeRecord, GrantRecord, RefreshTokenRecord, Store } from '../src/storage/types.ts'

const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'))
const flag = (name: string) => process.argv.find((arg) => arg === name || arg.startsWith(`${name}=`))
const count = Number(positional[0] ?? '3000')
const rounds = Number(positional[1] ?? '3')
const steps = flag('--steps') !== undefined
const concurrency = Number(flag('--concurrency')?.split('=')[1] ?? '1')
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
  const families = [r.token.familyId, `${r.token.familyId}.r0`]
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

/** A redis-server of the bench's own (no persistence), or REDIS_URL's with `--url`. */
async function server(): Promise<{ url: string; stop: () => void }> {
  if (flag('--url')) {
    if (!process.env.REDIS_URL) throw new Error('--url: set REDIS_URL')
    return { url: process.env.REDIS_URL, stop: () => {} }
  }
  const port = await freePort()
  const child = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const url = `redis://127.0.0.1:${port}`
  for (let i = 0; i < 100; i++) {
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 })
    probe.on('error', () => {})
    const up = await probe.connect().then(
      () => true,
      () => false,
    )
    probe.disconnect()
    if (up) return { url, stop: () => child.kill() }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  child.kill()
  throw new Error('redis-server did not start')
}

/** Runs `n` redemptions and refreshes, `concurrency` chains at once; the process CPU of each half (µs). */
async function measure(store: Store, n: number): Promise<{ code: number; rotation: number }> {
  const batches = Array.from({ length: n }, () => records())
  for (const r of batches) await store.codes.insert(r.code) // the authorization's write, not measured in the process
  const timed = async (each: (r: ReturnType<typeof records>) => Promise<void>) => {
    const start = process.cpuUsage()
    let next = 0
    const chain = async () => {
      while (next < batches.length) await each(batches[next++] as ReturnType<typeof records>)
    }
    await Promise.all(Array.from({ length: concurrency }, chain))
    const spent = process.cpuUsage(start)
    return spent.user + spent.system
  }
  return { code: await timed((r) => redeem(store, r)), rotation: await timed((r) => refresh(store, r)) }
}

const redis = await server()
const full = createRedisStore({ url: redis.url, prefix: `gh-bench-cost-${process.pid}:` })
// --steps: the same store without its one-script methods (the grants then take their steps).
const store: Store = steps
  ? {
      ...full,
      codes: { ...full.codes, redeem: undefined },
      refreshTokens: { ...full.refreshTokens, rotateUnlessRevoked: undefined },
    }
  : full
const admin = new Redis(redis.url)
try {
  await full.connect()
  await measure(store, 300)
  const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))?.[1])
  const path = store.codes.redeem ? 'one script each (codes.redeem, rotateUnlessRevoked)' : 'in steps'
  console.log(`Redis store, ${path}, concurrency ${concurrency}: ${count} grants per round, µs per grant`)
  for (let round = 1; round <= rounds; round++) {
    const before = cpuOf([pid])
    const { code, rotation } = await measure(store, count)
    const server = ((cpuOf([pid]) - before) * 1e6) / count
    console.log(
      `round ${round}: process ${Math.round(code / count)} (code) + ${Math.round(rotation / count)} (refresh); redis-server ${Math.round(server)} (code insert + code + refresh)`,
    )
  }
} finally {
  await full.clear()
  await full.close()
  admin.disconnect()
  redis.stop()
}
