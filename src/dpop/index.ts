/**
 * @module dpop
 * DPoP (RFC 9449): proofs, server nonces and the checks at the token and resource endpoints. This
 * index is what the rest of the code imports; nothing outside the folder imports its other files.
 */
export { createDpopNonces, type DpopNonces } from './nonce.ts'
export { dpopNonceSecret } from './nonce_secret.ts'
export { DEFAULT_DPOP_ALGORITHMS, type DpopProof, verifyDpopProof } from './proof.ts'
export {
  checkKeyBinding,
  checkProofRequired,
  dpopAlgorithms,
  nextNonce,
  tokenRequestProof,
  verifyRequestProof,
} from './request.ts'
export { checkTokenBinding, dpopChallengeError, type PresentedToken, readAuthorization } from './resource.ts'
