/**
 * @module client_credentials_source
 * The caller's side: a job or service that needs an access token for an API. Gets one with the
 * client credentials grant (RFC 6749 §4.4) through oauth4webapi, keeps it until shortly before it
 * expires, and shares one token request among concurrent callers.
 */
import type * as OAuth from 'oauth4webapi'
import { importOptional } from './optional_import.ts'

const oauth = await importOptional(() => import('oauth4webapi'), 'oauth4webapi', 'gatehouse-oidc/client')

/** A fetch function (the global `fetch` fits). */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>

export interface ClientCredentialsSourceOptions {
  /** The issuer identifier; its metadata is read once from `<issuer>/.well-known/openid-configuration`. */
  issuer: string
  clientId: string
  clientSecret: string
  /** `client_secret_basic` (default) or `client_secret_post` (RFC 6749 §2.3.1). */
  clientAuth?: 'basic' | 'post'
  /** Scopes to ask for, as a list or a space-separated string. Default: none (the server's default). */
  scope?: string | readonly string[]
  /** RFC 8707 `resource` indicators, sent as they are. */
  resource?: string | readonly string[]
  /**
   * Seconds before `expires_in` elapses at which a new token is fetched. Default 60; at most half
   * of the token's lifetime is cut off, so a short-lived token is still reused.
   */
  refreshSkew?: number
  /** Fetch used for discovery and the token endpoint. Default: the global `fetch`. */
  fetch?: FetchFunction
  /** Allow `http:` URLs (local development and tests only): oauth4webapi's `allowInsecureRequests`. */
  allowInsecureRequests?: boolean
  /** Seconds to wait for each request. Default 30. */
  timeout?: number
  /** The clock (epoch seconds), for tests. Default: the system clock. */
  now?: () => number
}

/** A token response, with the moment it expires (epoch seconds) when the server said `expires_in`. */
export interface ClientCredentialsToken extends OAuth.TokenEndpointResponse {
  readonly expires_at?: number
}

/**
 * Discovery or the token request failed. `error` and `error_description` are the server's
 * (RFC 6749 §5.2), when it sent them; `cause` is the underlying oauth4webapi or fetch error.
 */
export class TokenRequestError extends Error {
  override name = 'TokenRequestError'
  /** Which request failed. */
  readonly stage: 'discovery' | 'token'
  /** The server's OAuth error code, e.g. `invalid_client`, `invalid_scope`. */
  readonly error: string | undefined
  readonly error_description: string | undefined
  /** The HTTP status of the failed response; undefined when none arrived (network, timeout). */
  readonly status: number | undefined

  constructor(
    stage: 'discovery' | 'token',
    details: { error?: string; description?: string; status?: number },
    options: { cause: unknown },
  ) {
    const what = details.error
      ? `${details.error}${details.description ? ` (${details.description})` : ''}`
      : options.cause instanceof Error
        ? options.cause.message
        : String(options.cause)
    super(`${stage === 'discovery' ? 'discovery' : 'the token request'} failed: ${what}`, options)
    this.stage = stage
    this.error = details.error
    this.error_description = details.description
    this.status = details.status
  }
}

/** Whether a value is a Response (also one from another realm, as oauth4webapi's own check allows). */
function isResponse(value: unknown): value is Response {
  return value instanceof Response || Object.prototype.toString.call(value) === '[object Response]'
}

/** The `error` and `error_description` of an unread OAuth error body (RFC 6749 §5.2), if it has them. */
async function errorBody(response: Response): Promise<{ error?: string; description?: string }> {
  try {
    if (response.bodyUsed) return {}
    const parsed: unknown = await response.json()
    if (typeof parsed !== 'object' || parsed === null) return {}
    const { error, error_description: description } = parsed as Record<string, unknown>
    return {
      ...(typeof error === 'string' && error !== '' ? { error } : {}),
      ...(typeof description === 'string' ? { description } : {}),
    }
  } catch {
    return {}
  }
}

/** Reads the OAuth error out of whatever oauth4webapi or fetch threw. */
async function toTokenRequestError(stage: 'discovery' | 'token', err: unknown): Promise<TokenRequestError> {
  if (err instanceof oauth.ResponseBodyError) {
    return new TokenRequestError(
      stage,
      {
        error: err.error,
        status: err.status,
        ...(err.error_description ? { description: err.error_description } : {}),
      },
      { cause: err },
    )
  }
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    // A 401 invalid_client comes with a challenge (Basic); the error code is in the body.
    const body = await errorBody(err.response)
    const error = body.error ?? err.cause[0]?.parameters.error
    return new TokenRequestError(stage, { ...body, status: err.status, ...(error ? { error } : {}) }, { cause: err })
  }
  if (err instanceof oauth.OperationProcessingError && isResponse(err.cause)) {
    // oauth4webapi reads OAuth error bodies of 4xx only; a 503 temporarily_unavailable lands here.
    return new TokenRequestError(stage, { ...(await errorBody(err.cause)), status: err.cause.status }, { cause: err })
  }
  return new TokenRequestError(stage, {}, { cause: err })
}

function list(value: string | readonly string[] | undefined): string[] {
  if (value === undefined) return []
  return typeof value === 'string' ? value.split(' ').filter((s) => s !== '') : [...value]
}

