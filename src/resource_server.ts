/**
 * @module resource_server
 * The other side of the wire: an API that accepts Gatehouse's access tokens. Reads the bearer
 * token from the Authorization header (RFC 6750 §2.1), verifies it as an RFC 9068 JWT access token
 * against the issuer's published keys, checks scopes, and answers failures as RFC 6750 §3 errors.
 *
 * Keys come from the issuer's `jwks_uri` (OpenID Connect Discovery, or given) through jose's
 * `createRemoteJWKSet`: cached, and fetched again when a token names an unknown `kid` (rotation)
 * once the cooldown since the last fetch has passed.
 *
 * Revocation: a JWT is verified locally, so by itself this helper cannot know that a token was
 * revoked (at the revocation endpoint, by refresh-token reuse, by logout) before it expires. With
 * the `introspection` option it also asks the authorization server (RFC 7662) and refuses a token
 * that is no longer active, reusing each answer for `cacheTtl` seconds (default 5).
 *
 * Discovery by clients (RFC 9728): with the `resource` option the helper serves the protected
 * resource metadata at `/.well-known/oauth-protected-resource` + the resource's path, names it in
 * every challenge (`resource_metadata`), and requires the resource in the token's `aud`. This is
 * how MCP clients find the authorization server of an MCP server.
 */
import { type JWTVerifyGetKey, createRemoteJWKSet, customFetch, errors, jwtVerify } from 'jose'
import {
  type IntrospectionOptions,
  IntrospectionFailedError,
  createIntrospectionCheck,
} from './resource_introspection.ts'
import type { AccessTokenClaims } from './tokens/access_token.ts'

export type { IntrospectionOptions } from './resource_introspection.ts'
export type { AccessTokenClaims } from './tokens/access_token.ts'

/** A fetch function (the global `fetch` fits). */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>

/** Asymmetric JWS algorithms a resource server may accept. */
const KNOWN_ALGS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA', 'Ed25519']

/** The algorithms Gatehouse signs with. */
const DEFAULT_ALGS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA']

/** RFC 6749 §3.3 scope-token. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** The options of {@link createResourceServer}. */
export interface ResourceServerOptions {
  /** The issuer identifier, compared byte for byte with discovery's `issuer` and the token's `iss`. */
  issuer: string
  /**
   * This API's identifier: the token's `aud` must be or contain it (RFC 9068 §4). Gatehouse puts
   * the audience of each API scope there (by default the scope's name). Required unless `resource`
   * is given: without either a token meant for another API would get in. With both, `aud` must
   * contain one of them (an API moving from a plain audience to its resource URL).
   */
  audience?: string
  /**
   * This API's resource identifier (RFC 9728 §1.2, RFC 8707): an absolute `https:` URL without a
   * fragment, e.g. `https://mcp.example.com/mcp`, byte for byte as clients send it in `resource`.
   * When given, the token's `aud` must contain it (it is the audience unless `audience` is also
   * given), the helper serves its RFC 9728 metadata at {@link ResourceServer.metadataPath}, and
   * every 401 and 403 challenge carries `resource_metadata` (and `scope`, when scopes are required).
   */
  resource?: string
  /**
   * RFC 9728 `scopes_supported`: the scopes a client can request for this resource (MCP clients
   * request them all when a challenge names none). Default: `requiredScopes` (omitted when empty).
   */
  scopesSupported?: readonly string[]
  /** RFC 9728 `resource_name`: a human-readable name of the resource. */
  resourceName?: string
  /** RFC 9728 `resource_documentation`: a URL of human-readable documentation for developers. */
  resourceDocumentation?: string
  /** The JWKS URL; default: `jwks_uri` from `<issuer>/.well-known/openid-configuration`. */
  jwksUri?: string
  /** Scopes every request must carry (403 insufficient_scope otherwise). */
  requiredScopes?: readonly string[]
  /** Accepted `alg` values. Default ES256, ES384, RS256, PS256, EdDSA; only asymmetric ones. */
  algorithms?: readonly string[]
  /** Seconds of clock skew allowed for `exp`, `nbf` and `iat`. Default 5. */
  clockTolerance?: number
  /** The `realm` of the `WWW-Authenticate` challenge. Default: `audience`. */
  realm?: string
  /** Fetch used for discovery and the JWKS. Default: the global `fetch`. */
  fetch?: FetchFunction
  /** Allow `http:` URLs for the issuer and the JWKS (local development and tests only). */
  allowInsecureRequests?: boolean
  /** Seconds after a JWKS fetch before an unknown `kid` may fetch it again. Default 30. */
  jwksCooldown?: number
  /** Seconds the JWKS is used before it is fetched again anyway. Default 600. */
  jwksCacheMaxAge?: number
  /** Seconds to wait for discovery or the JWKS. Default 5. */
  timeout?: number
  /** The clock (epoch seconds), for tests. Default: the system clock. */
  now?: () => number
  /**
   * Also ask the issuer's introspection endpoint (RFC 7662) whether each token is still active,
   * so a revoked token is refused within `cacheTtl` seconds (default 5) instead of working until
   * it expires. Without it, verification is local only: **a revoked JWT keeps working until its
   * `exp`** (keep access tokens short-lived then). The client must be confidential, hold
   * `ept:introspection`, and be one of the token audiences (register it with the API's audience
   * as its id, e.g. `api1`). An endpoint that cannot answer refuses the token (503 from `protect`).
   */
  introspection?: IntrospectionOptions
}

