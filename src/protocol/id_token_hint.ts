/**
 * @module protocol/id_token_hint
 * Validates an `id_token_hint` (Core §3.1.2.1, RP-Initiated Logout §2): an ID token this issuer
 * signed with a published key. Expired hints are accepted (they identify, they do not authorize);
 * `alg: none` and foreign keys are not.
 *
 * The keyring signs other JWTs too (access tokens `at+jwt`, back-channel logout tokens
 * `logout+jwt`): an ID token is recognised by its own explicit type (RFC 8725 §3.11), `JWT` as the
 * service signs them, and a token with an `events` claim is never one (Back-Channel Logout §2.4).
 */
import { type JWTPayload, decodeProtectedHeader, errors, jwtVerify } from 'jose'
import type { Context } from '../context.ts'
import { looksLikeJwt } from '../tokens/index.ts'

export interface IdTokenHintClaims extends JWTPayload {
  sub: string
  aud: string | string[]
  azp?: string
  sid?: string
  /** The grant the ID token was issued from (the access tokens' `gid`). */
  gid?: string
  auth_time?: number
}

/** The `typ` of the ID tokens this service signs (`JWT`; compared as RFC 7515 §4.1.9 says, case-insensitively). */
function isIdTokenType(typ: string | undefined): boolean {
  return typ !== undefined && typ.toUpperCase() === 'JWT'
}

export async function verifyIdTokenHint(token: string, ctx: Context): Promise<IdTokenHintClaims | undefined> {
  if (!looksLikeJwt(token)) return undefined
  let kid: string | undefined
  try {
    const header = decodeProtectedHeader(token)
    // Access and logout tokens are signed by the same keyring: only an ID token's type is one.
    if (!isIdTokenType(header.typ)) return undefined
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
    // Back-Channel Logout §2.4: a logout token (`events`) must never pass as an ID token.
    if (payload.events !== undefined) return undefined
    return payload as IdTokenHintClaims
  } catch (err) {
    if (err instanceof errors.JOSEError) return undefined
    throw err
  }
}
