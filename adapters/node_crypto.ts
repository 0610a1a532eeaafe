/**
 * @module adapters/node_crypto
 * The service's synchronous crypto options through `node:crypto`, for runtimes that have it: Node
 * (adapters/node.ts) and Bun (adapters/bun.ts). WebCrypto, the default in `src/`, is asynchronous
 * (a thread-pool hop on Node), and these answer in the request's own turn.
 */
import {
  type JsonWebKey,
  constants,
  createPrivateKey,
  createPublicKey,
  hash,
  randomBytes,
  sign,
  verify,
} from 'node:crypto'
import type { DpopVerifier, JwsSigner, SignFunction, VerifyFunction } from '../src/crypto/index.ts'
import type { OutboundFetch, SecretDigest } from '../src/security/index.ts'
import { nodeResolveHost } from './node_dns.ts'
import { nodeOutboundFetch } from './node_outbound.ts'

/**
 * A synchronous keyed SHA3-256 under a random per-process key, for the service's `secretDigest`
 * option: a cached client secret check then costs microseconds instead of a thread-pool hop.
 *
 * SHA3-256(key || secret): a sponge hash with the key prepended is a MAC (the construction KMAC
 * standardises, NIST SP 800-185; no length extension as with SHA-2). It is used instead of
 * `createHmac` because Node's `crypto.hash` computes it in one call: an `Hmac` object per request
 * is a native object that each young-generation GC must finalise (measured on the bench's
 * introspection, two such objects per request doubled the scavenge pause, 0.2 -> 0.4 ms).
 */
export function nodeSecretDigest(): (secret: string) => string {
  const key = randomBytes(32).toString('base64url')
  return (secret) => hash('sha3-256', key + secret, 'base64url')
}

/**
 * A synchronous SHA-256 (base64url of the UTF-8 value) for the service's `sha256` option: codes,
 * refresh tokens and sessions are looked up by it, so each such request saves a thread-pool hop.
 * One-shot `crypto.hash`: no `Hash` object is left for the garbage collector per call.
 */
export function nodeSha256(): (value: string) => string {
  return (value) => hash('sha256', value, 'base64url')
}

/** node:crypto's digest and options for each JWS algorithm (RFC 7518 §3.3–3.5, RFC 8037 §3.1). */
const NODE_JWS: Record<string, { hash: string | null; options?: { padding: number; saltLength: number } }> = {
  ES256: { hash: 'sha256' },
  ES384: { hash: 'sha384' },
  RS256: { hash: 'sha256' },
  PS256: { hash: 'sha256', options: { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } },
  EdDSA: { hash: null },
}

/**
 * JWS signatures through node:crypto, for the service's `signer` option: a token costs one
 * OpenSSL signature instead of a WebCrypto thread-pool hop. ECDSA signatures are IEEE P1363
 * (r || s), as JWS wants; other algorithms fall back to jose.
 *
 * `batch` (default true): the signatures a key is asked for during one turn of the event loop are
 * made back to back right after that turn (`setImmediate`), and each request answers then. Signed
 * one per request, between a socket read and a socket write, OpenSSL's code and tables are evicted
 * from the CPU caches every time: measured on the 2-core bench machine, a client_credentials
 * request cost ~100 us of CPU signed inline and 70-74 us batched (`npm run bench`: 10.4k -> 15.5k
 * req/s). An idle server signs at once (a batch of one); `batch: false` signs synchronously in the
 * request's own turn. `algorithms` limits it to those algorithms (the others fall back to jose).
 */
export function nodeSigner(options: { batch?: boolean; algorithms?: readonly string[] } = {}): JwsSigner {
  const batch = options.batch ?? true
  const only = options.algorithms === undefined ? undefined : new Set(options.algorithms)
  return ({ alg, privateJwk }) => {
    const params = NODE_JWS[alg]
    if (!params || (only !== undefined && !only.has(alg))) return undefined
    const key = createPrivateKey({ key: privateJwk as JsonWebKey, format: 'jwk' })
    const signingKey = { key, dsaEncoding: 'ieee-p1363' as const, ...params.options }
    const signNow = (input: Uint8Array): Buffer => sign(params.hash, input, signingKey)
    return batch ? batchedPerTurn(signNow) : signNow
  }
}

