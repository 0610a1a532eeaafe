/**
 * @module endpoints/registration
 * Dynamic client registration (RFC 7591) at POST /connect/register, and its management (RFC 7592)
 * at /connect/register/{client_id}: GET reads, PUT replaces, DELETE removes, each authorized by the
 * registration access token returned once at registration (stored only as its SHA-256).
 * Checks, in order:
 * - the initial access token, when configured (401 when missing or wrong; wrong ones are counted
 *   against the source address like failed client authentications)
 * - the per-address cap (`maxPerAddressPerHour`): every registration attempt counts (429 beyond)
 * - the body is a JSON object (else invalid_client_metadata)
 * - redirect URIs: https, http only on a loopback host, or a private-use scheme; never a fragment
 *   (else invalid_redirect_uri)
 * - the other metadata (else invalid_client_metadata); `grant_types` and `scope` are cut to what
 *   the option allows, unknown members are ignored (RFC 7591 §2)
 * Error descriptions name the field, never its value.
 */
import { isLoopback } from '../config.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { bearerToken, mediaType, noStoreJson, readText } from '../http.ts'
import { Permissions, scopePermission } from '../permissions.ts'
import { metaOf } from '../request_meta.ts'
import { generateSecret } from '../clients.ts'
import { addressBucket } from '../networks.ts'
import { hashSecret, verifySecret } from '../secrets.ts'
import type { ClientMetadata, ClientRecord } from '../storage/types.ts'
import { type Limiter, type ThrottleRule, attemptRules, storeLimiter, throttledAfter } from '../throttle.ts'
import { randomToken, timingSafeEqual } from '../tokens/opaque.ts'
import type { RequestMeta } from '../events.ts'

/** The `token_endpoint_auth_method` values a registered client may use. */
export const REGISTRATION_AUTH_METHODS: readonly string[] = ['none', 'client_secret_basic', 'client_secret_post']

/** Schemes a redirect URI never uses (they run code, read files or are not navigations). */
const FORBIDDEN_SCHEMES = new Set([
  'javascript',
  'data',
  'vbscript',
  'file',
  'blob',
  'about',
  'filesystem',
  'ws',
  'wss',
])
const MAX_URI = 2000
const MAX_REDIRECT_URIS = 20
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses.
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]|\p{Cs}/u

function badMetadata(description: string): OAuthError {
  return new OAuthError('invalid_client_metadata', description)
}

function badRedirect(description: string): OAuthError {
  return new OAuthError('invalid_redirect_uri', description)
}

/**
 * Checks one redirect URI (RFC 7591 §2, RFC 8252 §7, RFC 9700 §2.6): an absolute https URI, http
 * only on a loopback host, or a private-use scheme (`com.example.app:/cb`); no fragment.
 */
export function checkRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_URI || UNSAFE_TEXT.test(value)) {
    throw badRedirect(`redirect_uris must hold URIs of at most ${MAX_URI} characters`)
  }
  if (value.includes('#')) throw badRedirect('redirect_uris must not contain a fragment')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badRedirect('redirect_uris must hold absolute URIs')
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase()
  if (url.username !== '' || url.password !== '') throw badRedirect('redirect_uris must not contain user information')
  if (scheme === 'http' && !isLoopback(url.hostname)) {
    throw badRedirect('redirect_uris must use https (http only for loopback hosts)')
  }
  if (FORBIDDEN_SCHEMES.has(scheme)) throw badRedirect('redirect_uris uses a scheme that is not allowed')
  if (scheme === 'https' && url.hostname === '') throw badRedirect('redirect_uris must hold absolute URIs')
  return value
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
}

/**
 * Validates RFC 7591 §2 metadata and fills in defaults: `token_endpoint_auth_method`
 * `client_secret_basic`, `grant_types` `authorization_code`, `response_types` `code`, `scope`
 * every allowed scope. `grant_types` and `scope` are cut to what the policy allows (RFC 7591 §2:
 * the server may replace requested values); unknown members are ignored.
 */
