/**
 * @module crypto
 * Primitives over WebCrypto and jose: random opaque values, SHA-256, compact JWS, signing
 * algorithms. This index is what the rest of the code imports; nothing outside the folder imports
 * its other files.
 */
export { SIGNING_ALGS, type SigningAlgorithm, signingAlgorithms } from './algorithms.ts'
export {
  type DpopVerifier,
  headerSegment,
  isAscii,
  type JwsSigner,
  type PayloadJson,
  signCompact,
  type SignerKey,
  type SignFunction,
  signJwt,
  type VerifyFunction,
} from './compact_jws.ts'
export { randomToken, sha256, timingSafeEqual } from './opaque.ts'
