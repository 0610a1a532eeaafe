/**
 * What every benchmark server and the load generator agree on: the two clients, the end-user, the
 * redirect URI, the PKCE pair and the values of the refresh tokens seeded into the store. Runtime
 * neutral (Node, Bun and Deno import it).
 */

/** The confidential client of the client_credentials and access-token introspection scenarios. */
export const SERVICE_CLIENT = { id: 'bench-service', secret: 'bench-service-secret-0123456789' } as const

/** The confidential web client of the code, refresh and refresh-token introspection scenarios. */
export const WEB_CLIENT = {
  id: 'bench-web',
  secret: 'bench-web-secret-0123456789',
  redirectUri: 'http://127.0.0.1:8080/callback',
} as const

/** The end-user every code is issued for. */
export const USER_SUB = 'bench-user-1'

/** Scopes of the code flow: an ID token, a refresh token and an API access token. */
export const CODE_SCOPE = 'openid offline_access api1'

/** The API scope; Gatehouse gives it the audience `api1`. */
export const API_SCOPE = 'api1'

/** node-oidc-provider's resource indicator for the API (it needs one to issue JWT access tokens). */
export const API_RESOURCE = 'urn:bench:api1'

/** One PKCE S256 pair for every code (RFC 7636 Appendix B values). */
export const PKCE = {
  verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
  challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
} as const

/**
 * The value of seeded refresh token number `index`: 43 characters like a real one (256 random
 * bits in base64url), but derivable, so the load generator can present any of the million.
 */
export function seedTokenValue(index: number): string {
  return `seed_${String(index).padStart(38, '0')}`
}

/** `Authorization: Basic` for a client (RFC 6749 §2.3.1; our ids and secrets need no escaping). */
export function basicAuth(client: { id: string; secret: string }): string {
  return `Basic ${btoa(`${client.id}:${client.secret}`)}`
}

/**
 * Sign-in flow users (scenario signin_flow): one per virtual user of bench/signin_load.ts, so that
 * no two concurrent sign-ins share a username (Gatehouse verifies one password at a time per
 * username and address). The servers create this many; the driver uses at most this many.
 */
export const SIGNIN_USERS = 64
export const SIGNIN_PASSWORD = 'bench-user-password-0123456789'
export const signinUser = (index: number) => `bench-signin-${index}`
