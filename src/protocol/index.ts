/**
 * @module protocol
 * Protocol pieces shared by endpoints and grants: authorization responses, claims requests,
 * resource indicators, active tokens, ID token hints. This index is what the rest of the code
 * imports; nothing outside the folder imports its other files.
 */
export { findActiveAccessToken } from './active_token.ts'
export {
  appendQuery,
  authorizationError,
  authorizationResponse,
  redirect,
  RESPONSE_MODES,
  type ResponseMode,
} from './authorization_response.ts'
export {
  approvedClaims,
  type Display,
  isPermittedClaim,
  parseClaimsParameter,
  parseDisplay,
  permittedClaims,
  requestedClaimNames,
} from './claims_request.ts'
export {
  findGrant,
  findGrantRecord,
  type GrantClientView,
  type GrantRevoker,
  type GrantView,
  listGrants,
  revokeGrant,
  revokeGrantRecord,
  revokeGrants,
} from './grant_management.ts'
export {
  checkGrantOwner,
  type GrantManagementAction,
  type GrantManagementRequest,
  parseGrantManagement,
} from './grant_actions.ts'
export { type IdTokenHintClaims, verifyIdTokenHint } from './id_token_hint.ts'
export { sessionFamilyId } from './session_family.ts'
export {
  defaultScopesForResources,
  grantResources,
  isForUserinfo,
  markResourceBound,
  parseAudiences,
  parseResources,
  RESOURCE_PARAMETERS,
  scopesForResources,
} from './resource_indicators.ts'
export {
  canonicalDetail,
  describeAuthorizationDetails,
  MAX_AUTHORIZATION_DETAILS,
  MAX_DETAIL_DEPTH,
  narrowAuthorizationDetails,
  parseAuthorizationDetails,
} from './authorization_details.ts'
