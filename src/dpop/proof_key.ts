/**
 * @module dpop/proof_key
 * The public key of a DPoP proof, read from its protected header (RFC 9449 §4.3 points 4, 5, 7)
 * and imported once: a client signs every proof with one key under one header, so the header's
 * exact bytes name the key, and repeat proofs skip the JSON, the checks, the key import and the
 * thumbprint. Only the signature is verified per proof.
 */
import { type CryptoKey, type JWK, decodeProtectedHeader, importJWK } from 'jose'
import { OAuthError } from '../errors.ts'
import { type Sha256, jwkThumbprint } from './thumbprint.ts'
import type { DpopVerifier, VerifyFunction } from '../crypto/index.ts'

export type { DpopVerifier, VerifyFunction }

/** A checked proof header: its algorithm and public key, imported, with the key's thumbprint. */
export interface ProofKey {
  alg: string
  jwk: JWK
  key: CryptoKey
  /** The WebCrypto parameters that verify `alg` signatures (RFC 7518 §3, RFC 8037 §3.1). */
  params: AlgorithmIdentifier | RsaPssParams | EcdsaParams
  /** RFC 7638 SHA-256 thumbprint of `jwk`. */
  jkt: string
  /** The check each `DpopVerifier` made for this key (null: it declined, use WebCrypto). */
  verifiers: WeakMap<DpopVerifier, VerifyFunction | null>
}

/** The signature check of `verifier` for this key, made on first use; undefined: use WebCrypto. */
export function verifyFunction(key: ProofKey, verifier: DpopVerifier | undefined): VerifyFunction | undefined {
  if (verifier === undefined) return undefined
  let verify = key.verifiers.get(verifier)
  if (verify === undefined) {
    verify = verifier({ alg: key.alg, jwk: key.jwk }) ?? null
    key.verifiers.set(verifier, verify)
  }
  return verify ?? undefined
}

/** WebCrypto verification parameters per JWS algorithm (jose imports the keys). */
const VERIFY_PARAMS: Readonly<Record<string, AlgorithmIdentifier | RsaPssParams | EcdsaParams>> = {
  ES256: { name: 'ECDSA', hash: 'SHA-256' },
  ES384: { name: 'ECDSA', hash: 'SHA-384' },
  ES512: { name: 'ECDSA', hash: 'SHA-512' },
  RS256: { name: 'RSASSA-PKCS1-v1_5' },
  RS384: { name: 'RSASSA-PKCS1-v1_5' },
  RS512: { name: 'RSASSA-PKCS1-v1_5' },
  PS256: { name: 'RSA-PSS', saltLength: 32 },
  PS384: { name: 'RSA-PSS', saltLength: 48 },
  PS512: { name: 'RSA-PSS', saltLength: 64 },
  EdDSA: { name: 'Ed25519' },
  Ed25519: { name: 'Ed25519' },
}
/** RFC 7518 §3.3, §3.5: RSA keys of at least 2048 bits. */
const MIN_RSA_BITS = 2048

/** JWK members that only private or symmetric keys have (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const
/** Headers remembered (the oldest goes first), and the longest one kept (a 4096-bit RSA key's is ~1 KB). */
const MAX_ENTRIES = 1024
const MAX_CACHED_SEGMENT = 2048

const cache = new Map<string, ProofKey>()

/** RFC 9449 §5 `invalid_dpop_proof` (400 at the token endpoint; a resource re-answers it as a 401). */
export function invalidProof(description: string, cause?: unknown): OAuthError {
  return new OAuthError('invalid_dpop_proof', description, { cause })
}

/**
 * The key of `proof` (a compact JWS whose first segment is `segment`), checked and imported, from
 * the cache when this header was seen before. The `alg` allow-list is checked on every call.
 */
export function proofKey(
  proof: string,
  segment: string,
  algorithms: readonly string[],
  hash: Sha256 | undefined,
): ProofKey | Promise<ProofKey> {
  const known = cache.get(segment)
  if (known) {
    if (!algorithms.includes(known.alg)) throw invalidProof('DPoP proof "alg" is not supported')
    // A key seen before answers synchronously: no promise, no turn of the microtask queue.
    return known
  }
  return importProofKey(proof, segment, algorithms, hash)
}

/** A proof header not seen before: checked, its key imported and thumbprinted, then remembered. */
async function importProofKey(
  proof: string,
  segment: string,
  algorithms: readonly string[],
  hash: Sha256 | undefined,
): Promise<ProofKey> {
  const { alg, jwk } = checkProofHeader(proof, algorithms)
  const params = VERIFY_PARAMS[alg]
  if (params === undefined) throw invalidProof('DPoP proof "alg" is not supported')
  let key: CryptoKey
  let jkt: string
  try {
    const imported = await importJWK({ ...jwk, ext: true }, alg)
    if (imported instanceof Uint8Array || imported.type !== 'public') throw new TypeError('not a public key')
    const bits = (imported.algorithm as Partial<RsaHashedKeyAlgorithm>).modulusLength
    if (bits !== undefined && bits < MIN_RSA_BITS) throw new TypeError(`RSA keys need ${MIN_RSA_BITS} bits`)
    key = imported
    jkt = await jwkThumbprint(jwk, hash)
  } catch (cause) {
    throw invalidProof('DPoP proof "jwk" header is missing or invalid', cause)
  }
  const entry: ProofKey = { alg, jwk, key, params, jkt, verifiers: new WeakMap() }
  if (segment.length <= MAX_CACHED_SEGMENT) {
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string)
    cache.set(segment, entry)
  }
  return entry
}

/** RFC 9449 §4.3 points 4, 5 and 7, checked before any key import or signature work. */
function checkProofHeader(proof: string, algorithms: readonly string[]): { alg: string; jwk: JWK } {
  let header: ReturnType<typeof decodeProtectedHeader>
  try {
    header = decodeProtectedHeader(proof)
  } catch (cause) {
    throw invalidProof('DPoP proof header is malformed', cause)
  }
  if (header.typ !== 'dpop+jwt') throw invalidProof('DPoP proof "typ" must be "dpop+jwt"')
  // RFC 7515 §4.1.11: no extension is understood, so any `crit` (`b64` included) is refused.
  if (header.crit !== undefined) throw invalidProof('DPoP proof "crit" header is not supported')
  if (typeof header.alg !== 'string' || !algorithms.includes(header.alg)) {
    throw invalidProof('DPoP proof "alg" is not supported')
  }
  const jwk = header.jwk
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk) || typeof jwk.kty !== 'string') {
    throw invalidProof('DPoP proof "jwk" header is missing or invalid')
  }
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw invalidProof('DPoP proof "jwk" must be a public key')
  return { alg: header.alg, jwk }
}
