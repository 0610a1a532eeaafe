/**
 * @module tokens/pkce
 * Proof Key for Code Exchange (RFC 7636).
 */
import { OAuthError } from '../errors.ts'
import { sha256, timingSafeEqual } from '../crypto/index.ts'

/** RFC 7636 §4.1: 43 to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~". */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

export type ChallengeMethod = 'S256' | 'plain'

/** RFC 7636 §4.2: a challenge has the verifier's syntax (S256 gives 43 characters). */
export function isValidChallenge(challenge: string): boolean {
  return VERIFIER.test(challenge)
}

/**
 * Checks a code_verifier against the challenge bound to the code (RFC 7636 §4.6):
 * - a challenge was bound and no verifier sent → invalid_grant (§4.6)
 * - a verifier sent but no challenge bound → invalid_grant (RFC 9700 §4.8.2, downgrade)
 * - malformed verifier → invalid_grant
 * - BASE64URL(SHA-256(verifier)) (or the verifier itself for plain) must equal the challenge
 */
export async function checkCodeVerifier(
  verifier: string | undefined,
  challenge: string | undefined,
  method: ChallengeMethod | undefined,
  digest: (value: string) => string | Promise<string> = sha256,
): Promise<void> {
  if (challenge === undefined) {
    if (verifier !== undefined) {
      throw new OAuthError('invalid_grant', 'code_verifier sent but no code_challenge was used')
    }
    return
  }
  if (verifier === undefined) throw new OAuthError('invalid_grant', 'code_verifier is required')
  if (!VERIFIER.test(verifier)) throw new OAuthError('invalid_grant', 'code_verifier is malformed')
  const computed = method === 'plain' ? verifier : await digest(verifier)
  if (!timingSafeEqual(computed, challenge)) {
    throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge')
  }
}
