/**
 * @module grants
 * The token endpoint's grants, one module each, and the issuing they share. This index is what the
 * rest of the code imports; nothing outside the folder imports its other files.
 */
export { authorizationCode } from './authorization_code.ts'
export { clientCredentials } from './client_credentials.ts'
export { CIBA, ciba } from './ciba.ts'
export { deviceCode } from './device_code.ts'
export { scopedClaims } from './issue.ts'
export { JWT_BEARER, jwtBearer } from './jwt_bearer.ts'
export { refreshToken } from './refresh_token.ts'
export { tokenExchange } from './token_exchange.ts'
export { type Grant, PLAIN_ACCESS_TOKEN, type TokenResponse } from './types.ts'