/** A verified access token. */
export interface AuthenticatedRequest {
  /** The access token as sent. */
  token: string
  /** Its claims, checked: iss, sub, aud, exp, iat, jti, client_id and scope are present and typed. */
  claims: AccessTokenClaims
  /** The token's scopes (its `scope` claim split on spaces). */
  scopes: string[]
  /**
   * Whom the token represents: `client` for a client-credentials token (it carries
   * `gty: "client_credentials"`; its `sub` is the client id), `user` for an end-user's token.
   * Tell them apart by this, never by comparing `sub` with `client_id`.
   */
  subjectType: 'client' | 'user'
}

/** The RFC 6750 §3.1 error codes. */
export type BearerErrorCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope'

/** A refused request: the `response` to send back, and why (for logs). */
export interface RefusedRequest {
  /** Always `false`: the request is refused. */
  ok: false
  /**
   * The RFC 6750 error code; `undefined` when the request carried no bearer token at all (the
   * host may serve it anonymously instead of sending `response`).
   */
  error: BearerErrorCode | undefined
  /** Why, in words; never contains the token. */
  description: string
  /** 400, 401 or 403 with `WWW-Authenticate` (401, 403), a JSON body and `Cache-Control: no-store`. */
  response: Response
}

/** What {@link ResourceServer.verify} resolves: the verified token, or why the request is refused. */
export type VerifyResult = ({ ok: true } & AuthenticatedRequest) | RefusedRequest

/**
 * RFC 9728 §2 OAuth 2.0 Protected Resource Metadata, as served by the helper.
 * @see https://www.rfc-editor.org/rfc/rfc9728#section-2
 */
export type ProtectedResourceMetadata = {
  /** The resource identifier (the `resource` option, as given). */
  resource: string
  /** The issuers whose tokens this resource accepts: the `issuer` option. */
  authorization_servers: string[]
  /** The scopes a client can request for this resource. */
  scopes_supported?: string[]
  /** How the token may be sent: `header` only (RFC 6750 §2.1). */
  bearer_methods_supported: string[]
  /** A human-readable name of the resource. */
  resource_name?: string
  /** Human-readable documentation for developers. */
  resource_documentation?: string
}

/** RFC 9728 §3.1: the well-known URI suffix of protected resource metadata. */
const WELL_KNOWN = '/.well-known/oauth-protected-resource'

/** Per-call options of {@link ResourceServer.verify} and {@link ResourceServer.protect}. */
export interface VerifyOptions {
  /** Scopes this call needs, in addition to `requiredScopes`. */
  scopes?: readonly string[]
}

/**
 * The issuer's metadata or keys could not be fetched (network error, timeout, non-200, a document
 * that does not match the issuer). Not the caller's fault: answer 503, not 401.
 */
export class IssuerUnavailableError extends Error {
  /** `IssuerUnavailableError`. */
  override name = 'IssuerUnavailableError'
}

