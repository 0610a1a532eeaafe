/**
 * `denoServiceOptions()` under the real Deno binary: node:crypto SHA-256 and keyed digest; a signer
 * for EdDSA keys only (the rest stays on WebCrypto); resolveHost through node:dns.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './server.ts'

describe('denoServiceOptions on Deno', () => {
  it('SHA-256 as WebCrypto computes it, a keyed secret digest, EdDSA signed by node:crypto and the rest left to WebCrypto', () => {
    const output = execFileSync(
      join(ROOT, 'node_modules/.bin/deno'),
      ['run', '--allow-read', '--allow-env', 'test/runtime/deno_crypto_check.ts'],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    )
    expect(JSON.parse(output.trim().split('\n').at(-1) as string)).toEqual({
      runtime: 'deno',
      options: ['outboundFetch', 'resolveHost', 'secretDigest', 'sha256', 'signer'],
      sha256Matches: [true, true, true, true],
      digestStable: true,
      digestKeyed: true,
      digestNotPlainSha256: true,
      signerTakes: { EdDSA: true, ES256: false, RS256: false },
      eddsaVerifies: true,
    })
  })
})
