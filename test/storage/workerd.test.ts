/**
 * #28 item 6: the storage contract inside workerd. The files under test/workerd (`*.workerd.ts`,
 * never collected by this suite) run in workerd through @cloudflare/vitest-pool-workers with
 * vitest.workerd.config.ts, which needs Node 22 (Miniflare): this file runs that config under Node
 * 22 (GATEHOUSE_NODE22, else .tools/node22, as test/storage/sqlite.test.ts finds it) and asserts
 * that it passed, with each contract run on workerd (not skipped), so a failure there fails here
 * with its output: D1 (the Worker's own binding) always, PostgreSQL (TCP sockets, nodejs_compat)
 * with DATABASE_URL (the machine's server; skipped without).
 */
import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../runtime/server.ts'
import { node22Binary } from './sqlite_node22.ts'

const node22 = node22Binary()
const databaseUrl = process.env.DATABASE_URL

describe.runIf(node22)('#28 the storage contract inside workerd (vitest-pool-workers under Node 22)', () => {
  let output: string | undefined
  let status: number | null = null
  /** One run of the workerd config for every assertion below. */
  function run(): string {
    if (output !== undefined) return output
    const result = spawnSync(
      node22 as string,
      ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.workerd.config.ts', '--reporter=verbose'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 240_000,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, NO_COLOR: '1', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) },
      },
    )
    status = result.status
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colours
    output = `${result.stdout}\n${result.stderr}`.replace(/\x1b\[[0-9;]*m/g, '')
    return output
  }

  it('#28 item 6 the workerd run passes, without unhandled errors', () => {
    const text = run()
    expect(status, text).toBe(0)
    expect(text).toMatch(/Test Files\s+\d+ (passed|skipped)/)
    expect(text).not.toMatch(/\d+ failed|Unhandled (Rejection|Error)/)
  }, 300_000)

  it('#28 item 6 the D1 contract suite passes inside workerd (the store in the Worker’s isolate on its env.DB)', () => {
    const text = run()
    expect(text).toMatch(/Tests\s+\d{2,} passed/)
    expect(text, text).toContain(
      'D1 store inside workerd > storage contract: d1 in workerd > codes > consume: exactly one of 100 concurrent callers wins, the rest see replayed',
    )
    expect(text).toContain(
      'D1 store inside workerd > storage contract: d1 in workerd > refresh tokens > rotate is atomic: exactly one of 100 concurrent rotations wins and only its next generation exists',
    )
  }, 300_000)

  it.runIf(databaseUrl)(
    '#28 items 4 and 6 the PostgreSQL contract suite passes inside workerd (TCP sockets, a client per request scope)',
    () => {
      const text = run()
      expect(text).toMatch(/Tests\s+\d{2,} passed/)
      expect(text, text).toContain(
        'PostgreSQL store inside workerd > storage contract: postgres in workerd > codes > consume: exactly one of 100 concurrent callers wins, the rest see replayed',
      )
      expect(text).toContain(
        'PostgreSQL store inside workerd > #28 item 4 each scope (request) has its own connections, made on its first query and closed with it',
      )
      expect(text).toContain(
        'PostgreSQL store inside workerd through a local Hyperdrive binding > #28 item 4 workerStore’s choice reads env.HYPERDRIVE.connectionString',
      )
      expect(text).not.toMatch(/✓ .*PostgreSQL store inside workerd .*needs DATABASE_URL/)
    },
    300_000,
  )
})
