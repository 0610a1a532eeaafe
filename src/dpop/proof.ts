/**
 * @module dpop/proof
 * Checking DPoP proof JWTs (RFC 9449 §4.3): header, signature, claims, nonce and one-time `jti`.
 * The header's key is checked and imported once per header (`proof_key.ts`); per proof only the
 * signature (WebCrypto, or the runtime's `DpopVerifier`), the claims and the `jti` cost anything.
 */
import { type JWK, type JWTPayload, base64url } from 'jose'
import { OAuthError } from '../errors.ts'
import { sha256, timingSafeEqual } from '../crypto/index.ts'
import type { DpopNonces } from './nonce.ts'
import {
  type DpopVerifier,
  type ProofKey,
  type VerifyFunction,
  invalidProof as invalid,
  proofKey,
  verifyFunction,
} from './proof_key.ts'
import { type Sha256, accessTokenHash } from './thumbprint.ts'

/**
 * Proof algorithms accepted by default (advertise them as `dpop_signing_alg_values_supported`).
 * `Ed25519` is the RFC 9864 name of EdDSA over Ed25519, which oauth4webapi sends by default.
 */
export const DEFAULT_DPOP_ALGORITHMS: readonly string[] = ['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256', 'ES384']

export interface DpopProofInput {
  /**
   * The `DPoP` request header: `request.headers.get('dpop')` (repeated headers arrive joined by
   * ", ") or the list of its values. Absent, empty or repeated → invalid_dpop_proof.
   */
  header: string | readonly string[] | null | undefined
  /** The request method (`request.method`), compared exactly with `htm`. */
  method: string
  /** The URL the request was sent to, built from `config.issuer` (never `request.url`). */
  url: string | URL
  /** The access token sent with the proof (resource access): `ath` is then required and checked. */
  accessToken?: string
  /** Current time, epoch seconds. */
  now: number
  /**
   * Records `key` until `expiresAt` and resolves true, or false when the key is already recorded
   * (a replay): `store.replays.use`.
   */
  replay: (key: string, expiresAt: number, now: number) => Promise<boolean>
  /** Server nonces (RFC 9449 §8, §9). A nonce present in a proof is checked when these are given. */
  nonces?: DpopNonces
  /** Whether a proof without a nonce is refused with use_dpop_nonce. Default: `nonces !== undefined`. */
  requireNonce?: boolean
  /** Accepted `alg` values (default {@link DEFAULT_DPOP_ALGORITHMS}); never `none` or HMAC. */
  algorithms?: readonly string[]
  /** How old `iat` may be, in seconds (default 300). */
  maxAge?: number
  /** How far in the future `iat` may be, in seconds (default 5). */
  clockTolerance?: number
  /**
   * base64url SHA-256 of a string, for the thumbprint, `ath` and the replay key: the service's
   * `ctx.sha256` (synchronous on Node). Default: WebCrypto.
   */
  sha256?: Sha256
  /** The runtime's signature check (see {@link DpopVerifier}); default: WebCrypto. */
  verifier?: DpopVerifier
}

/** A checked DPoP proof. */
export interface DpopProof {
  /** RFC 7638 SHA-256 thumbprint of `jwk`: compare with (or bind as) `cnf.jkt`. */
  jkt: string
  /** The public key the proof was signed with. */
  jwk: JWK
  jti: string
  iat: number
  /** The server nonce the proof carried, if any. */
  nonce?: string
}

/** A proof with a 4096-bit RSA key is about 1.5 KiB; anything far longer is refused unparsed. */
const MAX_PROOF_LENGTH = 8192
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/
const MAX_JTI_LENGTH = 256
const MAX_NONCE_LENGTH = 256
/** RFC 3986 §2.3 unreserved characters: percent-encoded ones are decoded before comparing (§6.2.2.2). */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/

