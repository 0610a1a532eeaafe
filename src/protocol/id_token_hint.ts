/**
 * @module protocol/id_token_hint
 * Validates an `id_token_hint` (Core §3.1.2.1, RP-Initiated Logout §2): an ID token this issuer
 * signed with a published key. Expired hints are accepted (they identify, they do not authorize);
 * `alg: none` and foreign keys are not.
 */
import { type JWTPayload, decodeProtectedHeader, errors, jwtVerify } from 'jose'
import type { Context } from '../context.ts'
import { looksLikeJwt } from '../tokens/index.ts'

export interface IdTokenHintClaims extends JWTPayload {
  sub: string
  aud: string | string[]
  sid?: string
}

export async function verifyIdTokenHint(token: string, ctx: Context): Promise<IdTokenHintClaims | undefined> {
  if (!looksLikeJwt(token)) return undefined
  let kid: string | undefined
  try {
    const header = decodeProtectedHeader(token)
    // Access tokens are signed by the same keyring: an at+jwt is not an ID token.
    if (header.typ === 'at+jwt') return undefined
    kid = header.kid
  } catch {
    return undefined
  }
  const found = await ctx.keyring.verificationKey(kid)
  if (!found) return undefined
  try {
    const { payload } = await jwtVerify(token, found.key, {
      issuer: ctx.config.issuer,
      algorithms: [found.alg],
      currentDate: new Date(ctx.now() * 1000),
      clockTolerance: 10 * 365 * 86400,
      requiredClaims: ['sub', 'aud'],
    })
    return payload as IdTokenHintClaims
  } catch (err) {
    if (err instanceof errors.JOSEError) return undefined
    throw err
  }
}
