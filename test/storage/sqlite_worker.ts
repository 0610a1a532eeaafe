/**
 * One process of the SQLite tests that span processes and runtimes (#28 item 1), run by Node ≥ 22.5
 * (type stripping), Bun or Deno: `<runtime> test/storage/sqlite_worker.ts <command> <file> …`.
 * Prints its result as one JSON line.
 *
 * - `setup FILE ROUNDS`: migrates FILE and inserts, per round r, the code `code-r`, the refresh
 *   token `rt-r`, the approved device authorization `device-r` and the pending one `pending-r`.
 * - `race FILE ROUNDS LABEL`: opens the store, prints `ready`, waits for FILE.go (the parent writes
 *   the start time into it), then at each round's instant consumes `code-r`, rotates `rt-r` to
 *   `rt-r-LABEL`, polls `device-r` and approves `pending-r` as LABEL, at once; prints every outcome.
 * - `count FILE ROUNDS LABELS`: which of the would-be next generations `rt-r-LABEL` exist, and
 *   who approved `pending-r`, per round.
 * - `check FILE`: the contract's one-time guarantees in this runtime (see `check` below).
 */
import { existsSync, readFileSync } from 'node:fs'
import { createSqliteStore } from '../../src/storage/sqlite.ts'
import type { CodeRecord, DeviceCodeRecord, RefreshTokenRecord } from '../../src/storage/types.ts'

const args: string[] = (globalThis as { Deno?: { args: string[] } }).Deno?.args ?? process.argv.slice(2)
const [command, file = '', ...rest] = args
const now = Math.floor(Date.now() / 1000)

function code(id: string): CodeRecord {
  return {
    id,
    familyId: `family-${id}`,
    clientId: 'web',
    redirectUri: 'https://rp.example.test/cb',
    scope: 'openid',
    sub: 'user-1',
    sid: 'sid-1',
    authTime: now,
    amr: ['pwd'],
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    codeChallengeMethod: 'S256',
    issuedAt: now,
    expiresAt: now + 600,
  } as CodeRecord
}

function refresh(id: string, familyId: string): RefreshTokenRecord {
  return {
    id,
    familyId,
    clientId: 'web',
    scope: 'openid offline_access',
    sub: 'user-1',
    sid: 'sid-1',
    authTime: now,
    amr: ['pwd'],
    issuedAt: now,
    expiresAt: now + 3600,
    familyExpiresAt: now + 86_400,
  } as RefreshTokenRecord
}

