/**
 * @module client_auth
 * Client authentication at the token, PAR, introspection and revocation endpoints (RFC 6749 §2.3, RFC 7523).
 * What the rest of the code uses of this folder: nothing outside it imports its other files.
 */
export { authenticateClient, type AuthenticatedClient, requirePermission } from './authenticate.ts'
export { ASSERTION_ALGORITHMS } from './client_assertion.ts'
