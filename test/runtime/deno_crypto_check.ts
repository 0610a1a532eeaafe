/**
 * Run by deno_crypto.test.ts under the real Deno binary: `denoServiceOptions()` on Deno's
 * node:crypto. Prints one JSON line with what it observed; the test judges it. Not in tsc's
 * test project (adapters/deno.ts needs the Deno namespace); Deno runs it as TypeScript.
 */
import { exportJWK, generateKeyPair } from 'jose'
import { denoServiceOptions } from '../../adapters/deno.ts'

const options = denoServiceOptions()
const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
const webSha256 = async (text: string) =>
  base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))))
const samples = ['päss', '', 'seed_00000000000000000000000000000000000042', '鍵🔑']
const signerTakes: Record<string, boolean> = {}
for (const alg of ['EdDSA', 'ES256', 'RS256'] as const) {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  })
  signerTakes[alg] = options.signer({ alg, kid: 'k', privateJwk: await exportJWK(privateKey) }) !== undefined
}
const ed = await generateKeyPair('EdDSA', { extractable: true, crv: 'Ed25519' })
const signEd = options.signer({ alg: 'EdDSA', kid: 'k', privateJwk: await exportJWK(ed.privateKey) })
const signingInput = new TextEncoder().encode('eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0')
const signature = await signEd?.(signingInput)
const eddsaVerifies = await crypto.subtle.verify('Ed25519', ed.publicKey, signature as Uint8Array, signingInput)
console.log(
  JSON.stringify({
    runtime: typeof (globalThis as { Deno?: unknown }).Deno === 'object' ? 'deno' : 'not deno',
    options: Object.keys(options).sort(),
    sha256Matches: await Promise.all(samples.map(async (text) => options.sha256(text) === (await webSha256(text)))),
    digestStable: options.secretDigest('s3cret') === options.secretDigest(['s3', 'cret'].join('')),
    digestKeyed: options.secretDigest('s3cret') !== denoServiceOptions().secretDigest('s3cret'),
    digestNotPlainSha256: options.secretDigest('s3cret') !== (await webSha256('s3cret')),
    signerTakes,
    eddsaVerifies,
  }),
)
