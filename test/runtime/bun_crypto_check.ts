/**
 * Run by bun_crypto.test.ts under the real Bun binary: `bunServiceOptions()` on Bun's node:crypto.
 * Prints one JSON line with what it observed; the test judges it.
 */
import { bunServiceOptions } from '../../adapters/bun.ts'

const { signer, sha256, secretDigest } = bunServiceOptions()
const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])
const privateJwk = await crypto.subtle.exportKey('jwk', pair.privateKey)
const sign = signer({ alg: 'ES256', privateJwk } as Parameters<typeof signer>[0])
const inputs = ['first.input', 'second.input'].map((text) => new TextEncoder().encode(text))
// Two signatures asked for in one turn: batched, so both are promises settled after the turn.
const pending = inputs.map((input) => sign?.(input))
const signatures = (await Promise.all(pending)).map((signature) => new Uint8Array(signature as Uint8Array))
const verified = await Promise.all(
  signatures.map((signature, i) =>
    crypto.subtle.verify(
      { name: 'ECDSA', hash: 'SHA-256' },
      pair.publicKey,
      signature,
      inputs[i] as Uint8Array<ArrayBuffer>,
    ),
  ),
)
const webSha256 = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode('päss')))
console.log(
  JSON.stringify({
    runtime: typeof Bun === 'undefined' ? 'not bun' : 'bun',
    batched: pending.every((value) => value instanceof Promise),
    verified,
    signatureLengths: signatures.map((signature) => signature.length),
    sha256Matches: sha256('päss') === Buffer.from(webSha256).toString('base64url'),
    digestStable: secretDigest('s3cret') === secretDigest(['s3', 'cret'].join('')),
    digestKeyed: secretDigest('s3cret') !== bunServiceOptions().secretDigest('s3cret'),
  }),
)
