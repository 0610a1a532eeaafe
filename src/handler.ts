/**
 * @module handler
 * The one fetch handler: routes by the route table (routes.ts), answers 404 for unknown paths (a page for
 * browsers, JSON otherwise) and 405 for unknown methods, and turns every thrown error into an RFC
 * error response (HTML on browser-facing pages).
 * The issuer and endpoint URLs come from configuration, never from the request's Host header.
 * Endpoints a single-page app calls directly answer CORS for the registered redirect URIs' origins
 * (see cors.ts); introspection does not: it is for resource servers, which are not browsers.
 * With the `health` option, liveness and readiness probes answer at host paths before routing;
 * with `metrics`, every routed request reports its endpoint, status and latency (see ops/).
 */
import type { Context } from './context.ts'
import { type CorsRoute, appendVary, createOriginPolicy, preflightResponse, withCors } from './cors.ts'
import { OAuthError, StoreUnavailableError, errorResponse, toOAuthError } from './errors.ts'
import { createStoreErrorLog, type EndpointName } from './events/index.ts'
import { errorPage, notFoundPage } from './pages/index.ts'
import { type Handle, ROUTES, type Shared, corsOf } from './routes.ts'

/** A route of the table (routes.ts) as the handler runs it. */
interface Route {
  /** The `endpoint` label of the metrics. */
  name: EndpointName
  methods: Partial<Record<string, Handle>>
  /** Browser-facing: errors are HTML pages. */
  page: boolean
  /** A health probe: answered before routing, outside the metrics. */
  probe: boolean
  /** Called cross-origin by browser apps: answers CORS for registered origins. */
  cors: CorsRoute | undefined
  /** Answers CORS for every origin (never with credentials). */
  anyOrigin: boolean
}

/** The compiled table: one Map from the whole request path, and the routes matched by a path prefix. */
interface Routes {
  exact: Map<string, Route>
  prefixes: { prefix: string; route: Route }[]
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

/**
 * Compiles the route table for a context, once: a route's handler is built when it is mounted,
 * the parts routes share once for all of them. Precedence: probes, then the well-known paths with
 * the issuer's path inserted, then the paths below the issuer (prefix routes: see `createHandler`).
 */
function compileRoutes(ctx: Context): Routes {
  const { config } = ctx
  const issuerPath = new URL(config.issuer).pathname.replace(/\/$/, '')
  const issuerBase = config.issuer.endsWith('/') ? config.issuer.slice(0, -1) : config.issuer
  const parts = new Map<unknown, unknown>()
  const shared: Shared = <T>(make: (ctx: Context) => T): T => {
    if (!parts.has(make)) parts.set(make, make(ctx))
    return parts.get(make) as T
  }
  const below = new Map<string, Route>()
  const inserted = new Map<string, Route>()
  const host = new Map<string, Route>()
  const prefixes: Routes['prefixes'] = []
  for (const entry of ROUTES) {
    if (entry.when && !entry.when(config)) continue
    const paths = typeof entry.paths === 'function' ? entry.paths(config) : entry.paths
    if (!paths.some((path) => path !== undefined)) continue
    const handle = entry.handler(ctx, shared)
    const route: Route = {
      name: entry.name,
      methods: Object.fromEntries(entry.methods.map((method) => [method, handle])),
      page: entry.kind === 'browser',
      probe: entry.kind === 'probe',
      ...(entry.cors ? corsOf(entry.cors, config) : { cors: undefined, anyOrigin: false }),
    }
    for (const path of paths) {
      if (path === undefined) continue
      if (entry.at === 'host') host.set(path, route)
      else if (entry.at === 'prefix') prefixes.push({ prefix: new URL(issuerBase + path).pathname, route })
      else below.set(issuerPath + path, route)
      // RFC 8414 §3.1: for an issuer with a path, the well-known suffix is inserted before the path.
      if (entry.inserted && issuerPath !== '') inserted.set(path + issuerPath, route)
    }
  }
  return { exact: new Map([...below, ...inserted, ...host]), prefixes }
}

/** Creates the request handler for a context. */
export function createHandler(ctx: Context): (request: Request) => Promise<Response> {
  const metrics = ctx.config.metrics
  // An outage fails every request the same way: counted per kind, not a line per request.
  const storeErrors = createStoreErrorLog(ctx.logger)
  const origins = createOriginPolicy({
    store: ctx.store,
    now: ctx.now,
    onError: (error) =>
      ctx.logger.warn('CORS origins could not be refreshed, using the last known set', {
        error: error instanceof Error ? error.name : typeof error,
      }),
  })
  const { exact, prefixes } = compileRoutes(ctx)

  /** One Map lookup; a probe's path wins over a prefix (the RFC 7592 management URIs), which wins over the rest. */
  function find(pathname: string): Route | undefined {
    const route = exact.get(pathname)
    if (route?.probe) return route
    for (const { prefix, route: below } of prefixes) if (pathname.startsWith(prefix)) return below
    return route
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

  /**
   * Runs the request on its route (CORS where the route answers it). Not an async function: one
   * that returns another's promise adopts it, which costs a promise and turns of the microtask
   * queue on every request (#44 item 4).
   */
  function dispatch(request: Request, route: Route | undefined): Promise<Response> {
    // Requests without Origin (servers, top-level navigations) take no CORS path at all.
    const origin = route?.cors === undefined ? null : request.headers.get('origin')
    return origin === null || route === undefined ? respond(request, route) : crossOrigin(request, route, origin)
  }

  /** A request with Origin on a route that answers CORS. */
  async function crossOrigin(request: Request, route: Route, origin: string): Promise<Response> {
    const cors = route.cors as CorsRoute
    if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) {
      return preflight(origin, cors, route.anyOrigin === true)
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

  /** A probe: GET or HEAD only (405 as JSON otherwise). */
  async function probe(request: Request, route: Route): Promise<Response> {
    const handle = route.methods.GET
    if (handle === undefined || (request.method !== 'GET' && request.method !== 'HEAD')) {
      return errorResponse(
        new OAuthError('invalid_request', 'the request method is not allowed here', {
          status: 405,
          headers: { allow: 'GET, HEAD' },
        }),
        ctx.config.issuer,
      )
    }
    return withoutBodyForHead(request, await handle(request))
  }

  // The route of the last URL without a query: a client calls one endpoint again and again, and
  // the same URL always finds the same route (#44 item 4: the pattern and the prefixes, once).
  let lastUrl: string | undefined
  let lastRoute: Route | undefined
  return (request) => {
    const url = request.url
    let route: Route | undefined
    if (url === lastUrl) route = lastRoute
    else {
      route = find(pathnameOf(url))
      if (!url.includes('?')) {
        lastUrl = url
        lastRoute = route
      }
    }
    return route?.probe ? probe(request, route) : measured(request, route)
  }
}
