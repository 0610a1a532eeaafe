/**
 * @module tokens/verified_cache
 * Remembers access tokens whose signature already verified, until they expire, so introspection
 * and userinfo skip the signature check on repeat calls. Only the pure part is cached: whether the
 * token is revoked is asked of the store on every call. Bounded; the oldest entries go first.
 */
import type { AccessTokenClaims } from './access_token.ts'

export function createVerifiedTokenCache(options: { max: number }) {
  const entries = new Map<string, AccessTokenClaims>()
  return {
    /** Claims of a token verified earlier that has not expired at `now`. */
    get(token: string, now: number): AccessTokenClaims | undefined {
      const claims = entries.get(token)
      if (claims === undefined) return undefined
      if (claims.exp <= now) {
        entries.delete(token)
        return undefined
      }
      return claims
    },
    set(token: string, claims: AccessTokenClaims): void {
      if (options.max <= 0) return
      if (entries.size >= options.max) {
        const oldest = entries.keys().next().value
        if (oldest !== undefined) entries.delete(oldest)
      }
      entries.set(token, claims)
    },
  }
}

export type VerifiedTokenCache = ReturnType<typeof createVerifiedTokenCache>
