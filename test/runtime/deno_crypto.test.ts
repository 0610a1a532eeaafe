/** `denoServiceOptions()` under the real Deno binary: node:crypto SHA-256 and keyed digest, no signer; resolveHost through node:dns. */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './server.ts'

describe('denoServiceOptions on Deno', () => {
  it('SHA-256 as WebCrypto computes it, a keyed secret digest, and signatures left to WebCrypto', () => {
    const output = execFileSync(
      join(ROOT, 'node_modules/.bin/deno'),
      ['run', '--allow-read', '--allow-env', 'test/runtime/deno_crypto_check.ts'],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    )
    expect(JSON.parse(output.trim().split('\n').at(-1) as string)).toEqual({
      runtime: 'deno',
      options: ['resolveHost', 'secretDigest', 'sha256'],
      sha256Matches: [true, true, true, true],
      digestStable: true,
      digestKeyed: true,
      digestNotPlainSha256: true,
    })
  })
})
