/**
 * @module context
 * What every endpoint receives: validated configuration, the store, keys, clients, scopes and the
 * endpoint URLs derived from the issuer (never from the request).
 */
import type { ClientKeySource, ClientRegistry } from './clients/index.ts'
import type { DpopNonces } from './dpop/index.ts'
import type { AccountProvider, UserDirectory } from './accounts/index.ts'
import type { Config, ScopeRegistry } from './config/index.ts'
import type { Emitter, Logger } from './events/index.ts'
import type { Keyring } from './keys/index.ts'
import type { AttemptRules, createVerificationCache, Limiter } from './security/index.ts'
import type { IssuedRecords, Store } from './storage/index.ts'
import type { VerifiedTokenCache } from './tokens/index.ts'

/** Paths of the endpoints relative to the issuer. */
export const PATHS = {
  authorization: '/connect/authorize',
  token: '/connect/token',
  userinfo: '/connect/userinfo',
  logout: '/connect/logout',
  introspection: '/connect/introspect',
  revocation: '/connect/revoke',
  registration: '/connect/register',
  par: '/connect/par',
  interaction: '/connect/interaction',
  deviceAuthorization: '/connect/device',
  verification: '/connect/verify',
  backchannelAuthentication: '/connect/ciba',
  cibaApproval: '/connect/ciba/approve',
  grantManagement: '/connect/grants',
  jwks: '/.well-known/jwks.json',
  openidConfiguration: '/.well-known/openid-configuration',
  oauthMetadata: '/.well-known/oauth-authorization-server',
} as const

export type Endpoint = keyof typeof PATHS

/** Absolute endpoint URLs: the issuer string followed by the path. */
export function endpointUrls(issuer: string): Record<Endpoint, string> {
  const base = issuer.endsWith('/') ? issuer.slice(0, -1) : issuer
  return Object.fromEntries(Object.entries(PATHS).map(([name, path]) => [name, base + path])) as Record<
    Endpoint,
    string
  >
}

export interface Context {
  config: Config
  store: Store
  /** Codes and refresh tokens this instance wrote: their redemption skips the store's read (#44). */
  issued: IssuedRecords
  keyring: Keyring
  clients: ClientRegistry
  scopes: ScopeRegistry
  users: UserDirectory
  accounts: AccountProvider
  secretCache: ReturnType<typeof createVerificationCache>
  /** base64url SHA-256 of a string: the storage key of a code, refresh token or session (and PKCE S256). */
  sha256(value: string): string | Promise<string>
  /** Access tokens whose signature verified, until they expire (revocation is checked apart). */
  verifiedTokens: VerifiedTokenCache
  urls: Record<Endpoint, string>
  logger: Logger
  /** Epoch seconds. */
  now(): number
  /** Whether cookies get `Secure` (https issuer). */
  secureCookies: boolean
  /** Throttling of failed attempts; undefined when turned off. */
  throttle?: {
    limiter: Limiter
    /** The rules of a client authentication / sign-in attempt (cached; see `createRulesCache`). */
    clientRules: (clientId: string, address: string | undefined) => AttemptRules | Promise<AttemptRules>
    userRules: (username: string, address: string | undefined) => AttemptRules | Promise<AttemptRules>
    /** Runs slow verifications one at a time per key (see `createExclusiveRunner`). */
    exclusive: <T>(key: string, fn: () => Promise<T>) => Promise<T>
  }
  /** Emits an audit event to the host's `onEvent` hook (no-op without one). */
  emit: Emitter
  /** The public keys of private_key_jwt clients: inline, or fetched from their `jwksUri` (cached). */
  clientKeys: ClientKeySource
  /** DPoP server nonces (RFC 9449 §8), valid on every instance. */
  dpopNonces: DpopNonces
}
