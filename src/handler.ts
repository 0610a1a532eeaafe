/**
 * @module handler
 * The one fetch handler: routes by path below the issuer, answers 404 for unknown paths (a page for
 * browsers, JSON otherwise) and 405 for unknown methods, and turns every thrown error into an RFC
 * error response (HTML on browser-facing pages).
 * The issuer and endpoint URLs come from configuration, never from the request's Host header.
 * Endpoints a single-page app calls directly answer CORS for the registered redirect URIs' origins
 * (see cors.ts); introspection does not: it is for resource servers, which are not browsers.
 * With the `health` option, liveness and readiness probes answer at host paths before routing;
 * with `metrics`, every routed request reports its endpoint, status and latency (see ops/).
 */
import { PATHS, type Context } from './context.ts'
import { type CorsRoute, appendVary, createOriginPolicy, preflightResponse, withCors } from './cors.ts'
import { handleAuthorize } from './endpoints/authorize.ts'
import { handleDeviceAuthorization } from './endpoints/device_authorization.ts'
import { handleDiscovery, handleJwks, metadata } from './endpoints/discovery.ts'
import { handleInteraction } from './endpoints/interaction.ts'
import { handleIntrospection } from './endpoints/introspection.ts'
import { handleLogout } from './endpoints/logout.ts'
import { handlePushedAuthorizationRequest } from './endpoints/par.ts'
import { createRegistration } from './endpoints/registration.ts'
import { handleRevocation } from './endpoints/revocation.ts'
import { handleToken } from './endpoints/token.ts'
import { handleUserinfo } from './endpoints/userinfo.ts'
import { handleVerification } from './endpoints/verify.ts'
import { OAuthError, StoreUnavailableError, errorResponse, toOAuthError } from './errors.ts'
import { createProbes } from './ops/health.ts'
import type { EndpointName } from './ops/metrics.ts'
import { errorPage, notFoundPage } from './pages/index.ts'
import { createStoreErrorLog } from './events/store_error_log.ts'

type Handle = (request: Request) => Promise<Response> | Response

interface Route {
  /** The `endpoint` label of the metrics. */
  name: EndpointName
  methods: Partial<Record<string, Handle>>
  /** Browser-facing: errors are HTML pages. */
  page?: boolean
  /** Called cross-origin by browser apps: answers CORS for registered origins. */
  cors?: CorsRoute
  /**
   * Answers CORS for every origin (public documents and open registration, when clients register
   * themselves: their origins are not known before they come). Never with credentials.
   */
  anyOrigin?: boolean
}

/** CORS of the endpoints: what a browser app may send (header names spelled out, never `*`). */
const CORS = {
  document: { methods: 'GET, HEAD', headers: 'accept' },
  // DPoP (RFC 9449): browser apps send proofs in a DPoP header and read DPoP-Nonce (EXPOSE_HEADERS).
  token: { methods: 'POST', headers: 'authorization, content-type, dpop' },
  userinfo: { methods: 'GET, POST', headers: 'authorization, content-type, dpop' },
  par: { methods: 'POST', headers: 'authorization, content-type, dpop' },
  revocation: { methods: 'POST', headers: 'authorization, content-type' },
  // MCP clients send MCP-Protocol-Version with discovery and registration requests.
  publicDocument: { methods: 'GET, HEAD', headers: 'accept, mcp-protocol-version' },
  registration: { methods: 'POST', headers: 'authorization, content-type, accept, mcp-protocol-version' },
} as const satisfies Record<string, CorsRoute>

/** Publicly cacheable documents differ by Origin once CORS is answered: shared caches must key on it. */
function varyOrigin(response: Response): Response {
  appendVary(response.headers)
  return response
}

/** RFC 9110 §9.3.2: a HEAD response carries the GET response's headers and no content. */
function withoutBodyForHead(request: Request, response: Response): Response {
  return request.method === 'HEAD' ? new Response(null, response) : response
}

