/**
 * @module grants
 * The token endpoint's grants, one module each, and the issuing they share.
 * What the rest of the code uses of this folder: nothing outside it imports its other files.
 */
export { authorizationCode } from './authorization_code.ts'
export { clientCredentials } from './client_credentials.ts'
export { deviceCode } from './device_code.ts'
export { scopedClaims } from './issue.ts'
export { refreshToken } from './refresh_token.ts'
export { tokenExchange } from './token_exchange.ts'
export type { Grant } from './types.ts'
