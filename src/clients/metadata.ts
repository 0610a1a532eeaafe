/**
 * @module clients/metadata
 * RFC 7591 §2 client metadata of a dynamically registered client, checked and completed:
 * redirect URIs (https, http only on a loopback host, or a private-use scheme in reverse domain
 * name form or one the host allows; never a fragment: RFC 8252 §7, RFC 9700 §2.6), grant and response types, scope, name and URLs; the keys of a
 * `private_key_jwt` client (`jwks` of public signature keys, or an https `jwks_uri`, never both);
 * `id_token_signed_response_alg` (OpenID Connect Registration §2),
 * `post_logout_redirect_uris` (RP-Initiated Logout §3.1, by the rule of redirect URIs),
 * `require_pushed_authorization_requests` (RFC 9126 §6), `dpop_bound_access_tokens`
 * (RFC 9449 §5.2), `backchannel_logout_uri` and `backchannel_logout_session_required`
 * (Back-Channel Logout 1.0 §2.2: https on a public host, as `jwks_uri`). `grant_types` and `scope` are cut to what the service allows; error
 * descriptions name the field, never its value.
 */
import { publicSignatureKeys } from './jwks.ts'
import { detailTypesField, parseDetailTypes } from './detail_types.ts'
import { OAuthError } from '../errors.ts'
import type { SigningAlgorithm } from '../crypto/index.ts'
import { isLoopback, isPublicAddress } from '../security/index.ts'
import { Permissions, scopePermission } from './permissions.ts'
import { cibaFields, parseCibaMetadata } from './ciba_metadata.ts'
import { MAX_URI, UNSAFE_TEXT, checkRedirectUri } from './self_registered_redirects.ts'
import type { ClientMetadata, ClientRecord, PublicJwkSet } from '../storage/index.ts'

/** The `token_endpoint_auth_method` values a registered client may use. */
export const REGISTRATION_AUTH_METHODS: readonly string[] = [
  'none',
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
]

/** Client metadata as accepted, with the members beyond `ClientMetadata` this module reads. */
export interface RegisteredClientMetadata extends ClientMetadata {
  /** RFC 7591 §2: the client's public signature keys (private_key_jwt only). */
  jwks?: PublicJwkSet
  /** RFC 7591 §2: where the client publishes them (private_key_jwt only; https). */
  jwks_uri?: string
  /** OpenID Connect Registration §2: one of the algs the service signs with. */
  id_token_signed_response_alg?: string
  /** RFC 9126 §6: authorization requests must be pushed first. */
  require_pushed_authorization_requests?: boolean
  /** RFC 9449 §5.2: access tokens must be DPoP-bound. */
  dpop_bound_access_tokens?: boolean
}

const MAX_REDIRECT_URIS = 20

export function badMetadata(description: string): OAuthError {
  return new OAuthError('invalid_client_metadata', description)
}

function badRedirect(description: string): OAuthError {
  return new OAuthError('invalid_redirect_uri', description)
}

/** An https URL (http only on a loopback host) for `client_uri` / `logo_uri`. */
function checkWebUrl(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_URI || UNSAFE_TEXT.test(value)) {
    throw badMetadata(`${field} must be a URL of at most ${MAX_URI} characters`)
  }
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badMetadata(`${field} must be an absolute URL`)
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))) return value
  throw badMetadata(`${field} must be an https URL`)
}

function stringArray(field: string, value: unknown, max: number): string[] {
  if (!Array.isArray(value) || value.length > max) throw badMetadata(`${field} must be an array of strings`)
  for (const item of value) {
    if (typeof item !== 'string' || item.length > 200 || UNSAFE_TEXT.test(item)) {
      throw badMetadata(`${field} must be an array of strings`)
    }
  }
  return [...new Set(value as string[])]
}

