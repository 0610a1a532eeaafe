/**
 * @module config/scopes
 * The scopes the service knows: identity scopes (claims released at userinfo, OpenID Connect Core
 * §5.4), `offline_access` (§11), API scopes (their audience goes into access tokens, RFC 9068 §3)
 * and the service's own API scopes (Grant Management, #42 item 4: their audience is the issuer).
 */
import type { ScopeConfig } from './options.ts'
import { OAuthError } from '../errors.ts'

/** Standard claims of the OpenID Connect identity scopes (Core §5.4). */
export const STANDARD_SCOPE_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  openid: ['sub'],
  profile: [
    'name',
    'family_name',
    'given_name',
    'middle_name',
    'nickname',
    'preferred_username',
    'profile',
    'picture',
    'website',
    'gender',
    'birthdate',
    'zoneinfo',
    'locale',
    'updated_at',
  ],
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
}

/** A scope as the service uses it. */
export interface ScopeDefinition {
  name: string
  /** Identity scope: the claims it releases. */
  claims?: readonly string[]
  /** API scope: the audience it adds to access tokens. */
  audience?: string
}

/** The scopes every service knows. */
export const DEFAULT_SCOPES: readonly ScopeConfig[] = [
  'openid',
  'profile',
  'email',
  'address',
  'phone',
  'offline_access',
  'api1',
]

/**
 * The scopes of the Grant Management API (Grant Management for OAuth 2.0 §6.1), built in like
 * `offline_access`: a client gets them through `scp:` permissions and the client credentials grant.
 * They are API scopes of the service itself: their audience is the issuer.
 */
export const GRANT_MANAGEMENT_SCOPES = ['grant_management_query', 'grant_management_revoke'] as const

/**
 * Builds the scope table from the defaults plus configured scopes. With `issuer` (the service
 * always passes it), the Grant Management scopes are built in too, with the issuer as audience; a
 * configured scope of the same name does not replace them.
 */
export function createScopeRegistry(configured: readonly ScopeConfig[], issuer?: string) {
  const table = new Map<string, ScopeDefinition>()
  for (const entry of [...DEFAULT_SCOPES, ...configured]) {
    const config = typeof entry === 'string' ? { name: entry } : entry
    const standard = STANDARD_SCOPE_CLAIMS[config.name]
    const definition: ScopeDefinition = { name: config.name }
    if (config.claims ?? standard) definition.claims = config.claims ?? standard
    else if (config.name !== 'offline_access') definition.audience = config.audience ?? config.name
    table.set(config.name, definition)
  }
  if (issuer !== undefined) for (const name of GRANT_MANAGEMENT_SCOPES) table.set(name, { name, audience: issuer })
  // Core §5.4: which scopes release each claim (a claims request may ask for it only with one of them).
  const carriers = new Map<string, string[]>()
  for (const def of table.values())
    for (const claim of def.claims ?? []) carriers.set(claim, [...(carriers.get(claim) ?? []), def.name])
  return {
    get: (name: string) => table.get(name),
    names: () => [...table.keys()],
    /** Whether the scope needs an end-user (identity scopes and offline_access). */
    isUserScope(name: string): boolean {
      const def = table.get(name)
      return def !== undefined && def.audience === undefined
    },
    /** Audiences of the API scopes among `scopes`. */
    audiences(scopes: readonly string[]): string[] {
      const list: string[] = []
      for (const scope of scopes) {
        const audience = table.get(scope)?.audience
        if (audience !== undefined && !list.includes(audience)) list.push(audience)
      }
      return list
    },
    /** Claims released by the identity scopes among `scopes`. */
    claims(scopes: readonly string[]): Set<string> {
      const set = new Set<string>()
      for (const scope of scopes) for (const claim of table.get(scope)?.claims ?? []) set.add(claim)
      return set
    },
    /** The identity scopes that release `claim` (none for a claim no scope releases). */
    scopesOf(claim: string): readonly string[] {
      return carriers.get(claim) ?? []
    },
    /** Every claim some scope releases (discovery `claims_supported`). */
    allClaims(): string[] {
      const set = new Set<string>(['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'sid', 'azp', 'at_hash'])
      for (const def of table.values()) for (const claim of def.claims ?? []) set.add(claim)
      return [...set]
    },
  }
}

export type ScopeRegistry = ReturnType<typeof createScopeRegistry>

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/**
 * Parses a `scope` parameter (RFC 6749 §3.3): space-delimited, order-insensitive, case-sensitive.
 * Repeated tokens collapse; characters outside scope-token syntax or too many scopes are
 * `invalid_scope`.
 */
export function parseScope(value: string | undefined, maxScopes: number): string[] {
  if (value === undefined) return []
  const list: string[] = []
  for (const token of value.split(' ')) {
    if (token === '') continue
    if (!SCOPE_TOKEN.test(token)) throw new OAuthError('invalid_scope', 'scope contains invalid characters')
    if (!list.includes(token)) list.push(token)
  }
  if (list.length > maxScopes) throw new OAuthError('invalid_scope', `at most ${maxScopes} scopes may be requested`)
  return list
}