/**
 * Checks a DPoP proof (RFC 9449 §4.3) and spends its `jti`:
 * 1. exactly one `DPoP` header, 2. holding one compact JWS (bounded length),
 * 4. `typ` is `dpop+jwt`, 5. `alg` is allowed (never `none` or HMAC), 7. `jwk` is a public key,
 * 6. the signature verifies with `jwk`, 3. `jti`, `htm`, `htu` and `iat` are present, 8. `htm` is
 * the method, 9. `htu` is the URL (normalised; query and fragment ignored), 11. `iat` is within
 * `[now - maxAge, now + clockTolerance]`, 12. `ath` hashes the access token when one is given,
 * 10. the nonce is current when nonces are used, and finally the `jti` was never seen with this key.
 * Binding the key to the token (`cnf.jkt === proof.jkt`, §4.3 point 12) is the caller's check.
 *
 * Throws OAuthError `invalid_dpop_proof`, or `use_dpop_nonce` with a fresh nonce in the `dpop-nonce`
 * header. Both default to 400 (token endpoint); a resource answers 401 with a DPoP challenge.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-4.3
 * @example
 * ```ts
 * const proof = await verifyDpopProof({
 *   header: request.headers.get('dpop'), method: request.method, url: tokenEndpoint, now,
 *   replay: (key, expiresAt, at) => store.replays.use(key, expiresAt, at), nonces,
 * })
 * ```
 */
export async function verifyDpopProof(input: DpopProofInput): Promise<DpopProof> {
  const algorithms = checkAlgorithms(input.algorithms ?? DEFAULT_DPOP_ALGORITHMS)
  const maxAge = input.maxAge ?? 300
  const clockTolerance = input.clockTolerance ?? 5
  const expectedHtu = expectedUrl(input.url)
  const hash = input.sha256 ?? sha256

  const proof = parseDpopHeader(input.header)
  const known = proofKey(proof, proof.slice(0, proof.indexOf('.')), algorithms, hash)
  const key = known instanceof Promise ? await known : known
  const { jwk, jkt } = key
  const payload = await verifySignature(proof, key, verifyFunction(key, input.verifier))

  const { jti, htm, htu, iat } = payload
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) {
    throw invalid('DPoP proof "jti" is missing or invalid')
  }
  if (typeof htm !== 'string') throw invalid('DPoP proof "htm" is missing')
  if (typeof htu !== 'string') throw invalid('DPoP proof "htu" is missing')
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid('DPoP proof "iat" is missing')
  if (htm !== input.method) throw invalid('DPoP proof "htm" does not match the request method')
  // The URL exactly as configured matches without parsing (the usual case).
  if (htu !== expectedHtu.raw && normalizeHtu(htu) !== expectedHtu.normalized) {
    throw invalid('DPoP proof "htu" does not match the request URL')
  }
  if (iat < input.now - maxAge) throw invalid('DPoP proof "iat" is too old')
  if (iat > input.now + clockTolerance) throw invalid('DPoP proof "iat" is in the future')
  if (input.accessToken !== undefined) await checkAth(payload.ath, input.accessToken, hash)
  // Without server nonces in play (the default), a proof without one needs no check and no await.
  const nonce =
    payload.nonce === undefined && (input.nonces === undefined || input.requireNonce === false)
      ? undefined
      : await checkNonce(payload.nonce, input)

  // Bounded key: jkt and jti hashed together. The record outlives the last second the proof's iat
  // is acceptable, so a replay is always caught. The service's hash is synchronous on Node.
  const digest = hash(`${jkt}:${jti}`)
  const replayKey = `dpop:${typeof digest === 'string' ? digest : await digest}`
  if (!(await input.replay(replayKey, Math.ceil(iat + maxAge) + 1, input.now))) {
    throw invalid('DPoP proof "jti" has already been used')
  }
  return nonce === undefined ? { jkt, jwk, jti, iat } : { jkt, jwk, jti, iat, nonce }
}

function checkAlgorithms(algorithms: readonly string[]): readonly string[] {
  if (!Array.isArray(algorithms) || algorithms.length === 0) {
    throw new TypeError('"algorithms" must be a non-empty array')
  }
  for (const alg of algorithms) {
    // RFC 9449 §4.3 point 5: an asymmetric signature algorithm, not none
    if (typeof alg !== 'string' || alg.toLowerCase() === 'none' || alg.startsWith('HS')) {
      throw new TypeError(`"algorithms" must list asymmetric signature algorithms only, got ${String(alg)}`)
    }
  }
  return algorithms
}

/** The request URL as given and normalised; the last few are remembered (services have one or two). */
const expectedUrls = new Map<string, ExpectedUrl>()

interface ExpectedUrl {
  /** The URL as given when it is already normalised (an htu equal to it matches), else undefined. */
  raw: string | undefined
  normalized: string
}

