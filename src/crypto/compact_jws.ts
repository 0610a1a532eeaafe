/**
 * @module crypto/compact_jws
 * JWTs signed either by jose (WebCrypto: asynchronous, a thread-pool hop on Node) or, when the
 * host injected a `signer` (see `nodeSigner` in adapters/node.ts), by a raw signature function,
 * synchronous or batched by the runtime. Both produce the same compact JWS (RFC 7515 §7.1):
 * base64url(JSON header) "." base64url(JSON payload) "." base64url(signature), with the header and
 * payload serialised by `JSON.stringify` exactly as jose does.
 */
import { type CryptoKey, type JWK, SignJWT, base64url } from 'jose'
import { base64urlBytes } from './base64url.ts'

/**
 * Signs a JWS signing input (the ASCII bytes of `header.payload`) and returns the raw JWS
 * signature (RFC 7518 §3): for ECDSA the IEEE P1363 concatenation r || s, not DER. Synchronous,
 * or a promise (a runtime that batches signatures, like `nodeSigner`). The input bytes are only
 * valid during the call (they may be a view of a reused buffer): a signer that signs later copies
 * them first.
 */
export type SignFunction = (signingInput: Uint8Array) => Uint8Array | Promise<Uint8Array>

/** A private signing key as the service hands it to a `JwsSigner`. */
export interface SignerKey {
  alg: string
  kid: string
  /** The private JWK (RFC 7517), with `kid`, `alg` and `use` members. */
  privateJwk: Readonly<Record<string, unknown>>
}

/**
 * A factory the service calls once per signing key: a signature function for that key, or
 * undefined to sign with jose (WebCrypto) instead.
 */
export type JwsSigner = (key: SignerKey) => SignFunction | undefined

/** The key a token is signed with: jose's CryptoKey, and the injected signature function if any. */
export interface JwtSigningKey {
  alg: string
  kid: string
  key: CryptoKey
  sign?: SignFunction
}

const encoder = new TextEncoder()

/** base64url(JSON header), the first segment of a compact JWS. */
export function headerSegment(header: Record<string, unknown>): string {
  return base64urlText(JSON.stringify(header))
}

/**
 * UTF-8 bytes of `text` in a buffer reused from call to call when they fit: every token would
 * otherwise allocate two short-lived ArrayBuffers, which the young-generation GC sweeps one by
 * one. Callers use the bytes before their next call (everything here is synchronous).
 */
const scratch = new Uint8Array(16_384)
function utf8(text: string): Uint8Array {
  const { read, written } = encoder.encodeInto(text, scratch)
  return read === text.length ? scratch.subarray(0, written) : encoder.encode(text)
}

const NON_ASCII = /[\u0080-\uffff]/

/** Whether `text` is ASCII, so its UTF-8 bytes are its characters (see `PayloadJson`). */
export function isAscii(text: string): boolean {
  return !NON_ASCII.test(text)
}

/**
 * base64url without padding (RFC 7515 §2) of the UTF-8 bytes of `text`. ASCII text, as the JSON
 * of claims usually is, is its own byte string and goes straight to the platform's `btoa`; jose's
 * encoder (TextEncoder, then bytes to a string, then `btoa` where the runtime has no native
 * base64) takes the rest.
 */
export function base64urlText(text: string): string {
  if (NON_ASCII.test(text)) return base64url.encode(utf8(text))
  return asciiBase64url(text)
}

/** base64url without padding of ASCII text: `btoa`, its padding cut by length, two characters swapped. */
function asciiBase64url(text: string): string {
  const base64 = btoa(text)
  const padding = (3 - (text.length % 3)) % 3
  return (padding === 0 ? base64 : base64.slice(0, -padding)).replaceAll('+', '-').replaceAll('/', '_')
}

/**
 * A JWT payload already serialised by its caller, exactly as `JSON.stringify(payload)` would
 * write it, and whether that text is ASCII: an issuer that builds the same payload again and
 * again fills a skeleton made once by JSON.stringify instead (#44 item 4).
 */
export interface PayloadJson {
  json: string
  ascii: boolean
}

/**
 * A compact JWS of `payload` under the encoded header `segment`, signed by `sign`: a string when
 * `sign` answers synchronously, else a promise.
 */
export function signCompact(
  segment: string,
  payload: Record<string, unknown>,
  sign: SignFunction,
  text?: PayloadJson,
): string | Promise<string> {
  const encoded =
    text === undefined
      ? base64urlText(JSON.stringify(payload))
      : text.ascii
        ? asciiBase64url(text.json)
        : base64urlText(text.json)
  const input = `${segment}.${encoded}`
  const signature = sign(utf8(input))
  if (signature instanceof Uint8Array) return `${input}.${base64urlBytes(signature)}`
  return signature.then((bytes) => `${input}.${base64urlBytes(bytes)}`)
}

/** Encoded headers per signing key and `typ`: a key signs with the same few headers all its life. */
const segments = new WeakMap<JwtSigningKey, Map<string, string>>()

function cachedHeaderSegment(key: JwtSigningKey, typ: string): string {
  let byTyp = segments.get(key)
  if (!byTyp) {
    byTyp = new Map()
    segments.set(key, byTyp)
  }
  let segment = byTyp.get(typ)
  if (segment === undefined) {
    segment = headerSegment({ alg: key.alg, kid: key.kid, typ })
    byTyp.set(typ, segment)
  }
  return segment
}

/**
 * Signs a JWT with header { alg, kid, typ }: a string when the key's signature function answers
 * synchronously, else a promise (a batching signature function, or jose). `text`: the payload's
 * JSON if the caller has it (see `PayloadJson`); jose serialises the payload itself.
 */
export function signJwt(
  payload: Record<string, unknown>,
  typ: string,
  key: JwtSigningKey,
  text?: PayloadJson,
): string | Promise<string> {
  if (key.sign) return signCompact(cachedHeaderSegment(key, typ), payload, key.sign, text)
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ }).sign(key.key)
}

/**
 * Checks a JWS signature (RFC 7515 §5.2) over the ASCII bytes of `header.payload`; ECDSA
 * signatures are raw r || s (RFC 7518 §3.4). Synchronous, or a promise (a runtime that batches).
 * Both arrays are made for this call and never reused by the caller, so a later check may keep them.
 */
export type VerifyFunction = (signingInput: Uint8Array, signature: Uint8Array) => boolean | Promise<boolean>

/**
 * A factory the service may be given (the counterpart of `JwsSigner`): a signature check for a
 * proof key with the runtime's own crypto, made once per key, or undefined to use WebCrypto, which
 * on Node costs a thread-pool round trip per proof.
 */
export type DpopVerifier = (key: { alg: string; jwk: JWK }) => VerifyFunction | undefined
