/**
 * @module client_auth
 * Client authentication at the token, PAR, introspection and revocation endpoints (RFC 6749 §2.3,
 * RFC 7523). This index is what the rest of the code imports; nothing outside the folder imports
 * its other files.
 */
export { authenticateClient, type AuthenticatedClient, requirePermission } from './authenticate.ts'
export { ASSERTION_ALGORITHMS, candidates as signatureKeyCandidates } from './client_assertion.ts'