/** One piece of crypto work deferred to the end of the turn, and the promise waiting for it. */
interface PendingWork {
  run: () => unknown
  resolve: (value: never) => void
  reject: (reason: unknown) => void
}

/**
 * A queue of crypto work run back to back right after the current turn of the event loop
 * (`setImmediate`): each `defer(run)` resolves with `run()` then. One queue per signer or verifier,
 * so the OpenSSL code and tables of one operation stay in the CPU caches across a batch.
 */
function perTurnQueue(): <T>(run: () => T) => Promise<T> {
  let queue: PendingWork[] = []
  function flush(): void {
    const pending = queue
    queue = []
    for (const { run, resolve, reject } of pending) {
      try {
        resolve(run() as never)
      } catch (err) {
        reject(err)
      }
    }
  }
  return <T>(run: () => T) =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush)
      queue.push({ run, resolve: resolve as (value: never) => void, reject })
    })
}

/**
 * `signNow` for every input given during one turn of the event loop, back to back, right after
 * that turn. Inputs are copied: a `SignFunction`'s input is only valid during the call.
 */
function batchedPerTurn(signNow: (input: Uint8Array) => Buffer): SignFunction {
  const defer = perTurnQueue()
  return (input) => {
    const copy = Buffer.from(input)
    return defer(() => signNow(copy))
  }
}

/**
 * DPoP proof signatures checked through node:crypto, for the service's `dpopVerifier` option (#21):
 * one OpenSSL verification instead of a WebCrypto thread-pool hop per proof. The key is imported
 * once per proof key (the service caches the function per key); `Ed25519` is RFC 9864's name for
 * EdDSA with that curve. Algorithms it does not know fall back to WebCrypto.
 *
 * `batch` (default true): as {@link nodeSigner}'s, the proofs that arrive during one turn of the
 * event loop are verified back to back right after it, whatever their keys, and each request goes
 * on then (an idle server verifies at once). Measured on the bench machine, one ES256 verification
 * between a socket read and a write cost ~1.3x what it costs in a batch, where OpenSSL's code and
 * tables stay cached (bench/README.md, "DPoP"). `batch: false` verifies in the request's own turn.
 */
export function nodeDpopVerifier(options: { batch?: boolean } = {}): DpopVerifier {
  const defer = (options.batch ?? true) ? perTurnQueue() : undefined
  return ({ alg, jwk }): VerifyFunction | undefined => {
    const spec = NODE_JWS[alg === 'Ed25519' ? 'EdDSA' : alg]
    if (!spec) return undefined
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' })
    const options = { key, dsaEncoding: 'ieee-p1363' as const, ...spec.options }
    const verifyNow = (input: Uint8Array, signature: Uint8Array): boolean =>
      verify(spec.hash, input, options, signature)
    if (defer === undefined) return verifyNow
    // The input and signature are the proof's own fresh arrays (dpop/proof.ts): no copy needed.
    return (input, signature) => defer(() => verifyNow(input, signature))
  }
}

/**
 * The service options `npm start` passes on Node and Bun (so do the bench servers), with
 * `resolveHost` through `node:dns/promises` (see adapters/node_dns.ts) and `outboundFetch`, which
 * resolves a self-registered client's host name once and connects to the checked address
 * (adapters/node_outbound.ts).
 */
export function nodeServiceOptions(): {
  secretDigest: SecretDigest
  signer: JwsSigner
  sha256: (value: string) => string
  resolveHost: (hostname: string) => Promise<string[]>
  outboundFetch: OutboundFetch
  dpopVerifier: DpopVerifier
} {
  return {
    secretDigest: nodeSecretDigest(),
    signer: nodeSigner(),
    sha256: nodeSha256(),
    dpopVerifier: nodeDpopVerifier(),
    resolveHost: nodeResolveHost(),
    outboundFetch: nodeOutboundFetch(),
  }
}
