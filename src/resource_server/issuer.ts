/**
 * @module resource_server/issuer
 * What the resource-server helper fetches from the issuer: its discovery document (OpenID Connect
 * Discovery, for `jwks_uri` and `introspection_endpoint`) and its keys, through jose's
 * `createRemoteJWKSet` (cached, fetched again for an unknown `kid` once the cooldown has passed).
 * A failed fetch is not kept: the next request tries again.
 */
import { type JWTVerifyGetKey, createRemoteJWKSet, customFetch, errors } from 'jose'
import { type ResourceServerSettings, checkUrl } from './options.ts'

/**
 * The issuer's metadata or keys could not be fetched (network error, timeout, non-200, a document
 * that does not match the issuer). Not the caller's fault: answer 503, not 401.
 */
export class IssuerUnavailableError extends Error {
  /** `IssuerUnavailableError`. */
  override name = 'IssuerUnavailableError'
}

/** The issuer's keys for `jwtVerify`, and its introspection endpoint. */
export interface IssuerAccess {
  getKey: JWTVerifyGetKey
  /** The introspection endpoint from the discovery document. */
  discoverIntrospectionEndpoint(): Promise<URL>
}

export function createIssuerAccess(settings: ResourceServerSettings): IssuerAccess {
  const { timeout, fetch: fetchImpl } = settings
  /** The issuer's discovery document, fetched once (a failure is not kept: the next call retries). */
  const issuerMetadata = sharedUntilFailure(() => fetchIssuerMetadata(settings))
  const discover = async (member: 'jwks_uri' | 'introspection_endpoint'): Promise<URL> =>
    discoveredUrl(await issuerMetadata(), member, settings.allowHttp)
  // A failed discovery is not kept: the next request tries again.
  const keySet = sharedUntilFailure(() =>
    (settings.jwksUri ? Promise.resolve(settings.jwksUri) : discover('jwks_uri')).then((jwksUrl) =>
      createRemoteJWKSet(jwksUrl, {
        cooldownDuration: settings.jwksCooldown * 1000,
        cacheMaxAge: settings.jwksCacheMaxAge * 1000,
        timeoutDuration: timeout * 1000,
        [customFetch]: (url, init) => fetchImpl(url, init),
      }),
    ),
  )

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

  return { getKey, discoverIntrospectionEndpoint: () => discover('introspection_endpoint') }
}

/** A promise made once and shared; a rejected one is dropped, so the next call makes it again. */
function sharedUntilFailure<T>(make: () => Promise<T>): () => Promise<T> {
  let shared: Promise<T> | undefined
  return () => {
    if (!shared) {
      const pending = make()
      shared = pending
      pending.catch(() => {
        if (shared === pending) shared = undefined
      })
    }
    return shared
  }
}

/** The issuer's OpenID Connect Discovery document; its `issuer` must be the configured one, byte for byte. */
async function fetchIssuerMetadata(settings: ResourceServerSettings): Promise<Record<string, unknown>> {
  const { issuerUrl, fetch: fetchImpl } = settings
  const base = issuerUrl.href.endsWith('/') ? issuerUrl.href.slice(0, -1) : issuerUrl.href
  const url = `${base}/.well-known/openid-configuration`
  let metadata: unknown
  try {
    const response = await fetchImpl(url, {
      headers: { accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(settings.timeout * 1000),
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
  if (record.issuer !== settings.issuer) {
    throw new IssuerUnavailableError(`the metadata at ${url} is for another issuer`)
  }
  return record
}

/** A URL member of the discovery document, which must be present and usable. */
function discoveredUrl(
  record: Record<string, unknown>,
  member: 'jwks_uri' | 'introspection_endpoint',
  allowHttp: boolean,
): URL {
  const value = record[member]
  if (typeof value !== 'string') throw new IssuerUnavailableError(`the issuer's metadata has no ${member}`)
  try {
    return checkUrl(member, value, allowHttp)
  } catch (cause) {
    throw new IssuerUnavailableError(`the issuer's metadata has an unusable ${member}`, { cause })
  }
}
