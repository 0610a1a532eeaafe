/**
 * @module cors
 * CORS (Fetch standard §3.2) for the endpoints a browser single-page app calls directly: discovery,
 * JWKS, token, userinfo and revocation. Allowed origins are exactly the origins of the registered
 * clients' redirect URIs, read from the store at most once per `ttl` seconds (one list for all
 * origins, single-flight). No credentials mode: `Access-Control-Allow-Credentials` is never sent,
 * so cookies never ride along and the session cookie stays out of reach of cross-origin scripts.
 *
 * - a request without `Origin` is not touched (server-to-server calls pay nothing)
 * - an allowed origin gets `Access-Control-Allow-Origin: <origin>`, `Vary: Origin` and
 *   `Access-Control-Expose-Headers: WWW-Authenticate, Retry-After` on every response, errors included
 * - a preflight from an allowed origin is 204 with the route's methods and request headers
 * - a preflight from any other origin is 403 (JSON error, no CORS headers), see `createHandler`
 */
import type { Store } from './storage/index.ts'

/** What one endpoint allows cross-origin. */
export interface CorsRoute {
  /** `Access-Control-Allow-Methods`. */
  methods: string
  /** `Access-Control-Allow-Headers`, names spelled out (`*` never covers `Authorization`). */
  headers: string
}

/** Seconds a browser may cache a preflight answer (Chromium caps it at 7200). */
export const PREFLIGHT_MAX_AGE = 600

/** Response headers a script may read beyond the CORS-safelisted ones: the challenges of 401/403, 503's retry. */
export const EXPOSE_HEADERS = 'WWW-Authenticate, Retry-After, DPoP-Nonce'

/** The origin of a redirect URI, or undefined for opaque origins (custom schemes, `file:`). */
export function originOf(uri: string): string | undefined {
  try {
    const url = new URL(uri)
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined
    return url.origin
  } catch {
    return undefined
  }
}

export interface OriginPolicyOptions {
  store: Pick<Store, 'clients'>
  /** Epoch seconds. */
  now: () => number
  /** Seconds the origin set is reused before the store is read again. Default 5. */
  ttl?: number
  onError?: (error: unknown) => void
}

/** The set of allowed origins, computed from the store's clients and cached for `ttl` seconds. */
export function createOriginPolicy(options: OriginPolicyOptions) {
  const ttl = options.ttl ?? 5
  let origins: ReadonlySet<string> | undefined
  let until = Number.NEGATIVE_INFINITY
  let loading: Promise<ReadonlySet<string>> | undefined

  async function load(): Promise<ReadonlySet<string>> {
    const next = new Set<string>()
    for (const client of await options.store.clients.list()) {
      for (const uri of client.redirectUris) {
        const origin = originOf(uri)
        if (origin !== undefined) next.add(origin)
      }
    }
    return next
  }

  function refresh(): Promise<ReadonlySet<string>> {
    loading ??= load()
      .then((set) => {
        origins = set
        until = options.now() + ttl
        return set
      })
      .finally(() => {
        loading = undefined
      })
    return loading
  }

  return {
    /**
     * Whether `origin` (an `Origin` header value) is the origin of a registered redirect URI.
     * Throws when the store cannot be read and no earlier set is known.
     */
    async allows(origin: string): Promise<boolean> {
      if (origin === 'null' || origin.length > 2048) return false
      if (origins === undefined || options.now() >= until) {
        try {
          await refresh()
        } catch (error) {
          // Keep answering from the last known set while the store is down.
          if (origins === undefined) throw error
          options.onError?.(error)
        }
      }
      return (origins as ReadonlySet<string>).has(origin)
    },
  }
}

export type OriginPolicy = ReturnType<typeof createOriginPolicy>

/** Headers that make `response` readable by `origin`; the response itself when its headers are immutable. */
export function withCors(response: Response, origin: string): Response {
  let target = response
  try {
    target.headers.set('access-control-allow-origin', origin)
  } catch {
    // Response.redirect() and Response.error() have immutable headers: copy the response.
    target = new Response(response.body, response)
    target.headers.set('access-control-allow-origin', origin)
  }
  target.headers.set('access-control-expose-headers', EXPOSE_HEADERS)
  appendVary(target.headers)
  return target
}

/** Adds `Origin` to `Vary` once (the response differs by the request's Origin). */
export function appendVary(headers: Headers): void {
  const vary = headers.get('vary')
  if (vary === null) headers.set('vary', 'Origin')
  else if (!/(^|,)\s*(origin|\*)\s*(,|$)/i.test(vary)) headers.set('vary', `${vary}, Origin`)
}

/** The 204 answer to a preflight from an allowed origin. */
export function preflightResponse(origin: string, route: CorsRoute): Response {
  return new Response(null, {
    status: 204,
    headers: {
      'access-control-allow-origin': origin,
      'access-control-allow-methods': route.methods,
      'access-control-allow-headers': route.headers,
      'access-control-max-age': String(PREFLIGHT_MAX_AGE),
      vary: 'Origin',
    },
  })
}