class Refusal {
  readonly status: 400 | 401 | 403
  readonly error: BearerErrorCode | undefined
  readonly description: string
  /** For insufficient_scope: the scopes the request needs. */
  readonly scope: string | undefined

  constructor(status: 400 | 401 | 403, error: BearerErrorCode | undefined, description: string, scope?: string) {
    this.status = status
    this.error = error
    this.description = description
    this.scope = scope
  }
}

/** A quoted-string of text that is safe in a header and an error description (RFC 6750 §3). */
function quoted(value: string): string {
  return `"${value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?')}"`
}

function seconds(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`${name}: must be a number of seconds ≥ 0`)
  }
  return value
}

function checkScopes(name: string, scopes: readonly string[] | undefined): string[] {
  if (scopes === undefined) return []
  if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s))) {
    throw new TypeError(`${name}: must be an array of scope tokens`)
  }
  return [...scopes]
}

function checkUrl(name: string, value: string, allowHttp: boolean): URL {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new TypeError(`${name}: must be an absolute URL`)
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    throw new TypeError(`${name}: must be an https: URL (allowInsecureRequests permits http:)`)
  }
  return url
}

function optionalString(name: string, value: string | undefined): string | undefined {
  if (value !== undefined && (typeof value !== 'string' || value === '')) {
    throw new TypeError(`${name}: must be a non-empty string`)
  }
  return value
}

/** A checked resource identifier and where its metadata lives. */
interface ResourceLocation {
  /** The identifier as given (clients send it verbatim in `resource`; it is compared with `aud`). */
  identifier: string
  /** `/.well-known/oauth-protected-resource` + the resource's path. */
  metadataPath: string
  /** The absolute metadata URL, named in `resource_metadata`. */
  metadataUrl: string
}

/**
 * RFC 9728 §3.1: the metadata URL inserts the well-known suffix between the host and the path
 * (a lone `/` path dropped); the query, if any, stays at the end.
 */
function checkResource(value: string, allowHttp: boolean): ResourceLocation {
  if (typeof value !== 'string') throw new TypeError('resource: must be a string')
  const url = checkUrl('resource', value, allowHttp)
  // RFC 8707 §2: an absolute URI without a fragment.
  if (url.hash !== '' || value.includes('#')) throw new TypeError('resource: must not have a fragment')
  if (url.username !== '' || url.password !== '') throw new TypeError('resource: must not have user info')
  const metadataPath = `${WELL_KNOWN}${url.pathname === '/' ? '' : url.pathname}`
  return { identifier: value, metadataPath, metadataUrl: `${url.origin}${metadataPath}${url.search}` }
}

/** The pathname of a request URL, relative ones included (some frameworks). */
function pathnameOf(requestUrl: string): string {
  try {
    return new URL(requestUrl, 'http://localhost').pathname
  } catch {
    return ''
  }
}

/** Paths compared without a trailing slash (clients strip it before inserting the well-known suffix). */
function samePath(a: string, b: string): boolean {
  const trim = (path: string) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)
  return trim(a) === trim(b)
}

/** Headers of the public metadata document: any origin may read it, caches may keep it 5 minutes. */
function metadataHeaders(extra: Record<string, string>): Headers {
  return new Headers({
    'access-control-allow-origin': '*',
    'cache-control': 'public, max-age=300',
    ...extra,
  })
}

/** The bearer token of a request, or a refusal (RFC 6750 §2.1; §2.3 query tokens are not accepted). */
function readBearer(request: Request): string | Refusal {
  const header = request.headers.get('authorization')
  let inQuery = false
  try {
    inQuery = new URL(request.url).searchParams.has('access_token')
  } catch {
    // a relative URL (some frameworks): no query to look at
  }
  if (inQuery) {
    return header !== null
      ? new Refusal(400, 'invalid_request', 'send the access token in one place only')
      : new Refusal(400, 'invalid_request', 'send the access token in the Authorization header, not in the URL')
  }
  if (header === null || header.trim() === '') return new Refusal(401, undefined, 'an access token is required')
  const scheme = /^\s*([^\s,]+)/.exec(header)?.[1] ?? ''
  // Another scheme (Basic, DPoP…) is an authentication method this API does not support (§3.1).
  if (scheme.toLowerCase() !== 'bearer') return new Refusal(401, undefined, 'an access token is required')
  const match = /^\s*Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header)
  if (!match) return new Refusal(400, 'invalid_request', 'the Authorization header is not a valid Bearer credential')
  return match[1] as string
}

