/**
 * @module resource_server/options
 * The options of the resource-server helper (`gatehouse-oidc/resource-server`), checked once at
 * construction: a bad option throws a TypeError naming it. The resource identifier's metadata
 * location follows RFC 9728 §3.1.
 */
import { DEFAULT_DPOP_ALGORITHMS } from '../dpop/index.ts'
import type { IntrospectionOptions } from './introspection.ts'

/** A fetch function (the global `fetch` fits). */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>

/** Asymmetric JWS algorithms a resource server may accept. */
const KNOWN_ALGS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA', 'Ed25519']

/** The algorithms Gatehouse signs with. */
const DEFAULT_ALGS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA']

/** RFC 6749 §3.3 scope-token. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** RFC 9728 §3.1: the well-known URI suffix of protected resource metadata. */
const WELL_KNOWN = '/.well-known/oauth-protected-resource'

/** The options of `createResourceServer`. */
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
   * given), the helper serves its RFC 9728 metadata at `ResourceServer.metadataPath`, and
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
  /**
   * DPoP (RFC 9449 §7). Always on: a token whose claims carry `cnf.jkt` is DPoP-bound and gets in
   * only as `Authorization: DPoP <token>` with a valid `DPoP` proof of the bound key; Bearer tokens
   * are accepted too unless `dpop.required`. These options tune the proof checks.
   */
  dpop?: DpopOptions
}

/** How the helper checks DPoP proofs (RFC 9449 §4.3, §7). */
export interface DpopOptions {
  /**
   * Accept DPoP-bound tokens only: a Bearer token is refused (401 with a `DPoP` challenge alone),
   * and the RFC 9728 metadata says `dpop_bound_access_tokens_required`. Default false: both
   * schemes, but a DPoP-bound token sent as Bearer is refused either way (RFC 9449 §7.2).
   */
  required?: boolean
  /**
   * Accepted proof algorithms, named in the challenges' `algs`. Default ES256, EdDSA, Ed25519,
   * RS256, PS256, ES384; only asymmetric ones.
   */
  algorithms?: readonly string[]
  /** Seconds a proof is accepted after its `iat` (its `jti` is remembered that long). Default 300. */
  maxAge?: number
  /**
   * Records a proof (`key`) until `expiresAt` and resolves true, or false when it was recorded
   * before (a replay; RFC 9449 §11.1). Give a shared one when several instances serve the API, so a
   * proof used at one is refused at the others: a Gatehouse store's `replays.use` fits
   * (`replay: (key, expiresAt, now) => store.replays.use(key, expiresAt, now)`). Default: an
   * in-memory cache of this instance, of at most `replayCacheMax` proofs. A rejection (the store is
   * down) rejects `verify` with it: no proof is taken unchecked.
   */
  replay?: (key: string, expiresAt: number, now: number) => Promise<boolean>
  /**
   * Proofs the in-memory replay cache holds (default 100,000). Records are dropped when they expire;
   * past the limit the oldest go first, so size it above the proofs the API sees in `maxAge` seconds.
   */
  replayCacheMax?: number
  /**
   * The origin clients call this API at (`https://api.example.com`): a proof's `htu` must be it
   * plus the request's path. Default: the origin of `resource`, else the request URL's (built from
   * the Host header: behind a proxy that rewrites it, set this or `resource`).
   */
  origin?: string
  /** Server-provided nonces (RFC 9449 §9): every proof must then carry a current one. */
  nonce?: DpopNonceOptions
}

/**
 * RFC 9449 §9 nonces: stateless, valid for one to two `window`s. A proof without a current nonce is
 * refused with 401 `use_dpop_nonce` and a fresh one in the `DPoP-Nonce` header.
 */
export interface DpopNonceOptions {
  /** HMAC key of at least 16 bytes, the same on every instance of the API (or a function returning it). */
  secret: Uint8Array | (() => Uint8Array | Promise<Uint8Array>)
  /** Seconds per nonce window (default 60). */
  window?: number
}

