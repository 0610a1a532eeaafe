/**
 * #31: the signing paths a ceiling can use (`SIGNER`), over one ES256 and one RS256 key pair made
 * with jose, as Gatehouse makes its keys. Each path signs the same JWS signing input; none is
 * hand-written cryptography:
 * - `webcrypto`: crypto.subtle.sign (what jose does underneath, without the JOSE layer);
 * - `node`: node:crypto's synchronous sign, in the request's own turn;
 * - `node-batch`: the same, the signatures asked for during one turn of the event loop made back
 *   to back right after it (`setImmediate`), one queue per key, as `nodeSigner` does.
 * `hybrid-*`: ES256 through the first path, RS256 through the second (e.g. `hybrid-node-batch-webcrypto`).
 */
import { Buffer } from 'node:buffer'
import { createPrivateKey, sign } from 'node:crypto'
import { setImmediate } from 'node:timers'
import { exportJWK, generateKeyPair } from 'jose'
import type { CeilingSign } from './ceiling_core.ts'

type Alg = 'ES256' | 'RS256'
type Path = 'webcrypto' | 'node' | 'node-batch'
const PATHS: Path[] = ['webcrypto', 'node', 'node-batch']

const WEB: Record<Alg, AlgorithmIdentifier | EcdsaParams> = {
  ES256: { name: 'ECDSA', hash: 'SHA-256' } as EcdsaParams,
  RS256: { name: 'RSASSA-PKCS1-v1_5' },
}

function batched(signNow: (input: Uint8Array) => Uint8Array): (input: Uint8Array) => Promise<Uint8Array> {
  let queue: { input: Uint8Array; resolve: (signature: Uint8Array) => void; reject: (e: unknown) => void }[] = []
  const flush = (): void => {
    const pending = queue
    queue = []
    for (const { input, resolve, reject } of pending) {
      try {
        resolve(signNow(input))
      } catch (error) {
        reject(error)
      }
    }
  }
  return (input) =>
    new Promise((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush)
      queue.push({ input, resolve, reject })
    })
}

async function signerFor(alg: Alg, path: Path): Promise<(input: Uint8Array) => Uint8Array | Promise<Uint8Array>> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true })
  if (path === 'webcrypto') {
    return async (input) =>
      new Uint8Array(await crypto.subtle.sign(WEB[alg], privateKey as CryptoKey, input as Uint8Array<ArrayBuffer>))
  }
  const key = createPrivateKey({ key: (await exportJWK(privateKey)) as never, format: 'jwk' })
  const options = alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' as const } : { key }
  const signNow = (input: Uint8Array): Uint8Array => sign('sha256', input, options)
  return path === 'node' ? signNow : batched((input) => signNow(Buffer.from(input)))
}

/** The ceiling's signer for `SIGNER` (a path, or `hybrid-<ES256 path>-<RS256 path>`). */
export async function ceilingSigner(name: string): Promise<CeilingSign> {
  let es: Path
  let rs: Path
  if (name.startsWith('hybrid-')) {
    const rest = name.slice('hybrid-'.length)
    const first = PATHS.filter((p) => rest.startsWith(`${p}-`)).sort((a, b) => b.length - a.length)[0]
    if (!first) throw new Error(`unknown SIGNER ${name}`)
    es = first
    rs = rest.slice(first.length + 1) as Path
  } else {
    es = name as Path
    rs = name as Path
  }
  if (!PATHS.includes(es) || !PATHS.includes(rs)) throw new Error(`unknown SIGNER ${name}`)
  const signers = { ES256: await signerFor('ES256', es), RS256: await signerFor('RS256', rs) }
  return (alg, input) => signers[alg](input)
}