function device(id: string, userCode: string, approved: boolean): DeviceCodeRecord {
  return {
    id,
    userCode,
    familyId: `family-${id}`,
    clientId: 'tv',
    scope: 'openid offline_access',
    interval: 5,
    status: approved ? 'approved' : 'pending',
    ...(approved ? { login: { sub: 'user-1', authTime: now } } : {}),
    issuedAt: now,
    expiresAt: now + 600,
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

async function setup(rounds: number): Promise<unknown> {
  const store = createSqliteStore({ path: file })
  const migrated = await store.migrate()
  for (let r = 0; r < rounds; r++) {
    await store.codes.insert(code(`code-${r}`))
    await store.refreshTokens.insert(refresh(`rt-${r}`, `family-rt-${r}`))
    const suffix = String(r).padStart(4, '0')
    await store.deviceCodes.insert(device(`device-${r}`, `BCDF${suffix}`, true), now)
    await store.deviceCodes.insert(device(`pending-${r}`, `GHJK${suffix}`, false), now)
  }
  await store.close()
  return { migrated }
}

async function race(rounds: number, label: string): Promise<unknown> {
  const store = createSqliteStore({ path: file })
  await store.codes.get('warm-up') // opens the file (WAL) before the start
  console.log('ready')
  while (!existsSync(`${file}.go`)) await sleep(2)
  const start = Number(readFileSync(`${file}.go`, 'utf8'))
  const codes: string[] = []
  const rotations: string[] = []
  const polls: string[] = []
  const decisions: boolean[] = []
  for (let r = 0; r < rounds; r++) {
    await sleep(start + r * 25 - Date.now())
    const at = Math.floor(Date.now() / 1000)
    const login = { sub: label, authTime: at }
    const [consumed, rotated, polled, decided] = await Promise.all([
      store.codes.consume(`code-${r}`, at),
      store.refreshTokens.rotate(`rt-${r}`, refresh(`rt-${r}-${label}`, `family-rt-${r}`), at),
      store.deviceCodes.poll(`device-${r}`, at),
      store.deviceCodes.decide(`pending-${r}`, { status: 'approved', login }, at),
    ])
    codes.push(consumed.status)
    rotations.push(rotated.status)
    polls.push(polled.status)
    decisions.push(decided)
  }
  await store.close()
  return { label, codes, rotations, polls, decisions }
}

async function count(rounds: number, labels: string[]): Promise<unknown> {
  const store = createSqliteStore({ path: file })
  const next: string[][] = []
  const approvedBy: Array<string | null> = []
  for (let r = 0; r < rounds; r++) {
    const found: string[] = []
    for (const label of labels) if (await store.refreshTokens.get(`rt-${r}-${label}`)) found.push(label)
    next.push(found)
    approvedBy.push((await store.deviceCodes.get(`pending-${r}`))?.login?.sub ?? null)
  }
  await store.close()
  return { next, approvedBy }
}

/**
 * In this runtime: 20 concurrent consumes of one code (one ok), a rotation (ok, its next
 * generation, then replayed), 20 concurrent rotations (one ok, one next generation), a chain of
 * rotations, and the state after reopening the file.
 */
async function check(): Promise<unknown> {
  const store = createSqliteStore({ path: file })
  const migrated = await store.migrate()
  await store.codes.insert(code('c1'))
  const consumed = await Promise.all(Array.from({ length: 20 }, () => store.codes.consume('c1', now)))
  const codeOutcomes = consumed.map((c) => c.status).sort()
  await store.refreshTokens.insert(refresh('r1', 'f1'))
  const first = await store.refreshTokens.rotate('r1', refresh('r2', 'f1'), now)
  const replay = await store.refreshTokens.rotate('r1', refresh('r2-again', 'f1'), now)
  const rotated = {
    first: first.status,
    consumedAt: first.status === 'ok' ? first.record.consumedAt : undefined,
    next: (await store.refreshTokens.get('r2'))?.id ?? null,
    replay: replay.status,
    replayNext: (await store.refreshTokens.get('r2-again'))?.id ?? null,
  }
  const racing = await Promise.all(
    Array.from({ length: 20 }, (_, i) => store.refreshTokens.rotate('r2', refresh(`r3-${i}`, 'f1'), now)),
  )
  const nextGenerations = (await Promise.all(racing.map((_, i) => store.refreshTokens.get(`r3-${i}`)))).filter(
    Boolean,
  ).length
  await store.close()
  const reopened = createSqliteStore({ path: file })
  const persisted = { migrations: await reopened.migrate(), c1: (await reopened.codes.get('c1'))?.consumedAt === now }
  await reopened.close()
  return {
    migrated,
    codes: {
      ok: codeOutcomes.filter((s) => s === 'ok').length,
      replayed: codeOutcomes.filter((s) => s === 'replayed').length,
    },
    rotated,
    race: { ok: racing.filter((r) => r.status === 'ok').length, nextGenerations },
    persisted,
  }
}

const rounds = Number(rest[0] ?? 0)
const result =
  command === 'setup'
    ? await setup(rounds)
    : command === 'race'
      ? await race(rounds, rest[1] ?? 'x')
      : command === 'count'
        ? await count(rounds, (rest[1] ?? '').split(','))
        : await check()
console.log(JSON.stringify(result))