/** What the option allows a registered client. */
export interface RegistrationPolicy {
  scopes: readonly string[]
  grantTypes: readonly string[]
  /** The algs an ID token may be signed with (`signingAlgorithms(config)`, what discovery lists). */
  idTokenAlgorithms: readonly string[]
  /** Extra private-use redirect schemes the host allows (option `dynamicClientRegistration.redirectSchemes`). */
  redirectSchemes?: ReadonlySet<string>
  /** The service's authorization details types (RFC 9396 §10): a client's list is cut to them. */
  authorizationDetailsTypes?: readonly string[]
}

/** Most keys a registered `jwks` may hold. */
const MAX_JWKS_KEYS = 20
/** The members a public key of each kty needs (RFC 7518 §6.2.1, §6.3.1; RFC 8037 §2). */
const PUBLIC_MEMBERS: Record<string, readonly string[]> = { RSA: ['n', 'e'], EC: ['crv', 'x', 'y'], OKP: ['crv', 'x'] }

/** `jwks`: a JWK set of public signature keys (RFC 7591 §2); private key material is refused. */
function parseJwks(value: unknown): PublicJwkSet {
  let keys: ReturnType<typeof publicSignatureKeys>
  try {
    keys = publicSignatureKeys(value)
  } catch (err) {
    const leaked = err instanceof OAuthError && err.message.includes('private')
    throw badMetadata(leaked ? 'jwks must hold public keys only' : 'jwks must be a JWK set')
  }
  if (keys.length === 0 || keys.length > MAX_JWKS_KEYS) {
    throw badMetadata(`jwks must hold 1 to ${MAX_JWKS_KEYS} signature keys`)
  }
  for (const key of keys) {
    const members = PUBLIC_MEMBERS[key.kty as string] ?? []
    const record = key as Record<string, unknown>
    if (members.some((member) => typeof record[member] !== 'string' || (record[member] as string).length > 2048)) {
      throw badMetadata('jwks holds a key that lacks its public members')
    }
  }
  return { keys: keys as PublicJwkSet['keys'] }
}

/**
 * `jwks_uri`, `backchannel_logout_uri`: https, no user info nor fragment, not a literal private or
 * local host (checked again at fetch time).
 */
function parsePublicHttpsUri(value: unknown, field = 'jwks_uri'): string {
  if (typeof value !== 'string' || value.length > MAX_URI || UNSAFE_TEXT.test(value) || value.includes('#')) {
    throw badMetadata(`${field} must be an https URL of at most ${MAX_URI} characters without a fragment`)
  }
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badMetadata(`${field} must be an absolute URL`)
  }
  if (url.protocol !== 'https:' || url.username !== '' || url.password !== '') {
    throw badMetadata(`${field} must be an https URL without user information`)
  }
  const host = url.hostname.toLowerCase().replace(/\.$/, '')
  if (isPublicAddress(host) === false || host === 'localhost' || host.endsWith('.localhost')) {
    throw badMetadata(`${field} must not be on a private or local address`)
  }
  return value
}

/**
 * RP-Initiated Logout 1.0 §3.1 `post_logout_redirect_uris`: by the rule of `redirect_uris` (a
 * redirect there always waits for a page naming the host: src/endpoints/logout.ts).
 */
function parsePostLogoutRedirectUris(input: Record<string, unknown>, policy: RegistrationPolicy): string[] | undefined {
  const value = input.post_logout_redirect_uris
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.length > MAX_REDIRECT_URIS) {
    throw badMetadata(`post_logout_redirect_uris must be an array of at most ${MAX_REDIRECT_URIS} URIs`)
  }
  try {
    return [...new Set(value.map((uri) => checkRedirectUri(uri, policy.redirectSchemes)))]
  } catch {
    throw badMetadata('post_logout_redirect_uris must hold URIs allowed as redirect_uris')
  }
}

/** Back-Channel Logout 1.0 §2.2: `backchannel_logout_uri` and `backchannel_logout_session_required`. */
function parseBackchannelLogout(
  input: Record<string, unknown>,
): Pick<RegisteredClientMetadata, 'backchannel_logout_uri' | 'backchannel_logout_session_required'> {
  const required = input.backchannel_logout_session_required
  if (required !== undefined && typeof required !== 'boolean') {
    throw badMetadata('backchannel_logout_session_required must be a boolean')
  }
  if (input.backchannel_logout_uri === undefined) return {}
  return {
    backchannel_logout_uri: parsePublicHttpsUri(input.backchannel_logout_uri, 'backchannel_logout_uri'),
    // §2.2: if omitted, the default value is false.
    backchannel_logout_session_required: required === true,
  }
}

