/** `bunServiceOptions()` under the real Bun binary: node:crypto signatures, SHA-256 and digest. */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './server.ts'

describe('bunServiceOptions on Bun', () => {
  it('signs ES256 through a batched node:crypto signer (P1363, verifiable), SHA-256 as WebCrypto, keyed digest', () => {
    const output = execFileSync(join(ROOT, 'node_modules/.bin/bun'), ['run', 'test/runtime/bun_crypto_check.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(JSON.parse(output.trim().split('\n').at(-1) as string)).toEqual({
      runtime: 'bun',
      batched: true,
      verified: [true, true],
      signatureLengths: [64, 64],
      sha256Matches: true,
      digestStable: true,
      digestKeyed: true,
    })
  })
})
