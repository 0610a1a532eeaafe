/**
 * The standalone server's handler: the service's endpoints, and around them a landing page at `/`,
 * the readiness probe's "stopping" answer while it drains, Prometheus metrics at `/metrics` (on the
 * main port unless METRICS_PORT) and, with the demo seed, the demo client at `/demo`.
 */
import { pathnameOf } from '../src/handler.ts'
import type { Metrics, Theme, TokenService } from '../src/index.ts'
import { createDemoClient, landingPage } from '../src/ops/index.ts'
import type { ServeHandler } from './runtime.ts'
import { DEMO, DEMO_CLIENT, DEMO_CLIENT_SECRET } from './seed.ts'

/** Paths the standalone server answers besides the service's endpoints. */
export const PATHS = { liveness: '/healthz', readiness: '/readyz', metrics: '/metrics', demo: '/demo' } as const

/** The JSON answer of the readiness probe while the server drains. */
const STOPPING = () =>
  new Response('{"status":"stopping"}', {
    status: 503,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  })

export interface AppOptions {
  service: TokenService
  issuer: string
  theme: Theme
  /** The demo client's callback on this server (the demo seed on an https or loopback issuer). */
  demoCallback: string | undefined
  /** The metrics to serve on the main port, if they are served there. */
  metricsOnMain: Metrics | undefined
}

export interface App {
  handler: ServeHandler
  /** The demo client's page and the demo user, when the demo client is served. */
  demo: { url: string; username: string; password: string } | undefined
  /** From now on the readiness probe answers 503 `{"status":"stopping"}`. */
  drain(): void
}

/** The demo client at /demo, signing in the demo user through the service. */
function demoClient(options: AppOptions) {
  const { service, issuer, theme, demoCallback } = options
  const demoUser = DEMO.users[0]
  if (!demoCallback || !demoUser) return undefined
  return {
    url: `${new URL(issuer).origin}${PATHS.demo}`,
    username: demoUser.username,
    password: demoUser.password,
    handle: createDemoClient({
      service,
      clientId: DEMO_CLIENT,
      clientSecret: DEMO_CLIENT_SECRET,
      redirectUri: demoCallback,
      basePath: PATHS.demo,
      theme,
    }),
  }
}

/** Builds the handler the runtime's server calls. */
export function createApp(options: AppOptions): App {
  const { service, issuer, theme, metricsOnMain: metrics } = options
  const demo = demoClient(options)
  const operations = [
    { label: 'Liveness', path: PATHS.liveness },
    { label: 'Readiness', path: PATHS.readiness },
    ...(metrics ? [{ label: 'Prometheus metrics', path: PATHS.metrics }] : []),
  ]
  let stopping = false
  const handler: ServeHandler = (request, info) => {
    const pathname = pathnameOf(request.url)
    if (pathname === '/' && (request.method === 'GET' || request.method === 'HEAD')) {
      const landing = landingPage(theme, {
        issuer,
        endpoints: service.endpoints,
        ...(demo ? { demo: { url: demo.url, username: demo.username, password: demo.password } } : {}),
        operations,
      })
      return Promise.resolve(request.method === 'HEAD' ? new Response(null, landing) : landing)
    }
    if (pathname === PATHS.readiness && stopping) return Promise.resolve(STOPPING())
    if (metrics && pathname === PATHS.metrics) return Promise.resolve(metrics.response())
    if (demo) {
      const answered = demo.handle(request, pathname)
      if (answered) return answered
    }
    return service.fetch(request, info)
  }
  return {
    handler,
    demo: demo && { url: demo.url, username: demo.username, password: demo.password },
    drain: () => {
      stopping = true
    },
  }
}