/** The keys of a private_key_jwt client: exactly one of `jwks` and `jwks_uri` (RFC 7591 §2). */
function parseKeys(
  input: Record<string, unknown>,
  method: string,
): Pick<RegisteredClientMetadata, 'jwks' | 'jwks_uri'> {
  // RFC 7591 §2: jwks and jwks_uri MUST NOT both be present.
  if (input.jwks !== undefined && input.jwks_uri !== undefined) {
    throw badMetadata('jwks and jwks_uri must not both be present')
  }
  // Only private_key_jwt reads the client's keys: for any other method they are not kept.
  if (method !== 'private_key_jwt') return {}
  if (input.jwks !== undefined) return { jwks: parseJwks(input.jwks) }
  if (input.jwks_uri !== undefined) return { jwks_uri: parsePublicHttpsUri(input.jwks_uri) }
  throw badMetadata('private_key_jwt needs jwks or jwks_uri')
}

/** `id_token_signed_response_alg`, `require_pushed_authorization_requests`, `dpop_bound_access_tokens`. */
function parseSecurityMetadata(
  input: Record<string, unknown>,
  policy: RegistrationPolicy,
): Pick<
  RegisteredClientMetadata,
  'id_token_signed_response_alg' | 'require_pushed_authorization_requests' | 'dpop_bound_access_tokens'
> {
  const alg = input.id_token_signed_response_alg
  if (alg !== undefined && (typeof alg !== 'string' || !policy.idTokenAlgorithms.includes(alg))) {
    throw badMetadata('id_token_signed_response_alg must be one of id_token_signing_alg_values_supported')
  }
  for (const field of ['require_pushed_authorization_requests', 'dpop_bound_access_tokens']) {
    if (input[field] !== undefined && typeof input[field] !== 'boolean') throw badMetadata(`${field} must be a boolean`)
  }
  const par = input.require_pushed_authorization_requests as boolean | undefined
  const dpop = input.dpop_bound_access_tokens as boolean | undefined
  return {
    ...(alg !== undefined ? { id_token_signed_response_alg: alg as string } : {}),
    ...(par !== undefined ? { require_pushed_authorization_requests: par } : {}),
    ...(dpop !== undefined ? { dpop_bound_access_tokens: dpop } : {}),
  }
}

/** `grant_types` (cut to the policy) and `response_types` (RFC 7591 §2.1: they must agree). */
function parseGrants(
  input: Record<string, unknown>,
  method: string,
  policy: RegistrationPolicy,
): { grantTypes: string[]; responseTypes: string[] } {
  const requestedGrants =
    input.grant_types === undefined ? ['authorization_code'] : stringArray('grant_types', input.grant_types, 10)
  const grantTypes = requestedGrants.filter(
    (grant) =>
      policy.grantTypes.includes(grant) &&
      // A public client holds no secret: client_credentials would be anyone's token.
      !((grant === 'client_credentials' || grant === CIBA_GRANT) && method === 'none'),
  )
  if (grantTypes.length === 0) throw badMetadata('grant_types contains no grant type this service allows')
  const code = grantTypes.includes('authorization_code')
  const responseTypes =
    input.response_types === undefined ? (code ? ['code'] : []) : stringArray('response_types', input.response_types, 5)
  if (responseTypes.some((type) => type !== 'code')) throw badMetadata('response_types supports only code')
  // RFC 7591 §2.1: authorization_code goes with the code response type.
  if (code !== responseTypes.includes('code')) {
    throw badMetadata('response_types and grant_types do not match (code goes with authorization_code)')
  }
  return { grantTypes, responseTypes }
}