/** An absolute URL whose path needs no normalisation: letters, digits, `_`, `-`, `~` and `/` only. */
const PLAIN_URL = /^https?:\/\/[^/?#\\]*(\/[\w\-~/]*)?(?:[?#]|$)/i

/** Whether `Accept` names `text/html` with a non-zero quality (RFC 9110 §12.5.1): a browser's navigation. */
function acceptsHtml(request: Request): boolean {
  for (const part of (request.headers.get('accept') ?? '').split(',')) {
    const [type, ...params] = part.split(';').map((p) => p.trim().toLowerCase())
    if (type !== 'text/html') continue
    const q = params.find((p) => p.startsWith('q='))
    if (q === undefined || Number(q.slice(2)) > 0) return true
  }
  return false
}

/**
 * 404 for a path nothing is served at: a page in the theme for a browser (`Accept: text/html`),
 * JSON otherwise. Its `error` is `not_found`, not an RFC 6749 code such as `invalid_request`: no
 * endpoint was reached, so there is no OAuth request to call invalid.
 */
function notFound(request: Request, ctx: Context): Response {
  if (acceptsHtml(request)) return notFoundPage(ctx.config.theme)
  const body = JSON.stringify({ error: 'not_found', error_description: 'no endpoint at this path' })
  return new Response(body, {
    status: 404,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache' },
  })
}

/** The pathname of a request URL: sliced when plain, else parsed by URL (which normalises it). */
export function pathnameOf(url: string): string {
  const plain = PLAIN_URL.exec(url)
  if (plain) return plain[1] || '/'
  return new URL(url).pathname
}

/** Creates the request handler for a context. */
export function createHandler(ctx: Context): (request: Request) => Promise<Response> {
  const issuerPath = new URL(ctx.config.issuer).pathname.replace(/\/$/, '')
  const metrics = ctx.config.metrics
  // An outage fails every request the same way: counted per kind, not a line per request.
  const storeErrors = createStoreErrorLog(ctx.logger)
  const document = JSON.stringify(metadata(ctx))
  const origins = createOriginPolicy({
    store: ctx.store,
    now: ctx.now,
    onError: (error) =>
      ctx.logger.warn('CORS origins could not be refreshed, using the last known set', {
        error: error instanceof Error ? error.name : typeof error,
      }),
  })
  // With self-registration on, a browser client (MCP Inspector, a web agent) reads discovery and the
  // JWKS before any of its origins is registered: those public documents then answer every origin.
  const openDocuments = Boolean(ctx.config.dynamicClientRegistration || ctx.config.clientIdMetadataDocuments)
  const documentCors = openDocuments ? { cors: CORS.publicDocument, anyOrigin: true } : { cors: CORS.document }
  const discovery: Route = {
    name: 'discovery',
    ...documentCors,
    methods: { GET: () => varyOrigin(handleDiscovery(document)) },
  }
  const routes = new Map<string, Route>([
    [PATHS.openidConfiguration, discovery],
    [PATHS.oauthMetadata, discovery],
    [PATHS.jwks, { name: 'jwks', ...documentCors, methods: { GET: async () => varyOrigin(await handleJwks(ctx)) } }],
    [PATHS.token, { name: 'token', cors: CORS.token, methods: { POST: (r) => handleToken(r, ctx) } }],
    [
      PATHS.deviceAuthorization,
      {
        name: 'device_authorization',
        cors: CORS.token,
        methods: { POST: (r) => handleDeviceAuthorization(r, ctx) },
      },
    ],
    [PATHS.par, { name: 'par', cors: CORS.par, methods: { POST: (r) => handlePushedAuthorizationRequest(r, ctx) } }],
    [PATHS.introspection, { name: 'introspection', methods: { POST: (r) => handleIntrospection(r, ctx) } }],
    [
      PATHS.revocation,
      { name: 'revocation', cors: CORS.revocation, methods: { POST: (r) => handleRevocation(r, ctx) } },
    ],
    [
      PATHS.userinfo,
      {
        name: 'userinfo',
        cors: CORS.userinfo,
        methods: { GET: (r) => handleUserinfo(r, ctx), POST: (r) => handleUserinfo(r, ctx) },
      },
    ],
    [
      PATHS.authorization,
      {
        name: 'authorization',
        page: true,
        methods: { GET: (r) => handleAuthorize(r, ctx), POST: (r) => handleAuthorize(r, ctx) },
      },
    ],
    [
      PATHS.interaction,
      {
        name: 'interaction',
        page: true,
        methods: { GET: (r) => handleInteraction(r, ctx), POST: (r) => handleInteraction(r, ctx) },
      },
    ],
    [
      PATHS.verification,
      {
        name: 'verification',
        page: true,
        methods: { GET: (r) => handleVerification(r, ctx), POST: (r) => handleVerification(r, ctx) },
      },
    ],
    [
      PATHS.logout,
      { name: 'logout', page: true, methods: { GET: (r) => handleLogout(r, ctx), POST: (r) => handleLogout(r, ctx) } },
    ],
  ])
  // Dynamic client registration (RFC 7591) and its management URIs (RFC 7592), when configured.
  let management: Route | undefined
  let managementPrefix: string | undefined
  if (ctx.config.dynamicClientRegistration) {
    const registration = createRegistration(ctx)
    routes.set(PATHS.registration, {
      name: 'registration',
      cors: CORS.registration,
      anyOrigin: true,
      methods: { POST: registration.register },
    })
    management = {
      name: 'registration',
      methods: { GET: registration.manage, PUT: registration.manage, DELETE: registration.manage },
    }
    managementPrefix = registration.managementPrefix
  }
  // RFC 8414 §3.1: for an issuer with a path, the well-known suffix is inserted before the path.
  // MCP clients try that location for the OpenID document too, so both are served there as well
  // as appended to the path.
  const insertedMetadataPath = issuerPath === '' ? undefined : PATHS.oauthMetadata + issuerPath
  const insertedOpenidPath = issuerPath === '' ? undefined : PATHS.openidConfiguration + issuerPath

  function find(pathname: string): Route | undefined {
    if (pathname === insertedMetadataPath || pathname === insertedOpenidPath) return discovery
    if (managementPrefix !== undefined && pathname.startsWith(managementPrefix)) return management
    if (!pathname.startsWith(issuerPath)) return undefined
    return routes.get(pathname.slice(issuerPath.length))
  }

  /** Routes and runs the request; every thrown error becomes an error response. */
  async function respond(request: Request, route: Route | undefined): Promise<Response> {
    try {
      if (!route) return withoutBodyForHead(request, notFound(request, ctx))
      const method = request.method === 'HEAD' ? 'GET' : request.method
      // Own keys only: a method token like `constructor` or `__proto__` must not reach Object.prototype.
      const handle = Object.hasOwn(route.methods, method) ? route.methods[method] : undefined
      if (!handle) {
        const allow = Object.keys(route.methods).join(', ')
        throw new OAuthError('invalid_request', 'the request method is not allowed here', {
          status: 405,
          headers: { allow },
        })
      }
      return withoutBodyForHead(request, await handle(request))
    } catch (thrown) {
      const err = toOAuthError(thrown)
      if (err.code === 'temporarily_unavailable') metrics?.storeError()
      if (err.cause instanceof StoreUnavailableError) {
        storeErrors.report(err.cause, { path: new URL(request.url).pathname })
      } else if (err.status >= 500) {
        const cause = thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : typeof thrown
        ctx.logger.error('request failed', { path: new URL(request.url).pathname, error: err.code, cause })
      }
      if (route?.page) {
        // Browser endpoints answer every error as a page (405 keeps its Allow, 503 its Retry-After).
        const page = errorPage(ctx.config.theme, err.code, err.message, err.status)
        for (const [name, value] of Object.entries(err.headers ?? {})) page.headers.set(name, value)
        return withoutBodyForHead(request, page)
      }
      return withoutBodyForHead(request, errorResponse(err, ctx.config.issuer))
    }
  }

  /**
   * A preflight: 204 with the route's methods and headers for an allowed origin; otherwise 403
   * (503 while the store cannot tell), without CORS headers, so the browser blocks the request.
   */
  async function preflight(origin: string, cors: CorsRoute, anyOrigin: boolean): Promise<Response> {
    try {
      if (anyOrigin || (await origins.allows(origin))) return preflightResponse(origin, cors)
      throw new OAuthError('invalid_request', 'cross-origin requests are not allowed from this origin', {
        status: 403,
      })
    } catch (thrown) {
      const response = errorResponse(toOAuthError(thrown), ctx.config.issuer)
      appendVary(response.headers)
      return response
    }
  }

  /** The response with CORS headers when the origin is allowed (fails closed when the store is down). */
  async function withCorsFor(origin: string, response: Response): Promise<Response> {
    let allowed = false
    try {
      allowed = await origins.allows(origin)
    } catch {
      // No origin set could be read yet: no CORS headers.
    }
    if (allowed) return withCors(response, origin)
    appendVary(response.headers)
    return response
  }

  /** Runs the request on its route (CORS where the route answers it). */
  async function dispatch(request: Request, route: Route | undefined): Promise<Response> {
    // Requests without Origin (servers, top-level navigations) take no CORS path at all.
    if (route?.cors === undefined) return respond(request, route)
    const origin = request.headers.get('origin')
    if (origin === null) return respond(request, route)
    if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) {
      return preflight(origin, route.cors, route.anyOrigin === true)
    }
    if (route.anyOrigin) return withCors(await respond(request, route), origin)
    return withCorsFor(origin, await respond(request, route))
  }

  const measured = metrics
    ? async (request: Request, route: Route | undefined): Promise<Response> => {
        const started = performance.now()
        let status = 500
        try {
          const response = await dispatch(request, route)
          status = response.status
          return response
        } finally {
          metrics.request(route?.name ?? 'unknown', status, (performance.now() - started) / 1000)
        }
      }
    : dispatch

  const health = ctx.config.health
  if (health?.livenessPath === undefined && health?.readinessPath === undefined) {
    return (request) => measured(request, find(pathnameOf(request.url)))
  }
  // Probes answer at paths of the host, before routing (and outside the request metrics).
  const probes = createProbes(ctx)
  const probeRoutes = new Map<string, Handle>()
  if (health.livenessPath !== undefined) probeRoutes.set(health.livenessPath, probes.liveness)
  if (health.readinessPath !== undefined) probeRoutes.set(health.readinessPath, probes.readiness)
  return async function handle(request: Request): Promise<Response> {
    const pathname = pathnameOf(request.url)
    const probe = probeRoutes.get(pathname)
    if (probe === undefined) return measured(request, find(pathname))
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return errorResponse(
        new OAuthError('invalid_request', 'the request method is not allowed here', {
          status: 405,
          headers: { allow: 'GET, HEAD' },
        }),
        ctx.config.issuer,
      )
    }
    return withoutBodyForHead(request, await probe(request))
  }
}