function seconds(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`${name}: must be a number of seconds ≥ 0`)
  }
  return value
}

export function checkScopes(name: string, scopes: readonly string[] | undefined): string[] {
  if (scopes === undefined) return []
  if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s))) {
    throw new TypeError(`${name}: must be an array of scope tokens`)
  }
  return [...scopes]
}

export function checkUrl(name: string, value: string, allowHttp: boolean): URL {
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
export interface ResourceLocation {
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

/** The introspection option, checked (see `IntrospectionOptions`). */
export interface IntrospectionSettings {
  /** The given endpoint; undefined: discovered from the issuer's metadata. */
  endpoint: URL | undefined
  clientId: string
  clientSecret: string
  cacheTtl: number
  cacheMax: number
}

/** The options, checked and with their defaults. */
export interface ResourceServerSettings {
  issuer: string
  issuerUrl: URL
  allowHttp: boolean
  resource: ResourceLocation | undefined
  /** What `aud` must contain one of: the audience and the resource identifier. */
  audiences: string[]
  jwksUri: URL | undefined
  requiredScopes: string[]
  algorithms: string[]
  clockTolerance: number
  jwksCooldown: number
  jwksCacheMaxAge: number
  timeout: number
  realm: string | undefined
  scopesSupported: string[]
  resourceName: string | undefined
  resourceDocumentation: string | undefined
  fetch: FetchFunction
  now: (() => number) | undefined
  introspection: IntrospectionSettings | undefined
  dpop: DpopSettings
}

/** The dpop option, checked and with its defaults (see `DpopOptions`). */
export interface DpopSettings {
  required: boolean
  algorithms: string[]
  maxAge: number
  replay: ((key: string, expiresAt: number, now: number) => Promise<boolean>) | undefined
  replayCacheMax: number
  /** The origin `htu` is checked against (no trailing slash); undefined: the request URL's. */
  origin: string | undefined
  nonce: { secret: () => Uint8Array | Promise<Uint8Array>; window: number } | undefined
}

/** Checks the options in a fixed order; throws a TypeError naming the first bad one. */
export function parseResourceServerOptions(options: ResourceServerOptions): ResourceServerSettings {
  const allowHttp = options.allowInsecureRequests === true
  if (typeof options.issuer !== 'string') throw new TypeError('issuer: must be a string')
  const issuerUrl = checkUrl('issuer', options.issuer, allowHttp)
  const resource = options.resource !== undefined ? checkResource(options.resource, allowHttp) : undefined
  if (options.audience !== undefined || resource === undefined) {
    if (typeof options.audience !== 'string' || options.audience === '') {
      throw new TypeError('audience: must be a non-empty string (RFC 9068 §4: the API checks aud), or give resource')
    }
  }
  const audience = options.audience
  const jwksUri = options.jwksUri !== undefined ? checkUrl('jwksUri', options.jwksUri, allowHttp) : undefined
  const requiredScopes = checkScopes('requiredScopes', options.requiredScopes)
  const algorithms = options.algorithms !== undefined ? [...options.algorithms] : DEFAULT_ALGS
  if (algorithms.length === 0 || !algorithms.every((alg) => KNOWN_ALGS.includes(alg))) {
    throw new TypeError(`algorithms: must be a non-empty list of ${KNOWN_ALGS.join(', ')}`)
  }
  const clockTolerance = seconds('clockTolerance', options.clockTolerance, 5)
  const jwksCooldown = seconds('jwksCooldown', options.jwksCooldown, 30)
  const jwksCacheMaxAge = seconds('jwksCacheMaxAge', options.jwksCacheMaxAge, 600)
  const timeout = seconds('timeout', options.timeout, 5)
  const scopesSupported =
    options.scopesSupported !== undefined ? checkScopes('scopesSupported', options.scopesSupported) : requiredScopes
  const resourceName = optionalString('resourceName', options.resourceName)
  const resourceDocumentation = options.resourceDocumentation
  if (resourceDocumentation !== undefined) checkUrl('resourceDocumentation', resourceDocumentation, true)
  return {
    issuer: options.issuer,
    issuerUrl,
    allowHttp,
    resource,
    // RFC 9728 §1.2 / RFC 8707: a token for this resource names it in aud.
    audiences: [...new Set([audience, resource?.identifier].filter((a) => a !== undefined))],
    jwksUri,
    requiredScopes,
    algorithms,
    clockTolerance,
    jwksCooldown,
    jwksCacheMaxAge,
    timeout,
    realm: options.realm ?? audience ?? resource?.identifier,
    scopesSupported,
    resourceName,
    resourceDocumentation,
    fetch: options.fetch ?? ((url, init) => fetch(url, init)),
    now: options.now,
    introspection: options.introspection ? parseIntrospection(options.introspection, allowHttp) : undefined,
    dpop: parseDpop(options.dpop ?? {}, resource, allowHttp),
  }
}

function parseDpop(given: DpopOptions, resource: ResourceLocation | undefined, allowHttp: boolean): DpopSettings {
  if (typeof given !== 'object' || given === null) throw new TypeError('dpop: must be an object')
  if (given.required !== undefined && typeof given.required !== 'boolean') {
    throw new TypeError('dpop.required: must be a boolean')
  }
  const algorithms = given.algorithms !== undefined ? [...given.algorithms] : [...DEFAULT_DPOP_ALGORITHMS]
  if (algorithms.length === 0 || !algorithms.every((alg) => KNOWN_ALGS.includes(alg))) {
    throw new TypeError(`dpop.algorithms: must be a non-empty list of ${KNOWN_ALGS.join(', ')}`)
  }
  if (given.replay !== undefined && typeof given.replay !== 'function') {
    throw new TypeError('dpop.replay: must be a function (key, expiresAt, now) => Promise<boolean>')
  }
  const replayCacheMax = given.replayCacheMax ?? 100_000
  if (!Number.isSafeInteger(replayCacheMax) || replayCacheMax < 1) {
    throw new TypeError('dpop.replayCacheMax: must be an integer ≥ 1')
  }
  let origin = resource !== undefined ? new URL(resource.identifier).origin : undefined
  if (given.origin !== undefined) {
    const url = checkUrl('dpop.origin', given.origin, allowHttp)
    if (url.pathname !== '/' || url.search !== '' || given.origin.includes('#') || url.username !== '') {
      throw new TypeError('dpop.origin: must be an origin (scheme, host and port only)')
    }
    origin = url.origin
  }
  return {
    required: given.required === true,
    algorithms,
    maxAge: seconds('dpop.maxAge', given.maxAge, 300),
    replay: given.replay,
    replayCacheMax,
    origin,
    nonce: given.nonce !== undefined ? parseNonce(given.nonce) : undefined,
  }
}

function parseNonce(given: DpopNonceOptions): NonNullable<DpopSettings['nonce']> {
  if (typeof given !== 'object' || given === null) throw new TypeError('dpop.nonce: must be an object')
  const { secret } = given
  if (secret instanceof Uint8Array) {
    if (secret.length < 16) throw new TypeError('dpop.nonce.secret: must be at least 16 bytes')
  } else if (typeof secret !== 'function') {
    throw new TypeError('dpop.nonce.secret: must be a Uint8Array or a function returning one')
  }
  const window = given.window ?? 60
  if (!Number.isSafeInteger(window) || window < 1) throw new TypeError('dpop.nonce.window: must be an integer ≥ 1')
  const bytes = secret instanceof Uint8Array ? secret.slice() : undefined
  return { secret: bytes !== undefined ? () => bytes : (secret as () => Uint8Array | Promise<Uint8Array>), window }
}

function parseIntrospection(given: IntrospectionOptions, allowHttp: boolean): IntrospectionSettings {
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
  return {
    endpoint,
    clientId: given.clientId,
    clientSecret: given.clientSecret,
    cacheTtl: seconds('introspection.cacheTtl', given.cacheTtl, 5),
    cacheMax,
  }
}
