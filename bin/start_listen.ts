/**
 * The standalone server's life on a runtime: listening on PORT (and METRICS_PORT), the start-up
 * lines, and the graceful stop on SIGTERM/SIGINT (the readiness probe fails, requests in flight get
 * SHUTDOWN_TIMEOUT seconds, then the store closes and the process exits).
 */
import { pathnameOf } from '../src/handler.ts'
import type { Metrics, TokenService } from '../src/index.ts'
import type { Log } from './log.ts'
import type { Fail, RunningServer, Runtime, ServeHandler } from './runtime.ts'
import { type App, PATHS } from './start_app.ts'

/** Whether `err` is a runtime's "address in use" (Node, Bun and Deno all set `code: 'EADDRINUSE'`). */
function isAddressInUse(err: unknown): boolean {
  const e = err as { code?: unknown; name?: unknown } | undefined
  return e?.code === 'EADDRINUSE' || e?.name === 'AddrInUse'
}

/** A server to start: its handler, port, and the variable that sets the port. */
export interface Listener {
  handler: ServeHandler
  port: number
  variable: 'PORT' | 'METRICS_PORT'
}

/**
 * Starts the servers in order. When one cannot listen, closes those started and the service, and
 * exits naming the variable to change.
 */
export async function listenAll(
  runtime: Runtime,
  service: TokenService,
  fail: Fail,
  hostname: string,
  listeners: Listener[],
): Promise<RunningServer[]> {
  const servers: RunningServer[] = []
  for (const { handler, port, variable } of listeners) {
    try {
      servers.push(await runtime.serve(handler, { port, hostname }))
    } catch (err) {
      await Promise.allSettled(servers.map((server) => server.close(0)))
      await service.close().catch(() => {})
      if (isAddressInUse(err)) fail(`port ${port} is in use; set ${variable} to another port`)
      const code = (err as { code?: unknown }).code
      fail(
        `cannot listen on ${hostname}:${port}${code === 'EACCES' ? ': permission denied' : `: ${(err as Error).message}`}; set ${variable} (and HOST)`,
      )
    }
  }
  return servers
}

/** The METRICS_PORT server's handler: /metrics and nothing else. */
export function metricsOnly(metrics: Metrics): ServeHandler {
  return (request) =>
    Promise.resolve(
      pathnameOf(request.url) === PATHS.metrics ? metrics.response() : new Response('not found', { status: 404 }),
    )
}

export interface Started {
  runtime: string
  hostname: string
  port: number
  issuer: string
  store: string
  metrics: Metrics | undefined
  metricsPort: number | undefined
  /** Without a configuration file: the demo seed's hints. */
  seeded: boolean
  tokenEndpoint: string
  demo: App['demo']
}

/** The start-up lines: where it listens, health and metrics, and with the demo seed how to try it. */
export function logStarted(log: Log, started: Started): void {
  const { hostname, port, issuer, store, metrics, metricsPort, demo } = started
  const host = hostname.includes(':') ? `[${hostname}]` : hostname
  log.info(`Gatehouse (${started.runtime}) listening on http://${host}:${port}, issuer ${issuer}, ${store}`, {
    runtime: started.runtime,
    url: `http://${host}:${port}`,
    issuer,
    store,
  })
  const metricsWhere = !metrics
    ? 'metrics off (METRICS=true serves /metrics)'
    : metricsPort !== undefined
      ? `metrics at http://${host}:${metricsPort}${PATHS.metrics}`
      : `metrics at ${PATHS.metrics}`
  log.info(`Health at ${PATHS.liveness} and ${PATHS.readiness}; ${metricsWhere}`)
  if (!started.seeded) return
  for (const line of seededLines(started.tokenEndpoint, demo)) log.info(line)
}

/**
 * With the demo seed, what to try: the demo clients, the curl line that gets a token and the demo
 * sign-in. `npm start` and `npm run start:workers` print the same lines (#40 item 6).
 */
export function seededLines(
  tokenEndpoint: string,
  demo: { url: string; username: string; password: string } | undefined,
): string[] {
  return [
    'No --config given: seeded the demo clients "demo-service" (client credentials), "demo-web" (code flow), "demo-cli" (device flow) and "demo-agent" (token exchange) and the demo user "alice". Get a token with:',
    `  curl -s -u demo-service:demo-service-secret -d grant_type=client_credentials -d scope=api1 ${tokenEndpoint}`,
    ...(demo
      ? [`Try the sign-in flow in a browser: ${demo.url} (user ${demo.username}, password ${demo.password})`]
      : []),
  ]
}

/** On SIGTERM or SIGINT: drain, close the servers within `shutdownTimeout` s, close the store, exit. */
export function stopOnSignals(
  runtime: Runtime,
  log: Log,
  stopping: { app: App; servers: RunningServer[]; service: TokenService; shutdownTimeout: number },
): void {
  const { app, servers, service, shutdownTimeout } = stopping
  const graceMs = shutdownTimeout * 1000
  let stopped = false
  const stop = (signal: 'SIGTERM' | 'SIGINT', why: string = signal) => {
    if (stopped) return
    stopped = true
    app.drain()
    log.info(`${why}: stopping; requests in flight get up to ${shutdownTimeout} s`, { signal })
    // Whatever hangs, the process ends a little after the bound.
    const deadline = setTimeout(() => {
      log.warn('shutdown took too long; exiting')
      runtime.exit(1)
    }, graceMs + 7000)
    ;(deadline as { unref?: () => void }).unref?.()
    Promise.allSettled(servers.map((server) => server.close(graceMs)))
      .then(() => service.close())
      .catch((err) => log.error(`closing the store failed: ${(err as Error).message}`))
      .finally(() => {
        log.info('Gatehouse stopped')
        runtime.exit(0)
      })
  }
  runtime.onSignal('SIGTERM', () => stop('SIGTERM'))
  runtime.onSignal('SIGINT', () => stop('SIGINT'))
  // The SIGTERM npm received and did not pass on: stop as if it had.
  runtime.onParentExit?.(() => stop('SIGTERM', 'the parent process (npm) exited'))
}