/** `redirect_uris` (required with the code flow) and `scope` (cut to the policy). */
function parseRedirectsAndScope(
  input: Record<string, unknown>,
  code: boolean,
  policy: RegistrationPolicy,
): { redirectUris: string[]; scope: string } {
  let redirectUris: string[] = []
  if (input.redirect_uris !== undefined) {
    if (!Array.isArray(input.redirect_uris) || input.redirect_uris.length > MAX_REDIRECT_URIS) {
      throw badRedirect(`redirect_uris must be an array of at most ${MAX_REDIRECT_URIS} URIs`)
    }
    redirectUris = [...new Set(input.redirect_uris.map((uri) => checkRedirectUri(uri, policy.redirectSchemes)))]
  }
  if (code && redirectUris.length === 0) throw badRedirect('redirect_uris is required for authorization_code')
  let scopes = [...policy.scopes]
  if (input.scope !== undefined) {
    if (typeof input.scope !== 'string' || input.scope.length > 2000) throw badMetadata('scope must be a string')
    const requested = input.scope.split(' ').filter((scope) => scope !== '')
    scopes = scopes.filter((scope) => requested.includes(scope))
    if (scopes.length === 0) throw badMetadata('scope contains no scope this service allows')
  }
  return { redirectUris, scope: scopes.join(' ') }
}

/**
 * Validates RFC 7591 §2 metadata and fills in defaults: `token_endpoint_auth_method`
 * `client_secret_basic`, `grant_types` `authorization_code`, `response_types` `code`, `scope`
 * every allowed scope. `grant_types` and `scope` are cut to what the policy allows (RFC 7591 §2:
 * the server may replace requested values); unknown members are ignored.
 */
export function parseClientMetadata(body: unknown, policy: RegistrationPolicy): RegisteredClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badMetadata('the body must be a JSON object of client metadata')
  }
  const input = body as Record<string, unknown>
  const method = input.token_endpoint_auth_method ?? 'client_secret_basic'
  if (typeof method !== 'string' || !REGISTRATION_AUTH_METHODS.includes(method)) {
    throw badMetadata(`token_endpoint_auth_method must be one of ${REGISTRATION_AUTH_METHODS.join(', ')}`)
  }
  const { grantTypes, responseTypes } = parseGrants(input, method, policy)
  const { redirectUris, scope } = parseRedirectsAndScope(input, grantTypes.includes('authorization_code'), policy)
  const metadata: RegisteredClientMetadata = {
    redirect_uris: redirectUris,
    token_endpoint_auth_method: method,
    grant_types: grantTypes,
    response_types: responseTypes,
    scope,
    ...parseKeys(input, method),
    ...parseSecurityMetadata(input, policy),
    ...parseBackchannelLogout(input),
    ...parseCibaMetadata(input, grantTypes, (value, field) => parsePublicHttpsUri(value, field)),
  }
  const postLogout = parsePostLogoutRedirectUris(input, policy)
  if (postLogout !== undefined) metadata.post_logout_redirect_uris = postLogout
  if (input.client_name !== undefined) {
    const name = input.client_name
    if (typeof name !== 'string' || name.trim() === '' || name.length > 200 || UNSAFE_TEXT.test(name)) {
      throw badMetadata('client_name must be a string of 1 to 200 printable characters')
    }
    metadata.client_name = name
  }
  if (input.client_uri !== undefined) metadata.client_uri = checkWebUrl('client_uri', input.client_uri)
  if (input.logo_uri !== undefined) metadata.logo_uri = checkWebUrl('logo_uri', input.logo_uri)
  const detailTypes = parseDetailTypes(input.authorization_details_types, policy.authorizationDetailsTypes)
  if (detailTypes !== undefined) metadata.authorization_details_types = detailTypes
  return metadata
}

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
const CIBA_GRANT = 'urn:openid:params:grant-type:ciba'

/**
 * The permissions of a self-registered client: the authorization and token endpoints, revocation,
 * logout when it registered `post_logout_redirect_uris`, a `gt:` per grant type, `rst:code` with
 * the code flow, and a `scp:` per scope.
 */
