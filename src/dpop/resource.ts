/**
 * @module dpop/resource
 * DPoP where the service is itself the protected resource (userinfo): the `Authorization` header
 * with the Bearer (RFC 6750 §2.1) or DPoP (RFC 9449 §7.1) scheme, the proof of a resource request
 * (with `ath`) and the key binding of the token, every failure a 401 with a `DPoP` challenge.
 */
import { OAuthError, type OAuthErrorCode } from '../errors.ts'
import type { AccessTokenClaims } from '../tokens/index.ts'
import { timingSafeEqual } from '../crypto/index.ts'
import type { DpopProof } from './proof.ts'
import { type DpopContext, dpopAlgorithms, verifyRequestProof } from './request.ts'

/** An access token and the scheme it came with. */
export interface PresentedToken {
  token: string
  scheme: 'Bearer' | 'DPoP'
}

/** RFC 6750 §2.1 `b64token` / RFC 9110 §11.2 `token68`; the scheme is case-insensitive (RFC 9110 §11.1). */
const AUTHORIZATION = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i

/**
 * The token of an `Authorization: Bearer …` or `Authorization: DPoP …` header; null when there
 * is no header, undefined when it is another scheme or malformed.
 */
export function readAuthorization(header: string | null): PresentedToken | null | undefined {
  if (header === null || header.trim() === '') return null
  const match = AUTHORIZATION.exec(header)
  if (!match) return undefined
  return { token: match[2] as string, scheme: match[1]?.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer' }
}

/**
 * A 401 (403 for insufficient_scope) with `WWW-Authenticate: DPoP error="…", algs="…"`
 * (RFC 9449 §7.1): `algs` lists the proof algorithms the service accepts.
 */
export function dpopChallengeError(
  code: OAuthErrorCode,
  description: string,
  ctx: DpopContext,
  options: { cause?: unknown; headers?: Record<string, string> } = {},
): OAuthError {
  return new OAuthError(code, description, {
    status: code === 'insufficient_scope' ? 403 : 401,
    challenge: 'DPoP',
    challengeParams: { algs: dpopAlgorithms(ctx.config).join(' ') },
    ...options,
  })
}

/**
 * Checks that `token` (verified, not revoked) is used as its binding demands:
 * - a DPoP-bound token (`cnf.jkt`) sent as a Bearer token → invalid_token (RFC 9449 §7.2: a
 *   resource supporting both schemes "MUST reject a DPoP-bound access token received as a bearer
 *   token")
 * - the DPoP scheme with an unbound token → invalid_token: the scheme is for DPoP-bound tokens
 *   (§7.1), and §4.3 point 12 requires the proof's key to match the key the token is bound to,
 *   which an unbound token has none of
 * - the DPoP scheme: the proof (§4.3 with `htm` the method, `htu` = `url`, `ath` the token's
 *   hash, a nonce when demanded) → invalid_dpop_proof / use_dpop_nonce with `DPoP-Nonce` (§9),
 *   then its key must be the token's: invalid_token (§7.1, §6: "MUST ensure that the public key
 *   from the DPoP proof matches the one bound to the access token")
 * Every failure is a 401 with a DPoP challenge.
 */
export async function checkTokenBinding(
  presented: PresentedToken,
  claims: AccessTokenClaims,
  request: Request,
  url: string,
  ctx: DpopContext,
): Promise<DpopProof | undefined> {
  const jkt = claims.cnf?.jkt
  if (presented.scheme === 'Bearer') {
    if (jkt === undefined) return undefined
    throw dpopChallengeError('invalid_token', 'the access token is DPoP-bound: use the DPoP scheme with a proof', ctx)
  }
  if (jkt === undefined) throw dpopChallengeError('invalid_token', 'the access token is not DPoP-bound', ctx)
  let proof: DpopProof
  try {
    proof = await verifyRequestProof(request.headers.get('dpop'), request, url, ctx, presented.token)
  } catch (err) {
    if (!(err instanceof OAuthError) || (err.code !== 'invalid_dpop_proof' && err.code !== 'use_dpop_nonce')) throw err
    // RFC 9449 §7.1, §9: a resource answers proof and nonce errors with 401 and a DPoP challenge.
    throw dpopChallengeError(err.code, err.message, ctx, {
      cause: err.cause,
      ...(err.headers ? { headers: err.headers } : {}),
    })
  }
  if (!timingSafeEqual(proof.jkt, jkt)) throw dpopChallengeError('invalid_token', 'invalid DPoP key binding', ctx)
  return proof
}
