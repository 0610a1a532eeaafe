/**
 * @module tokens
 * Access tokens (RFC 9068), ID tokens, PKCE, user codes and the verified-token cache. This index
 * is what the rest of the code imports; nothing outside the folder imports its other files.
 */
export {
  type AccessTokenClaims,
  type ClientTokenJson,
  clientTokenJson,
  issueAccessToken,
  type IssueAccessTokenInput,
  looksLikeJwt,
  type TokenActor,
  verifyAccessToken,
} from './access_token.ts'
export { issueIdToken, type IssueIdTokenInput } from './id_token.ts'
export { checkCodeVerifier, isValidChallenge } from './pkce.ts'
export { formatUserCode, generateUserCode, normalizeUserCode } from './user_code.ts'
export { createVerifiedTokenCache, type VerifiedTokenCache } from './verified_cache.ts'