function expectedUrl(url: string | URL): ExpectedUrl {
  const raw = typeof url === 'string' ? url : url.href
  const known = expectedUrls.get(raw)
  if (known) return known
  const normalized = normalizeHtu(raw)
  if (normalized === undefined) throw new TypeError('"url" must be an absolute http(s) URL')
  // Only a URL without query or fragment matches an htu verbatim.
  const entry = { raw: normalized === raw ? raw : undefined, normalized }
  if (expectedUrls.size >= 16) expectedUrls.clear()
  expectedUrls.set(raw, entry)
  return entry
}

/** RFC 9449 §4.3 points 1-2: one `DPoP` header field holding one compact JWS. */
function parseDpopHeader(header: DpopProofInput['header']): string {
  const values = typeof header === 'string' ? [header] : (header ?? [])
  if (values.length === 0 || values[0] === '') throw invalid('DPoP proof is missing')
  // Headers#get joins repeated fields with ", "; a compact JWS has no comma.
  if (values.length > 1 || values[0]?.includes(',')) throw invalid('more than one DPoP header was sent')
  const proof = values[0]?.trim() ?? ''
  if (proof.length > MAX_PROOF_LENGTH || !COMPACT_JWS.test(proof)) throw invalid('DPoP proof is not a compact JWS')
  return proof
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * RFC 9449 §4.3 point 6: the signature verifies with the header's key (RFC 7515 §5.2, the header
 * checked and the key imported by `proofKey`); the payload is a JSON object.
 */
async function verifySignature(proof: string, key: ProofKey, verify: VerifyFunction | undefined): Promise<JWTPayload> {
  const first = proof.indexOf('.')
  const last = proof.lastIndexOf('.')
  let valid: boolean
  try {
    const signature = base64url.decode(proof.slice(last + 1)) as Uint8Array<ArrayBuffer>
    const input = encoder.encode(proof.slice(0, last))
    valid = await (verify ? verify(input, signature) : crypto.subtle.verify(key.params, key.key, signature, input))
  } catch (cause) {
    throw invalid('DPoP proof could not be verified', cause)
  }
  if (!valid) throw invalid('DPoP proof signature is invalid')
  let payload: unknown
  try {
    payload = JSON.parse(decoder.decode(base64url.decode(proof.slice(first + 1, last))))
  } catch (cause) {
    throw invalid('DPoP proof payload is not JSON', cause)
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw invalid('DPoP proof payload is not a JSON object')
  }
  return payload as JWTPayload
}

/** RFC 9449 §4.3 point 12: `ath` is base64url(SHA-256(access token)), compared exactly. */
async function checkAth(ath: unknown, accessToken: string, hash: Sha256): Promise<void> {
  if (typeof ath !== 'string') throw invalid('DPoP proof "ath" is missing')
  if (!timingSafeEqual(ath, await accessTokenHash(accessToken, hash))) {
    throw invalid('DPoP proof "ath" does not match the access token')
  }
}

/** RFC 9449 §4.3 point 10, §8, §9: a missing or stale nonce → use_dpop_nonce with a fresh one. */
async function checkNonce(nonce: unknown, input: DpopProofInput): Promise<string | undefined> {
  if (nonce !== undefined && (typeof nonce !== 'string' || nonce === '' || nonce.length > MAX_NONCE_LENGTH)) {
    throw invalid('DPoP proof "nonce" is invalid')
  }
  const { nonces } = input
  if (!nonces) return nonce
  const requireNonce = input.requireNonce ?? true
  if (nonce === undefined && !requireNonce) return undefined
  if (nonce !== undefined && (await nonces.check(nonce))) return nonce
  const description = nonce === undefined ? 'a DPoP nonce is required' : 'the DPoP nonce is invalid or has expired'
  throw new OAuthError('use_dpop_nonce', description, { headers: { 'dpop-nonce': await nonces.current() } })
}

/**
 * RFC 9449 §4.3 point 9 with RFC 3986 §6.2.2 and §6.2.3 normalisation: WHATWG parsing lower-cases
 * scheme and host, drops default ports and dot segments; percent-encodings of unreserved characters
 * are decoded and the others upper-cased. Query and fragment are dropped. Undefined if unusable.
 */
function normalizeHtu(value: string | URL): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return undefined
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '') {
    return undefined
  }
  const path = url.pathname.replace(/%[0-9A-Fa-f]{2}/g, (encoded) => {
    const char = String.fromCharCode(Number.parseInt(encoded.slice(1), 16))
    return UNRESERVED.test(char) ? char : encoded.toUpperCase()
  })
  return `${url.protocol}//${url.host}${path}`
}