/** A fixed description for a failed verification (never echoing the token or its claims). */
function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the access token has expired'
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'iss':
        return 'the access token was issued by another issuer'
      case 'aud':
        return 'the access token is not meant for this API'
      case 'nbf':
        return 'the access token is not valid yet'
      case 'iat':
        return 'the access token has an invalid issue time'
      case 'typ':
        return 'the token is not a JWT access token (typ at+jwt, RFC 9068)'
      default:
        return 'the access token lacks a required claim'
    }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the access token signature is invalid'
  if (err instanceof errors.JWKSNoMatchingKey) return 'the access token is signed by an unknown key'
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the access token is signed with an algorithm that is not allowed'
  return 'the access token is invalid'
}

/** What every challenge of one resource server carries besides the error. */
interface ChallengeSettings {
  realm: string | undefined
  /**
   * RFC 9728 §5.1: the metadata URL, when the `resource` option is given. Its 401s then name the
   * scopes the request needs too (RFC 6750 §3 `scope`), which MCP clients request.
   */
  resourceMetadata: string | undefined
}

function refusedResponse(refusal: Refusal, challenge: ChallengeSettings, required: readonly string[]): Response {
  const headers = new Headers({ 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache' })
  if (refusal.status !== 400) {
    const params: string[] = []
    if (challenge.realm !== undefined) params.push(`realm=${quoted(challenge.realm)}`)
    // RFC 9728 §5.1: a client discovers the authorization server from here.
    if (challenge.resourceMetadata !== undefined) params.push(`resource_metadata=${quoted(challenge.resourceMetadata)}`)
    // RFC 6750 §3.1: no error code when the request carried no token.
    if (refusal.error !== undefined) {
      params.push(`error=${quoted(refusal.error)}`, `error_description=${quoted(refusal.description)}`)
    }
    const scope =
      refusal.scope ??
      (challenge.resourceMetadata !== undefined && required.length > 0 ? required.join(' ') : undefined)
    if (scope !== undefined) params.push(`scope=${quoted(scope)}`)
    headers.set('www-authenticate', params.length > 0 ? `Bearer ${params.join(', ')}` : 'Bearer')
  }
  const body = {
    // The same body as Gatehouse's own UserInfo endpoint; only the challenge omits the code (§3.1).
    error: refusal.error ?? 'invalid_token',
    error_description: refusal.description.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?'),
  }
  return new Response(JSON.stringify(body), { status: refusal.status, headers })
}

/**
 * Creates a verifier for the access tokens of one issuer, for one API.
 *
 * `verify` resolves `{ ok: true, claims, scopes, token }` for a good token and
 * `{ ok: false, error, description, response }` for anything the caller sent wrong: 400
 * `invalid_request` (malformed header, token in the URL), 401 without an error code (no token),
 * 401 `invalid_token` (bad signature, unknown key, wrong `typ`, issuer or audience, expired), 403
 * `insufficient_scope`. It rejects with {@link IssuerUnavailableError} only when the issuer's
 * metadata or keys cannot be fetched.
 *
 * @example
 * import { createResourceServer } from 'gatehouse/resource-server'
 *
 * const api = createResourceServer({ issuer: 'https://id.example.com', audience: 'api1' })
 *
 * export async function GET(request: Request): Promise<Response> {
 *   const auth = await api.verify(request, { scopes: ['api1'] })
 *   if (!auth.ok) return auth.response
 *   return Response.json({ hello: auth.claims.sub, client: auth.claims.client_id })
 * }
 *
 * // or wrap a handler:
 * export const POST = api.protect((request, { claims }) => Response.json({ sub: claims.sub }), {
 *   scopes: ['api1.write'],
 * })
 *
 * @example
 * // An MCP server (RFC 9728): tokens must name the resource in `aud`; one `protect` wrapper
 * // also serves GET /.well-known/oauth-protected-resource/mcp, and its 401s name that URL.
 * const mcp = createResourceServer({
 *   issuer: 'https://id.example.com',
 *   resource: 'https://mcp.example.com/mcp',
 *   requiredScopes: ['mcp:tools'],
 * })
 * export const handler = mcp.protect((request, auth) => handleMcp(request, auth))
 */
export function createResourceServer(options: ResourceServerOptions): ResourceServer {
  const allowHttp = options.allowInsecureRequests === true
  if (typeof options.issuer !== 'string') throw new TypeError('issuer: must be a string')
  const issuerUrl = checkUrl('issuer', options.issuer, allowHttp)
  const issuer = options.issuer
  const resource = options.resource !== undefined ? checkResource(options.resource, allowHttp) : undefined
  if (options.audience !== undefined || resource === undefined) {
    if (typeof options.audience !== 'string' || options.audience === '') {
      throw new TypeError('audience: must be a non-empty string (RFC 9068 §4: the API checks aud), or give resource')
    }
  }
  const audience = options.audience
  // RFC 9728 §1.2 / RFC 8707: a token for this resource names it in aud.
  const audiences = [...new Set([audience, resource?.identifier].filter((a) => a !== undefined))]
  const givenJwksUri = options.jwksUri !== undefined ? checkUrl('jwksUri', options.jwksUri, allowHttp) : undefined
  const requiredScopes = checkScopes('requiredScopes', options.requiredScopes)
  const algorithms = options.algorithms !== undefined ? [...options.algorithms] : DEFAULT_ALGS
  if (algorithms.length === 0 || !algorithms.every((alg) => KNOWN_ALGS.includes(alg))) {
    throw new TypeError(`algorithms: must be a non-empty list of ${KNOWN_ALGS.join(', ')}`)
  }
  const clockTolerance = seconds('clockTolerance', options.clockTolerance, 5)
  const cooldown = seconds('jwksCooldown', options.jwksCooldown, 30)
  const cacheMaxAge = seconds('jwksCacheMaxAge', options.jwksCacheMaxAge, 600)
  const timeout = seconds('timeout', options.timeout, 5)
  const realm = options.realm ?? audience ?? resource?.identifier
  const scopesSupported =
    options.scopesSupported !== undefined ? checkScopes('scopesSupported', options.scopesSupported) : requiredScopes
  const resourceName = optionalString('resourceName', options.resourceName)
  const resourceDocumentation = options.resourceDocumentation
  if (resourceDocumentation !== undefined) checkUrl('resourceDocumentation', resourceDocumentation, true)
  const challenge: ChallengeSettings = { realm, resourceMetadata: resource?.metadataUrl }
  const fetchImpl: FetchFunction = options.fetch ?? ((url, init) => fetch(url, init))
  const now = options.now
  const introspect = options.introspection ? introspectionCheck(options.introspection) : undefined

  function introspectionCheck(given: IntrospectionOptions): (token: string, exp: number) => Promise<boolean> {
    if (typeof given !== 'object' || given === null) throw new TypeError('introspection: must be an object')
    if (typeof given.clientId !== 'string' || given.clientId === '') {
      throw new TypeError('introspection.clientId: must be a non-empty string')
    }
    if (typeof given.clientSecret !== 'string' || given.clientSecret === '') {
      throw new TypeError('introspection.clientSecret: must be a non-empty string')
    }
    const endpoint =
      given.endpoint !== undefined ? checkUrl('introspection.endpoint', given.endpoint, allowHttp) : undefined
    const cacheMax = given.cacheMax ?? 10_000
    if (!Number.isSafeInteger(cacheMax) || cacheMax < 1) throw new TypeError('introspection.cacheMax: must be ≥ 1')
    return createIntrospectionCheck({
      endpoint: endpoint ? async () => endpoint : discoverIntrospectionEndpoint,
      clientId: given.clientId,
      clientSecret: given.clientSecret,
      cacheTtl: seconds('introspection.cacheTtl', given.cacheTtl, 5),
      cacheMax,
      fetch: fetchImpl,
      timeout,
      now: () => now?.() ?? Math.floor(Date.now() / 1000),
    })
  }

  let metadataPromise: Promise<Record<string, unknown>> | undefined
  /** The issuer's discovery document, fetched once (a failure is not kept: the next call retries). */
  function issuerMetadata(): Promise<Record<string, unknown>> {
    if (!metadataPromise) {
      const pending = fetchMetadata()
      metadataPromise = pending
      pending.catch(() => {
        if (metadataPromise === pending) metadataPromise = undefined
      })
    }
    return metadataPromise
  }

  async function discoverIntrospectionEndpoint(): Promise<URL> {
    const record = await issuerMetadata()
    if (typeof record.introspection_endpoint !== 'string') {
      throw new IssuerUnavailableError("the issuer's metadata has no introspection_endpoint")
    }
    try {
      return checkUrl('introspection_endpoint', record.introspection_endpoint, allowHttp)
    } catch (cause) {
      throw new IssuerUnavailableError("the issuer's metadata has an unusable introspection_endpoint", { cause })
    }
  }

  async function discoverJwksUri(): Promise<URL> {
    const record = await issuerMetadata()
    if (typeof record.jwks_uri !== 'string') throw new IssuerUnavailableError("the issuer's metadata has no jwks_uri")
    try {
      return checkUrl('jwks_uri', record.jwks_uri, allowHttp)
    } catch (cause) {
      throw new IssuerUnavailableError("the issuer's metadata has an unusable jwks_uri", { cause })
    }
  }

  async function fetchMetadata(): Promise<Record<string, unknown>> {
    const base = issuerUrl.href.endsWith('/') ? issuerUrl.href.slice(0, -1) : issuerUrl.href
    const url = `${base}/.well-known/openid-configuration`
    let metadata: unknown
    try {
      const response = await fetchImpl(url, {
        headers: { accept: 'application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(timeout * 1000),
      })
      if (response.status !== 200) {
        await response.body?.cancel()
        throw new Error(`discovery answered ${response.status}`)
      }
      metadata = await response.json()
    } catch (cause) {
      throw new IssuerUnavailableError(`the issuer's metadata could not be fetched from ${url}`, { cause })
    }
    const record = (typeof metadata === 'object' && metadata !== null ? metadata : {}) as Record<string, unknown>
    if (record.issuer !== issuer) {
      throw new IssuerUnavailableError(`the metadata at ${url} is for another issuer`)
    }
    return record
  }

  let keySetPromise: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined
  function keySet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (!keySetPromise) {
      const pending = (givenJwksUri ? Promise.resolve(givenJwksUri) : discoverJwksUri()).then((jwksUrl) =>
        createRemoteJWKSet(jwksUrl, {
          cooldownDuration: cooldown * 1000,
          cacheMaxAge: cacheMaxAge * 1000,
          timeoutDuration: timeout * 1000,
          [customFetch]: (url, init) => fetchImpl(url, init),
        }),
      )
      keySetPromise = pending
      // A failed discovery is not kept: the next request tries again.
      pending.catch(() => {
        if (keySetPromise === pending) keySetPromise = undefined
      })
    }
    return keySetPromise
  }

  const getKey: JWTVerifyGetKey = async (header, token) => {
    const jwks = await keySet()
    try {
      return await jwks(header, token)
    } catch (err) {
      // No or several keys for the token's kid/alg, or a key jose cannot use: the token's problem.
      if (
        err instanceof errors.JWKSNoMatchingKey ||
        err instanceof errors.JWKSMultipleMatchingKeys ||
        err instanceof errors.JOSENotSupported
      ) {
        throw err
      }
      throw new IssuerUnavailableError("the issuer's keys could not be fetched", { cause: err })
    }
  }

  async function check(token: string, required: string[]): Promise<AuthenticatedRequest | Refusal> {
    if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) {
      return new Refusal(401, 'invalid_token', 'the access token is not a JWT')
    }
    let claims: AccessTokenClaims
    try {
      const current = now?.()
      const { payload } = await jwtVerify(token, getKey, {
        issuer,
        audience: audiences,
        typ: 'at+jwt',
        algorithms,
        clockTolerance,
        ...(current !== undefined ? { currentDate: new Date(current * 1000) } : {}),
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id'],
      })
      claims = payload as AccessTokenClaims
    } catch (err) {
      if (err instanceof errors.JOSEError) return new Refusal(401, 'invalid_token', reason(err))
      throw err
    }
    // RFC 9068 §2.2 types that jose does not check; `scope` is what Gatehouse always sends.
    if (
      typeof claims.sub !== 'string' ||
      typeof claims.client_id !== 'string' ||
      typeof claims.jti !== 'string' ||
      typeof claims.scope !== 'string'
    ) {
      return new Refusal(401, 'invalid_token', 'the access token lacks a required claim')
    }
    const current = now?.() ?? Date.now() / 1000
    if (claims.iat > current + clockTolerance) {
      return new Refusal(401, 'invalid_token', 'the access token was issued in the future')
    }
    const scopes = claims.scope.split(' ').filter((s) => s !== '')
    const missing = required.filter((s) => !scopes.includes(s))
    if (missing.length > 0) {
      return new Refusal(
        403,
        'insufficient_scope',
        `the access token lacks the scope ${missing.join(' ')}`,
        required.join(' '),
      )
    }
    if (introspect && !(await stillActive(token, claims.exp))) {
      return new Refusal(401, 'invalid_token', 'the access token has been revoked')
    }
    // Client-credentials tokens say so (gty); an end-user's token always has auth_time.
    const subjectType = claims.gty === 'client_credentials' || claims.auth_time === undefined ? 'client' : 'user'
    return { token, claims, scopes, subjectType }
  }

  async function stillActive(token: string, exp: number): Promise<boolean> {
    try {
      return await (introspect as NonNullable<typeof introspect>)(token, exp)
    } catch (err) {
      if (err instanceof IntrospectionFailedError) throw new IssuerUnavailableError(err.message, { cause: err })
      throw err
    }
  }

  async function verify(input: Request | string, verifyOptions: VerifyOptions = {}): Promise<VerifyResult> {
    const required = [...new Set([...requiredScopes, ...checkScopes('scopes', verifyOptions.scopes)])]
    let outcome: AuthenticatedRequest | Refusal
    if (typeof input === 'string') {
      outcome = input === '' ? new Refusal(401, undefined, 'an access token is required') : await check(input, required)
    } else {
      const token = readBearer(input)
      outcome = token instanceof Refusal ? token : await check(token, required)
    }
    if (outcome instanceof Refusal) {
      return {
        ok: false,
        error: outcome.error,
        description: outcome.description,
        response: refusedResponse(outcome, challenge, required),
      }
    }
    return { ok: true, ...outcome }
  }

  function requireResource(): NonNullable<typeof resource> {
    if (resource === undefined) throw new TypeError('resource: required for protected resource metadata (RFC 9728)')
    return resource
  }

  function metadata(): ProtectedResourceMetadata {
    const { identifier } = requireResource()
    return {
      resource: identifier,
      authorization_servers: [issuer],
      ...(scopesSupported.length > 0 ? { scopes_supported: [...scopesSupported] } : {}),
      bearer_methods_supported: ['header'],
      ...(resourceName !== undefined ? { resource_name: resourceName } : {}),
      ...(resourceDocumentation !== undefined ? { resource_documentation: resourceDocumentation } : {}),
    }
  }

  function metadataResponse(): Response {
    return new Response(JSON.stringify(metadata()), {
      status: 200,
      headers: metadataHeaders({ 'content-type': 'application/json' }),
    })
  }

  function metadataHandler(request: Request): Response {
    const { metadataPath } = requireResource()
    if (!samePath(pathnameOf(request.url), metadataPath)) {
      return new Response(null, { status: 404, headers: metadataHeaders({ 'cache-control': 'no-store' }) })
    }
    if (request.method === 'GET') return metadataResponse()
    if (request.method === 'HEAD') {
      return new Response(null, { status: 200, headers: metadataHeaders({ 'content-type': 'application/json' }) })
    }
    if (request.method === 'OPTIONS') {
      // CORS preflight: MCP clients in browsers send `MCP-Protocol-Version`.
      const headers = metadataHeaders({ 'access-control-allow-methods': 'GET, HEAD, OPTIONS' })
      const requested = request.headers.get('access-control-request-headers')
      if (requested !== null && /^[\w-]+(?:\s*,\s*[\w-]+)*$/.test(requested.trim())) {
        headers.set('access-control-allow-headers', requested.trim())
      }
      headers.set('access-control-max-age', '86400')
      return new Response(null, { status: 204, headers })
    }
    return new Response(null, { status: 405, headers: metadataHeaders({ allow: 'GET, HEAD, OPTIONS' }) })
  }

  return {
    issuer,
    resource: resource?.identifier,
    metadataPath: resource?.metadataPath,
    metadataUrl: resource?.metadataUrl,
    metadata,
    metadataResponse,
    metadataHandler,
    verify,
    protect(
      handler: (request: Request, auth: AuthenticatedRequest) => Response | Promise<Response>,
      protectOptions: VerifyOptions = {},
    ): (request: Request) => Promise<Response> {
      checkScopes('scopes', protectOptions.scopes)
      return async (request) => {
        // The metadata is public: a wrapper around the whole host serves it without a token.
        if (resource !== undefined && samePath(pathnameOf(request.url), resource.metadataPath)) {
          return metadataHandler(request)
        }
        let result: VerifyResult
        try {
          result = await verify(request, protectOptions)
        } catch (err) {
          // The issuer's keys could not be read: the request may be fine, so 503, never a 500.
          if (!(err instanceof IssuerUnavailableError)) throw err
          return Response.json(
            { error: 'temporarily_unavailable', error_description: 'the token cannot be verified right now' },
            { status: 503, headers: { 'cache-control': 'no-store', 'retry-after': '5' } },
          )
        }
        if (!result.ok) return result.response
        const { ok: _, ...auth } = result
        return handler(request, auth)
      }
    },
  }
}

/** What {@link createResourceServer} returns. */
export interface ResourceServer {
  /** The issuer, as configured. */
  readonly issuer: string
  /** The `resource` option, as given; `undefined` without it. */
  readonly resource: string | undefined
  /**
   * Where the RFC 9728 metadata is served: `/.well-known/oauth-protected-resource` + the
   * resource's path (`/.well-known/oauth-protected-resource/mcp` for `https://host/mcp`); route
   * GET, HEAD and OPTIONS requests for it to {@link ResourceServer.metadataHandler}. `undefined`
   * without `resource`.
   * @see https://www.rfc-editor.org/rfc/rfc9728#section-3.1
   */
  readonly metadataPath: string | undefined
  /** The absolute metadata URL, as named in `resource_metadata`; `undefined` without `resource`. */
  readonly metadataUrl: string | undefined
  /**
   * The RFC 9728 metadata document: `resource`, `authorization_servers` (the issuer),
   * `scopes_supported`, `bearer_methods_supported`, `resource_name`, `resource_documentation`.
   * Throws a `TypeError` without the `resource` option.
   * @see https://www.rfc-editor.org/rfc/rfc9728#section-2
   */
  metadata(): ProtectedResourceMetadata
  /**
   * The metadata as a 200 JSON response, with `Access-Control-Allow-Origin: *` and
   * `Cache-Control: public, max-age=300`. Throws a `TypeError` without the `resource` option.
   */
  metadataResponse(): Response
  /**
   * Answers requests for {@link ResourceServer.metadataPath}: GET and HEAD with the metadata,
   * OPTIONS as a CORS preflight, other methods 405, other paths 404. `protect` wrappers call it
   * themselves for that path.
   * @see https://www.rfc-editor.org/rfc/rfc9728#section-3.1
   */
  metadataHandler(request: Request): Response
  /**
   * Verifies the bearer token of a request (or a token given as a string) and the scopes it
   * needs. See {@link createResourceServer}.
   */
  verify(input: Request | string, options?: VerifyOptions): Promise<VerifyResult>
  /**
   * Wraps a handler: it runs only for requests with a good token carrying `scopes`; others get
   * the RFC 6750 error response. With `resource`, a request for {@link ResourceServer.metadataPath}
   * gets the RFC 9728 metadata instead (no token needed), so one wrapper can cover a whole host.
   */
  protect(
    handler: (request: Request, auth: AuthenticatedRequest) => Response | Promise<Response>,
    options?: VerifyOptions,
  ): (request: Request) => Promise<Response>
}
