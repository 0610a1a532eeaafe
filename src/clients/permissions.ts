/**
 * @module clients/permissions
 * Permission strings carried by client registrations (OpenIddict's scheme): endpoint (`ept:`),
 * grant type (`gt:`), response type (`rst:`) and scope (`scp:`) permissions.
 */
import { closest } from '../schema_issues.ts'

/** Named permission constants. */
export const Permissions = {
  Endpoints: {
    Authorization: 'ept:authorization',
    Token: 'ept:token',
    Introspection: 'ept:introspection',
    Revocation: 'ept:revocation',
    Logout: 'ept:logout',
    /** RFC 8628 device authorization endpoint (OpenIddict's name). */
    DeviceAuthorization: 'ept:device_authorization',
    /** OpenID CIBA backchannel authentication endpoint; confidential clients only. */
    BackchannelAuthentication: 'ept:backchannel_authentication',
  },
  GrantTypes: {
    AuthorizationCode: 'gt:authorization_code',
    RefreshToken: 'gt:refresh_token',
    ClientCredentials: 'gt:client_credentials',
    /** RFC 8693 token exchange (OpenIddict's name); confidential clients only. */
    TokenExchange: 'gt:urn:ietf:params:oauth:grant-type:token-exchange',
    /** RFC 8628 device authorization grant (OpenIddict's name); public clients may use it. */
    DeviceCode: 'gt:urn:ietf:params:oauth:grant-type:device_code',
    /** OpenID CIBA grant; confidential clients only. */
    Ciba: 'gt:urn:openid:params:grant-type:ciba',
    /** RFC 7523 JWT bearer grant with an ID-JAG (#45); public clients may use it. */
    JwtBearer: 'gt:urn:ietf:params:oauth:grant-type:jwt-bearer',
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

const FAMILIES: Record<string, string> = { 'ept:': 'endpoint', 'gt:': 'grant type', 'rst:': 'response type' }

/**
 * Why `permission` is not one: for an `ept:`, `gt:` or `rst:` one, the closest known one and the
 * whole family (`gt:` names the grant types, #27 item 13); else the forms a permission takes.
 */
export function unknownPermissionMessage(permission: string): string {
  const prefix = permission.slice(0, permission.indexOf(':') + 1)
  const family = FAMILIES[prefix]
  const guess = closest(permission, FIXED_PERMISSIONS)
  const head = `unknown permission \`${permission}\`${guess ? ` (did you mean \`${guess}\`?)` : ''}`
  if (family === undefined) return `${head}: expected ept:*, gt:*, rst:code or scp:<scope>`
  const members = FIXED_PERMISSIONS.filter((known) => known.startsWith(prefix))
  return `${head}: the ${family} permissions are ${members.join(', ')}`
}
