/**
 * The JSR package (deno.json): `deno publish --dry-run` type-checks every export and fails when a
 * module its graph reaches is not in `publish.include` (it would be missing from the package).
 * #39 item 5 added adapters/node_outbound.ts, which adapters/deno.ts imports.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { ROOT, bin } from '../runtime/server.ts'

const run = promisify(execFile)

describe('#18 the JSR package', () => {
  it('#39 item 5 deno publish --dry-run succeeds: every module of the graph is included (adapters/node_outbound.ts)', async () => {
    const { stderr, stdout } = await run(bin('deno'), ['publish', '--dry-run', '--allow-dirty'], {
      cwd: ROOT,
      timeout: 120_000,
      env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
    }).catch((error: Error & { stdout?: string; stderr?: string }) => ({
      stdout: error.stdout ?? '',
      stderr: `${error.message}\n${error.stderr ?? ''}`,
    }))
    const output = `${stdout}\n${stderr}`
    expect(output, output.slice(-4000)).toMatch(/Success Dry run complete/)
    expect(output).toContain('adapters/node_outbound.ts')
  }, 150_000)
})