export function parseClientMetadata(body: unknown, policy: RegistrationPolicy): ClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badMetadata('the body must be a JSON object of client metadata')
  }
  const input = body as Record<string, unknown>
  const method = input.token_endpoint_auth_method ?? 'client_secret_basic'
  if (typeof method !== 'string' || !REGISTRATION_AUTH_METHODS.includes(method)) {
    throw badMetadata('token_endpoint_auth_method must be none, client_secret_basic or client_secret_post')
  }
  const requestedGrants =
    input.grant_types === undefined ? ['authorization_code'] : stringArray('grant_types', input.grant_types, 10)
  const grantTypes = requestedGrants.filter(
    (grant) =>
      policy.grantTypes.includes(grant) &&
      // A public client holds no secret: client_credentials would be anyone's token.
      !(grant === 'client_credentials' && method === 'none'),
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

  let redirectUris: string[] = []
  if (input.redirect_uris !== undefined) {
    if (!Array.isArray(input.redirect_uris) || input.redirect_uris.length > MAX_REDIRECT_URIS) {
      throw badRedirect(`redirect_uris must be an array of at most ${MAX_REDIRECT_URIS} URIs`)
    }
    redirectUris = [...new Set(input.redirect_uris.map(checkRedirectUri))]
  }
  if (code && redirectUris.length === 0) throw badRedirect('redirect_uris is required for authorization_code')

  let scopes = [...policy.scopes]
  if (input.scope !== undefined) {
    if (typeof input.scope !== 'string' || input.scope.length > 2000) throw badMetadata('scope must be a string')
    const requested = input.scope.split(' ').filter((scope) => scope !== '')
    scopes = scopes.filter((scope) => requested.includes(scope))
    if (scopes.length === 0) throw badMetadata('scope contains no scope this service allows')
  }

  const metadata: ClientMetadata = {
    redirect_uris: redirectUris,
    token_endpoint_auth_method: method,
    grant_types: grantTypes,
    response_types: responseTypes,
    scope: scopes.join(' '),
  }
  if (input.client_name !== undefined) {
    const name = input.client_name
    if (typeof name !== 'string' || name.trim() === '' || name.length > 200 || UNSAFE_TEXT.test(name)) {
      throw badMetadata('client_name must be a string of 1 to 200 printable characters')
    }
    metadata.client_name = name
  }
  if (input.client_uri !== undefined) metadata.client_uri = checkWebUrl('client_uri', input.client_uri)
  if (input.logo_uri !== undefined) metadata.logo_uri = checkWebUrl('logo_uri', input.logo_uri)
  return metadata
}

/**
 * The permissions of a self-registered client: the authorization and token endpoints, revocation,
 * a `gt:` per grant type, `rst:code` with the code flow, and a `scp:` per scope.
 */
export function permissionsOf(metadata: ClientMetadata): string[] {
  const permissions: string[] = [Permissions.Endpoints.Token, Permissions.Endpoints.Revocation]
  if (metadata.grant_types.includes('authorization_code')) {
    permissions.push(Permissions.Endpoints.Authorization, Permissions.ResponseTypes.Code)
  }
  for (const grant of metadata.grant_types) permissions.push(`gt:${grant}`)
  for (const scope of (metadata.scope ?? '').split(' ')) if (scope !== '') permissions.push(scopePermission(scope))
  return permissions
}

/** The client fields that follow from its metadata (a dynamic client always asks consent and uses PKCE). */
function clientFields(metadata: ClientMetadata, clientId: string) {
  return {
    displayName: metadata.client_name ?? clientId,
    permissions: permissionsOf(metadata),
    redirectUris: metadata.redirect_uris,
    postLogoutRedirectUris: [],
    consentType: 'explicit' as const,
    allowPlainPkce: false,
    requirePkce: true,
  }
}

