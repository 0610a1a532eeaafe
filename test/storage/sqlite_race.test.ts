/**
 * Processes racing on one SQLite file (#28 item 1): four processes of three runtimes (two Node 22,
 * one Bun, one Deno; each the store on its own connection, WAL mode) consume the same code and
 * rotate the same refresh token at the same instant, round after round, and poll the same approved
 * device code and decide the same pending device authorization (#29; test/storage/sqlite_worker.ts).
 * Every round has exactly one winner of each, the others see `replayed` (never missing, never an
 * error), and only the winner's next generation exists. Skipped without Node 22 (Bun and Deno
 * come from devDependencies); listed by test/global_setup.ts.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ROOT } from '../runtime/server.ts'
import { node22Binary } from './sqlite_node22.ts'

const node22 = node22Binary()
const BIN = join(ROOT, 'node_modules/.bin')
const WORKER = 'test/storage/sqlite_worker.ts'
const ROUNDS = 40

/** How each runtime runs the worker. */
const RUNTIMES: Record<string, string[]> = {
  node22: [node22 ?? 'node22', '--disable-warning=ExperimentalWarning', WORKER],
  bun: [join(BIN, 'bun'), 'run', WORKER],
  deno: [join(BIN, 'deno'), 'run', '--allow-all', WORKER],
}

function runWorker(runtime: string, args: string[]): unknown {
  const [file, ...rest] = RUNTIMES[runtime] as [string, ...string[]]
  const run = spawnSync(file, [...rest, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })
  if (run.status !== 0) throw new Error(`${runtime} ${args.join(' ')} failed:\n${run.stdout}\n${run.stderr}`)
  return JSON.parse(run.stdout.trim().split('\n').at(-1) as string)
}

/** Starts a racer; resolves `ready` once it has the file open, `done` with its outcomes. */
function startRacer(runtime: string, args: string[]): { ready: Promise<void>; done: Promise<unknown> } {
  const [file, ...rest] = RUNTIMES[runtime] as [string, ...string[]]
  const child: ChildProcess = spawn(file, [...rest, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  let markReady = () => {}
  const ready = new Promise<void>((resolve) => {
    markReady = resolve
  })
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    if (stdout.includes('ready\n')) markReady()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const done = new Promise<unknown>((resolve, reject) => {
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${runtime} racer exited ${code}:\n${stdout}\n${stderr}`))
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1) as string))
    })
  })
  done.catch(() => markReady())
  return { ready, done }
}

describe.runIf(node22)('#28 item 1 SQLite: processes of several runtimes racing on one file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-race-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it(`#28 item 1 #29 in each of ${ROUNDS} rounds, of 4 processes (Node 22 ×2, Bun, Deno) exactly one consumes the code, rotates the token, redeems the device code and decides the device authorization`, async () => {
    const file = join(dir, 'race.db')
    expect(runWorker('node22', ['setup', file, String(ROUNDS)])).toEqual({ migrated: [1, 2, 3, 4, 5, 6, 7, 8] })
    const racers = [
      ['node22', 'n1'],
      ['node22', 'n2'],
      ['bun', 'b'],
      ['deno', 'd'],
    ] as const
    const started = racers.map(([runtime, label]) => startRacer(runtime, ['race', file, String(ROUNDS), label]))
    await Promise.all(started.map((racer) => racer.ready))
    // Every racer starts round r at start + r × 25 ms of the same clock.
    writeFileSync(`${file}.go`, String(Date.now() + 300))
    const results = (await Promise.all(started.map((racer) => racer.done))) as Array<{
      label: string
      codes: string[]
      rotations: string[]
      polls: string[]
      decisions: boolean[]
    }>
    const labels = racers.map(([, label]) => label)
    const { next, approvedBy } = runWorker('node22', ['count', file, String(ROUNDS), labels.join(',')]) as {
      next: string[][]
      approvedBy: Array<string | null>
    }
    for (let round = 0; round < ROUNDS; round++) {
      const codes = results.map((result) => result.codes[round]).sort()
      const rotations = results.map((result) => result.rotations[round])
      expect(codes, `round ${round} codes`).toEqual(['ok', 'replayed', 'replayed', 'replayed'])
      expect([...rotations].sort(), `round ${round} rotations`).toEqual(['ok', 'replayed', 'replayed', 'replayed'])
      // Only the winner's next generation was inserted.
      const winner = results[rotations.indexOf('ok')]?.label
      expect(next[round], `round ${round} next generations`).toEqual([winner])
      const polls = results.map((result) => result.polls[round]).sort()
      expect(polls, `round ${round} device polls`).toEqual(['ok', 'replayed', 'replayed', 'replayed'])
      const decisions = results.map((result) => result.decisions[round])
      expect(decisions.filter(Boolean), `round ${round} device decisions`).toHaveLength(1)
      // The one decision that returned true is the one stored.
      expect(approvedBy[round], `round ${round} approver`).toBe(results[decisions.indexOf(true)]?.label)
    }
  }, 180_000)
})
