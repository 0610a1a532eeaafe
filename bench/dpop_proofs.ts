/**
 * DPoP proofs for the load generator (scenario client_credentials_dpop; bench/load.ts and
 * bench/dpop_cost.ts). Every request needs a fresh proof (a unique `jti`, RFC 9449 §11.1), and
 * signing one costs the load process as much as a token costs the server, so they are all signed
 * before the clock starts, with one key (node:crypto; ES256, the usual DPoP key of browsers and
 * oauth4webapi, unless told), and presented in order.
 *
 * The proofs all have the same length (a 22-character `jti`, one `iat`), so they are kept in one
 * Buffer outside the JavaScript heap, and each request is autocannon's own bytes of the request
 * for proof 0 with the next proof written over it (see bench/seeded_requests.ts for why).
 */
import { constants, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import type { AutocannonClient } from './seeded_requests.ts'

/** Pre-signed proofs for one URL, presented in order. */
export interface DpopProofs {
  /** Proof number `index` (the last one again past the end: a replay the server refuses). Proof 0 is the setup's. */
  proof(index: number): string
  count: number
  /** How many were handed out so far. */
  used(): number
  /** autocannon's `setupClient`: each request of the connection carries the next unused proof. */
  setupClient: (client: AutocannonClient) => void
}

const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** The proof algorithms the load can sign with (node:crypto); the bench uses ES256, the usual one. */
export type ProofAlg = 'ES256' | 'EdDSA' | 'PS256'

function proofKey(alg: ProofAlg) {
  const pair =
    alg === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : alg === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('rsa', { modulusLength: 2048 })
  const { kty, crv, x, y, n, e } = pair.publicKey.export({ format: 'jwk' })
  const jwk = alg === 'ES256' ? { kty, crv, x, y } : alg === 'EdDSA' ? { kty, crv, x } : { kty, n, e }
  const options =
    alg === 'PS256'
      ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }
      : { dsaEncoding: 'ieee-p1363' as const }
  const signer = (input: Buffer) => sign(alg === 'EdDSA' ? null : 'sha256', input, { key: pair.privateKey, ...options })
  return { jwk, signer }
}

/** Signs `count` proofs for `method htu` (ES256 unless told), all with `iat` now (valid for 300 s). */
export function createDpopProofs(count: number, htu: string, method = 'POST', alg: ProofAlg = 'ES256'): DpopProofs {
  const { jwk, signer } = proofKey(alg)
  const header = segment({ typ: 'dpop+jwt', alg, jwk })
  const iat = Math.floor(Date.now() / 1000)
  let length = 0
  let bytes = Buffer.alloc(0)
  for (let i = 0; i < count; i++) {
    const input = `${header}.${segment({ jti: randomBytes(16).toString('base64url'), htm: method, htu, iat })}`
    const signature = signer(Buffer.from(input))
    const proof = `${input}.${signature.toString('base64url')}`
    if (i === 0) {
      length = proof.length
      bytes = Buffer.allocUnsafe(length * count)
    }
    if (proof.length !== length) throw new Error('DPoP proofs of different lengths')
    bytes.write(proof, i * length, 'latin1')
  }
  const proof = (index: number) => {
    const i = Math.min(index, count - 1)
    return bytes.toString('latin1', i * length, (i + 1) * length)
  }
  // Proof 0 is the setup request's (bench/load.ts checks the server accepts DPoP) and the marker
  // autocannon's request bytes are built with: the measured requests start at proof 1.
  let next = 1
  return {
    proof,
    count,
    used: () => next,
    setupClient: (client) => {
      if (typeof client.getRequestBuffer !== 'function') throw new Error('autocannon client without getRequestBuffer')
      const template = client.getRequestBuffer()
      const offset = template.indexOf(proof(0), 0, 'latin1')
      if (offset < 0) throw new Error('unexpected request layout: no DPoP proof')
      client.getRequestBuffer = () => {
        const request = Buffer.allocUnsafe(template.length)
        template.copy(request)
        const i = Math.min(next++, count - 1)
        bytes.copy(request, offset, i * length, (i + 1) * length)
        return request
      }
    },
  }
}
