/**
 * @module endpoints
 * One handler per endpoint under the issuer. This index is what the rest of the code imports;
 * nothing outside the folder imports its other files.
 */
export { handleAuthorize } from './authorize.ts'
export { handleBackchannelAuthentication } from './ciba.ts'
export { handleCibaApproval } from './ciba_approval.ts'
export { handleDeviceAuthorization } from './device_authorization.ts'
export { handleDiscovery, handleJwks, metadata } from './discovery.ts'
export { handleGrantManagement } from './grant_management.ts'
export { handleGrantsPage } from './grants_page.ts'
export { handleInteraction } from './interaction.ts'
export { handleIntrospection } from './introspection.ts'
export { endRequestSession, endSubjectSessions, handleLogout } from './logout.ts'
export { handlePushedAuthorizationRequest } from './par.ts'
export { createRegistration } from './registration.ts'
export { handleRevocation } from './revocation.ts'
export { handleToken } from './token.ts'
export { handleUserinfo } from './userinfo.ts'
export { handleVerification } from './verify.ts'
