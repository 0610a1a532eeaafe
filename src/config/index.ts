/**
 * @module config
 * The options of `createTokenService`: public types, valibot schemas, parsing, profiles and
 * scopes. This index is what the rest of the code imports; nothing outside the folder imports its
 * other files.
 */
export type {
  AuthorizationDetailsOptions,
  AuthorizationDetailsTypeOptions,
  StandardSchemaLike,
} from './authorization_details.ts'
export type { BackchannelLogoutOptions } from './backchannel_logout.ts'
export {
  type IdentityAssertionAudience,
  type IdentityAssertionDecision,
  type IdentityAssertionIdpOptions,
  type IdentityAssertionRequest,
  isResourceIndicator,
} from './identity_assertion_audiences.ts'
export type { CibaNotification, CibaOptions } from './ciba.ts'
export { type ConfigFile, parseConfigFile, type StoreConfig } from './file.ts'
export { HealthSchema } from './health.ts'
export { DEFAULT_GRANTS_PAGE_PATH, type GrantsPageConfig } from './grants_page.ts'
export type {
  IdentityAssertionAccountQuery,
  IdentityAssertionIssuer,
  IdentityAssertionTrustOptions,
} from './identity_assertion.ts'
export type { InteractionHook, InteractionResult, LoginResult, PendingInteraction } from './interaction_hook.ts'
export type {
  AttemptLimitOptions,
  ClientIdMetadataDocumentsOptions,
  DeviceAuthorizationLimitOptions,
  DynamicClientRegistrationOptions,
  GrantsPageOptions,
  HealthOptions,
  IdentityAssertionOptions,
  ScopeConfig,
  TokenServiceOptions,
  UserCodeLimitOptions,
} from './options.ts'
export { parseOptions } from './parse.ts'
export {
  allowsPlainPkce,
  allowsResponseMode,
  codeTtl,
  FAPI2_ALGORITHMS,
  isFapi2,
  profileRefusal,
  requiresDpop,
  requiresPkce,
  requiresPushedRequests,
} from './profile.ts'
export type { Config, IdTokenClaims, SigningAlg } from './schema.ts'
export { GRANT_MANAGEMENT_SCOPES, createScopeRegistry, parseScope, type ScopeRegistry } from './scopes.ts'
export {
  applyExchangePolicy,
  type TokenExchangeActor,
  type TokenExchangeDecision,
  type TokenExchangeOptions,
  type TokenExchangeParty,
  type TokenExchangeRequest,
  TokenTypes,
} from './token_exchange.ts'