/** Creates the handlers of the registration endpoint and of the RFC 7592 management URIs. */
export function createRegistration(ctx: Context): {
  register(request: Request): Promise<Response>
  manage(request: Request): Promise<Response>
  /** The path prefix (below the host) of the management URIs: `{issuer path}/connect/register/`. */
  managementPrefix: string
} {
  const settings = ctx.config.dynamicClientRegistration
  if (!settings) throw new TypeError('dynamic client registration is not configured')
  for (const scope of settings.scopes) {
    if (!ctx.scopes.get(scope)) {
      throw new TypeError(`invalid token service options\ndynamicClientRegistration.scopes: unknown scope ${scope}`)
    }
  }
  const policy: RegistrationPolicy = { scopes: settings.scopes, grantTypes: settings.grantTypes }
  const capLimiter: Limiter = ctx.throttle?.limiter ?? storeLimiter(ctx.store)
  const managementPrefix = `${new URL(ctx.urls.registration).pathname}/`
  const initialTokenHash =
    settings.initialAccessToken === undefined ? undefined : ctx.sha256(settings.initialAccessToken)
  let lastPrune = Number.NEGATIVE_INFINITY

  /** Failed-token rules: the address counter of client authentication (shared with it). */
  async function abuseRules(address: string | undefined): Promise<readonly ThrottleRule[]> {
    if (!ctx.throttle || ctx.config.throttle === false) return []
    const { clientAuthentication, window } = ctx.config.throttle
    return (await attemptRules('client', 'registration', address, clientAuthentication, window)).address
  }

  async function refuseIfThrottled(meta: RequestMeta, rules: readonly ThrottleRule[], clientId?: string) {
    if (!ctx.throttle || rules.length === 0) return
    const wait = await ctx.throttle.limiter.retryAfter(rules, ctx.now())
    if (wait <= 0) return
    ctx.emit(meta, { type: 'client.registration_failed', reason: 'throttled', ...(clientId ? { clientId } : {}) })
    throw new OAuthError('invalid_request', 'too many failed requests; retry later', throttledAfter(wait))
  }

  /** Checks a bearer token against a stored SHA-256 (constant time); counts a wrong one. */
  async function checkToken(
    request: Request,
    meta: RequestMeta,
    expectedHash: string | Promise<string> | undefined,
    reason: 'invalid_initial_access_token' | 'invalid_registration_access_token',
    clientId?: string,
  ): Promise<void> {
    const rules = await abuseRules(meta.address)
    await refuseIfThrottled(meta, rules, clientId)
    const header = request.headers.get('authorization')
    const token = bearerToken(header)
    const event = { type: 'client.registration_failed' as const, reason, ...(clientId ? { clientId } : {}) }
    if (token === undefined) {
      ctx.emit(meta, event)
      throw new OAuthError('invalid_token', 'a bearer token is required', {
        challenge: 'Bearer',
        challengeError: header !== null && header.trim() !== '',
      })
    }
    const presented = await ctx.sha256(token)
    const expected = expectedHash === undefined ? undefined : await expectedHash
    if (expected !== undefined && timingSafeEqual(presented, expected)) return
    ctx.emit(meta, event)
    if (ctx.throttle && rules.length > 0) await ctx.throttle.limiter.fail(rules, ctx.now())
    throw new OAuthError('invalid_token', 'the token is not valid here', { challenge: 'Bearer' })
  }

  async function readMetadata(request: Request, meta: RequestMeta, clientId?: string): Promise<unknown> {
    const fail = (description: string): never => {
      ctx.emit(meta, {
        type: 'client.registration_failed',
        reason: 'invalid_metadata',
        ...(clientId ? { clientId } : {}),
      })
      throw badMetadata(description)
    }
    if (mediaType(request.headers.get('content-type') ?? '') !== 'application/json') {
      fail('the body must be application/json')
    }
    const text = await readText(request, ctx.config.limits.maxBodyBytes, ctx.config.limits.trustContentLength)
    try {
      return JSON.parse(text)
    } catch {
      return fail('the body is not valid JSON')
    }
  }

  function parse(body: unknown, meta: RequestMeta, clientId?: string): ClientMetadata {
    try {
      return parseClientMetadata(body, policy)
    } catch (err) {
      ctx.emit(meta, {
        type: 'client.registration_failed',
        reason: 'invalid_metadata',
        ...(clientId ? { clientId } : {}),
      })
      throw err
    }
  }

  function information(record: ClientRecord, issued: { secret?: string; accessToken?: string } = {}) {
    const metadata = record.registration?.metadata
    return {
      client_id: record.clientId,
      client_id_issued_at: record.createdAt,
      ...(issued.secret !== undefined ? { client_secret: issued.secret, client_secret_expires_at: 0 } : {}),
      ...(issued.accessToken !== undefined ? { registration_access_token: issued.accessToken } : {}),
      registration_client_uri: `${ctx.urls.registration}/${encodeURIComponent(record.clientId)}`,
      ...metadata,
    }
  }

  /** Prunes unused dynamic clients in the background, at most once an hour per instance. */
  function maybePrune(): void {
    if (settings?.pruneUnusedAfter === false) return
    const at = ctx.now()
    if (at - lastPrune < 3600) return
    lastPrune = at
    ctx.clients.pruneDynamic().catch((err: unknown) =>
      ctx.logger.warn('pruning unused dynamic clients failed', {
        error: err instanceof Error ? err.name : typeof err,
      }),
    )
  }

  async function register(request: Request): Promise<Response> {
    const meta = metaOf(request)
    if (initialTokenHash !== undefined)
      await checkToken(request, meta, initialTokenHash, 'invalid_initial_access_token')
    const bucket = meta.address === undefined ? 'unknown' : addressBucket(meta.address)
    const cap: ThrottleRule[] = [
      { key: `registration-address:${bucket}`, limit: settings?.maxPerAddressPerHour ?? 20, window: 3600 },
    ]
    const now = ctx.now()
    const wait = await capLimiter.retryAfter(cap, now, { fresh: true })
    if (wait > 0) {
      ctx.emit(meta, { type: 'client.registration_failed', reason: 'too_many_registrations' })
      throw new OAuthError(
        'invalid_request',
        'too many registrations from this address; retry later',
        throttledAfter(wait),
      )
    }
    await capLimiter.fail(cap, now)
    const metadata = parse(await readMetadata(request, meta), meta)

    const clientId = randomToken(18)
    const accessToken = randomToken(32)
    const secret = metadata.token_endpoint_auth_method === 'none' ? undefined : generateSecret()
    const record: ClientRecord = {
      clientId,
      secrets:
        secret === undefined
          ? []
          : [{ hash: await hashSecret(secret, ctx.config.secretHashIterations), createdAt: ctx.now() }],
      ...clientFields(metadata, clientId),
      lifetimes: {},
      registration: { kind: 'dynamic', metadata, accessTokenHash: await ctx.sha256(accessToken) },
      createdAt: ctx.now(),
      updatedAt: ctx.now(),
    }
    if (!(await ctx.store.clients.insert(record))) throw new Error('generated client id already exists')
    ctx.clients.forget(clientId)
    ctx.emit(meta, {
      type: 'client.registered',
      clientId,
      authMethod: metadata.token_endpoint_auth_method,
      grantTypes: metadata.grant_types,
      scope: metadata.scope ?? '',
    })
    maybePrune()
    return noStoreJson(information(record, { accessToken, ...(secret !== undefined ? { secret } : {}) }), 201)
  }

  /** The dynamic client a management request names, once its registration access token checked out. */
  async function authorized(request: Request, meta: RequestMeta): Promise<ClientRecord> {
    const pathname = new URL(request.url).pathname
    let clientId: string | undefined
    try {
      const rest = pathname.startsWith(managementPrefix) ? pathname.slice(managementPrefix.length) : ''
      clientId = rest === '' || rest.includes('/') ? undefined : decodeURIComponent(rest)
    } catch {
      clientId = undefined
    }
    const record = clientId === undefined ? undefined : await ctx.store.clients.get(clientId)
    // RFC 7592 §2.1: an unknown client is 401 too, so ids cannot be probed.
    const hash = record?.registration?.kind === 'dynamic' ? record.registration.accessTokenHash : undefined
    await checkToken(request, meta, hash, 'invalid_registration_access_token', hash ? clientId : undefined)
    return record as ClientRecord
  }

  async function manage(request: Request): Promise<Response> {
    const meta = metaOf(request)
    const existing = await authorized(request, meta)
    const clientId = existing.clientId
    if (request.method === 'GET') return noStoreJson(information(existing))
    if (request.method === 'DELETE') {
      await ctx.store.clients.delete(clientId)
      ctx.clients.forget(clientId)
      ctx.emit(meta, { type: 'client.registration_deleted', clientId })
      return new Response(null, { status: 204, headers: { 'cache-control': 'no-store', pragma: 'no-cache' } })
    }
    // PUT (RFC 7592 §2.2): the body replaces the metadata; omitted fields take their defaults.
    const body = await readMetadata(request, meta, clientId)
    const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
    if (input.client_id !== clientId) {
      ctx.emit(meta, { type: 'client.registration_failed', reason: 'invalid_metadata', clientId })
      throw badMetadata('client_id must be the id of the client being updated')
    }
    const metadata = parse(body, meta, clientId)
    const wasPublic = existing.secrets.length === 0
    if (wasPublic !== (metadata.token_endpoint_auth_method === 'none')) {
      ctx.emit(meta, { type: 'client.registration_failed', reason: 'invalid_metadata', clientId })
      throw badMetadata('token_endpoint_auth_method cannot change between none and a secret')
    }
    if (input.client_secret !== undefined) {
      const secret = input.client_secret
      const matches =
        typeof secret === 'string' &&
        (await Promise.all(existing.secrets.map((record) => verifySecret(secret, record.hash)))).includes(true)
      if (!matches) {
        ctx.emit(meta, { type: 'client.registration_failed', reason: 'invalid_metadata', clientId })
        throw badMetadata('client_secret does not match the client secret')
      }
    }
    const registration = existing.registration ?? { kind: 'dynamic' as const, metadata }
    const next: ClientRecord = {
      ...existing,
      ...clientFields(metadata, clientId),
      registration: { ...registration, metadata },
      updatedAt: ctx.now(),
    }
    if (!(await ctx.store.clients.update(next, existing))) {
      throw new OAuthError('invalid_request', 'the client changed meanwhile; retry', { status: 409 })
    }
    ctx.clients.forget(clientId)
    ctx.emit(meta, { type: 'client.registration_updated', clientId })
    return noStoreJson(information(next))
  }

  return { register, manage, managementPrefix }
}
