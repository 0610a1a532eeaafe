/**
 * @module permissions
 * Permission strings carried by client registrations (OpenIddict's scheme): endpoint (`ept:`),
 * grant type (`gt:`), response type (`rst:`) and scope (`scp:`) permissions.
 */

/** Named permission constants. */
export const Permissions = {
  Endpoints: {
    Authorization: 'ept:authorization',
    Token: 'ept:token',
    Introspection: 'ept:introspection',
    Revocation: 'ept:revocation',
    Logout: 'ept:logout',
  },
  GrantTypes: {
    AuthorizationCode: 'gt:authorization_code',
    RefreshToken: 'gt:refresh_token',
    ClientCredentials: 'gt:client_credentials',
  },
  ResponseTypes: {
    Code: 'rst:code',
  },
  /** Prefix of scope permissions: `scp:` + scope name. */
  Prefixes: {
    Scope: 'scp:',
  },
} as const

/** The scope permission for a scope name, e.g. `scope('api1')` is `scp:api1`. */
export function scopePermission(scope: string): string {
  return `${Permissions.Prefixes.Scope}${scope}`
}

/** Every permission string that is not a scope permission. */
export const FIXED_PERMISSIONS: readonly string[] = [
  ...Object.values(Permissions.Endpoints),
  ...Object.values(Permissions.GrantTypes),
  ...Object.values(Permissions.ResponseTypes),
]