export function permissionsOf(metadata: ClientMetadata): string[] {
  const permissions: string[] = [Permissions.Endpoints.Token, Permissions.Endpoints.Revocation]
  if (metadata.grant_types.includes('authorization_code')) {
    permissions.push(Permissions.Endpoints.Authorization, Permissions.ResponseTypes.Code)
  }
  // As for a metadata document's client: RP-Initiated Logout with registered return URIs.
  if (metadata.post_logout_redirect_uris?.length) permissions.push(Permissions.Endpoints.Logout)
  // RFC 8628: the device_code grant starts at the device authorization endpoint.
  if (metadata.grant_types.includes(DEVICE_CODE_GRANT)) permissions.push(Permissions.Endpoints.DeviceAuthorization)
  if (metadata.grant_types.includes(CIBA_GRANT)) permissions.push(Permissions.Endpoints.BackchannelAuthentication)
  for (const grant of metadata.grant_types) permissions.push(`gt:${grant}`)
  for (const scope of (metadata.scope ?? '').split(' ')) if (scope !== '') permissions.push(scopePermission(scope))
  return permissions
}

/** The client record fields that follow from the metadata's keys and security settings. */
const METADATA_FIELDS = [
  'tokenEndpointAuthMethod',
  'jwks',
  'jwksUri',
  'idTokenSignedResponseAlg',
  'requirePushedAuthorizationRequests',
  'requireDpop',
  'backchannelLogoutUri',
  'backchannelLogoutSessionRequired',
  'authorizationDetailsTypes',
  'backchannelTokenDeliveryMode',
  'backchannelClientNotificationEndpoint',
] as const

type MetadataFields = (typeof METADATA_FIELDS)[number]

/** The record without the fields its metadata sets (before new metadata replaces the old, RFC 7592 §2.2). */
export function withoutMetadataFields(record: ClientRecord): ClientRecord {
  const rest: Partial<ClientRecord> = { ...record }
  for (const field of METADATA_FIELDS) delete rest[field]
  return rest as ClientRecord
}

/**
 * The client fields that follow from its metadata (a dynamic client always asks consent and uses
 * PKCE). Only private_key_jwt is recorded as the client's one method: a client with a secret may
 * use it with client_secret_basic or client_secret_post, as before.
 */
export function clientFields(
  metadata: RegisteredClientMetadata,
  clientId: string,
): Pick<
  ClientRecord,
  | 'displayName'
  | 'permissions'
  | 'redirectUris'
  | 'postLogoutRedirectUris'
  | 'consentType'
  | 'allowPlainPkce'
  | 'requirePkce'
  | MetadataFields
> {
  return {
    displayName: metadata.client_name ?? clientId,
    permissions: permissionsOf(metadata),
    redirectUris: metadata.redirect_uris,
    postLogoutRedirectUris: metadata.post_logout_redirect_uris ?? [],
    consentType: 'explicit' as const,
    allowPlainPkce: false,
    requirePkce: true,
    ...(metadata.token_endpoint_auth_method === 'private_key_jwt'
      ? { tokenEndpointAuthMethod: 'private_key_jwt' as const }
      : {}),
    ...(metadata.jwks !== undefined ? { jwks: metadata.jwks } : {}),
    ...(metadata.jwks_uri !== undefined ? { jwksUri: metadata.jwks_uri } : {}),
    ...(metadata.id_token_signed_response_alg !== undefined
      ? { idTokenSignedResponseAlg: metadata.id_token_signed_response_alg as SigningAlgorithm }
      : {}),
    ...(metadata.require_pushed_authorization_requests === true ? { requirePushedAuthorizationRequests: true } : {}),
    ...(metadata.dpop_bound_access_tokens === true ? { requireDpop: true } : {}),
    ...(metadata.backchannel_logout_uri !== undefined ? { backchannelLogoutUri: metadata.backchannel_logout_uri } : {}),
    ...(metadata.backchannel_logout_session_required === true ? { backchannelLogoutSessionRequired: true } : {}),
    ...detailTypesField(metadata.authorization_details_types),
    ...cibaFields(metadata),
  }
}