/**
 * Creates a token source for one client. `getToken()` resolves an access token: the cached one
 * while it has more than `refreshSkew` seconds left, otherwise a new one. Concurrent calls share
 * one request; a failed request rejects every caller waiting on it and is not remembered, so the
 * next call tries again. Errors are {@link TokenRequestError}s.
 *
 * @example
 * import { createClientCredentialsSource } from 'gatehouse-oidc/client'
 *
 * const tokens = createClientCredentialsSource({
 *   issuer: 'https://id.example.com',
 *   clientId: 'reporting-job',
 *   clientSecret: process.env.REPORTING_JOB_SECRET!,
 *   scope: ['api1'],
 * })
 *
 * const token = await tokens.getToken()
 * let response = await fetch('https://api.example.com/reports', { headers: { authorization: `Bearer ${token}` } })
 * if (response.status === 401) {
 *   tokens.invalidate(token) // revoked or keys rotated: fetch a new one once
 *   response = await fetch('https://api.example.com/reports', {
 *     headers: { authorization: `Bearer ${await tokens.getToken()}` },
 *   })
 * }
 */
export function createClientCredentialsSource(options: ClientCredentialsSourceOptions): ClientCredentialsSource {
  for (const name of ['issuer', 'clientId', 'clientSecret'] as const) {
    if (typeof options[name] !== 'string' || options[name] === '') {
      throw new TypeError(`${name}: must be a non-empty string`)
    }
  }
  let issuer: URL
  try {
    issuer = new URL(options.issuer)
  } catch {
    throw new TypeError('issuer: must be an absolute URL')
  }
  const refreshSkew = options.refreshSkew ?? 60
  if (!Number.isFinite(refreshSkew) || refreshSkew < 0) throw new TypeError('refreshSkew: must be seconds ≥ 0')
  const timeout = options.timeout ?? 30
  if (!Number.isFinite(timeout) || timeout <= 0) throw new TypeError('timeout: must be seconds > 0')
  const clientAuthKind = options.clientAuth ?? 'basic'
  if (clientAuthKind !== 'basic' && clientAuthKind !== 'post')
    throw new TypeError("clientAuth: must be 'basic' or 'post'")
  const now = options.now ?? (() => Date.now() / 1000)
  const client: OAuth.Client = { client_id: options.clientId }
  const clientAuth =
    clientAuthKind === 'post'
      ? oauth.ClientSecretPost(options.clientSecret)
      : oauth.ClientSecretBasic(options.clientSecret)
  const parameters = new URLSearchParams()
  const scope = list(options.scope)
  if (scope.length > 0) parameters.set('scope', scope.join(' '))
  for (const resource of list(options.resource)) parameters.append('resource', resource)
  const fetchImpl = options.fetch
  const http = {
    ...(fetchImpl ? { [oauth.customFetch]: (url: string, init: RequestInit) => fetchImpl(url, init) } : {}),
    ...(options.allowInsecureRequests ? { [oauth.allowInsecureRequests]: true } : {}),
    signal: () => AbortSignal.timeout(timeout * 1000),
  }

  let metadata: Promise<OAuth.AuthorizationServer> | undefined
  function discover(): Promise<OAuth.AuthorizationServer> {
    if (!metadata) {
      const pending = (async () => {
        try {
          const response = await oauth.discoveryRequest(issuer, { ...http, algorithm: 'oidc' })
          return await oauth.processDiscoveryResponse(issuer, response)
        } catch (err) {
          throw await toTokenRequestError('discovery', err)
        }
      })()
      metadata = pending
      // A failed discovery is not kept: the next call tries again.
      pending.catch(() => {
        if (metadata === pending) metadata = undefined
      })
    }
    return metadata
  }

  interface Cached {
    token: ClientCredentialsToken
    /** When to fetch a new one (epoch seconds); undefined: keep until invalidated. */
    refreshAt: number | undefined
  }
  let cached: Cached | undefined
  let inflight: Promise<Cached> | undefined

  async function request(): Promise<Cached> {
    const as = await discover()
    const requestedAt = now()
    let response: OAuth.TokenEndpointResponse
    try {
      const raw = await oauth.clientCredentialsGrantRequest(as, client, clientAuth, parameters, http)
      response = await oauth.processClientCredentialsResponse(as, client, raw)
    } catch (err) {
      throw await toTokenRequestError('token', err)
    }
    const lifetime = response.expires_in
    if (lifetime === undefined) return { token: { ...response }, refreshAt: undefined }
    // Counted from when the request was sent: the server's clock started no earlier.
    const expiresAt = requestedAt + lifetime
    return {
      token: { ...response, expires_at: expiresAt },
      refreshAt: expiresAt - Math.min(refreshSkew, lifetime / 2),
    }
  }

  async function current(): Promise<ClientCredentialsToken> {
    if (cached && (cached.refreshAt === undefined || now() < cached.refreshAt)) return cached.token
    if (!inflight) {
      const pending = request().then((fresh) => {
        cached = fresh
        return fresh
      })
      inflight = pending
      const clear = () => {
        if (inflight === pending) inflight = undefined
      }
      pending.then(clear, clear)
    }
    return (await inflight).token
  }

  return {
    async getToken(): Promise<string> {
      return (await current()).access_token
    },
    getTokenResponse: current,
    invalidate(token?: string): void {
      if (token === undefined || cached?.token.access_token === token) cached = undefined
    },
  }
}

/** What {@link createClientCredentialsSource} returns. */
export interface ClientCredentialsSource {
  /** An access token, cached or new. Rejects with a {@link TokenRequestError}. */
  getToken(): Promise<string>
  /** The whole token response behind {@link getToken} (`scope`, `expires_in`, `expires_at`…). */
  getTokenResponse(): Promise<ClientCredentialsToken>
  /**
   * Forgets the cached token, e.g. after an API answered 401 with it. With `token`, only when
   * that is still the cached one (another caller may have replaced it already).
   */
  invalidate(token?: string): void
}
