/**
 * The runtime-neutral part of `npm start`: reads flags and environment, loads the configuration
 * file (or seeds the demo client and user), builds the service and hands it to a runtime's server.
 *
 * Flags: --config FILE (or GATEHOUSE_CONFIG). Environment: PORT (3000), HOST (localhost),
 * ISSUER (http://localhost:PORT, used byte for byte); the store as `bin/store.ts` says;
 * LOG_FORMAT (text, json), METRICS (true: `/metrics`), METRICS_PORT (metrics on their own port),
 * SHUTDOWN_TIMEOUT (seconds in-flight requests get on SIGTERM/SIGINT, default 10).
 *
 * Besides the service, the server answers `GET /healthz` and `GET /readyz` (liveness, readiness),
 * `GET /` (a landing page) and, with the demo seed, the demo client at `/demo`.
 */
import * as v from 'valibot'
import { isLoopback } from '../src/config.ts'
import { type ConfigFile, type StoreConfig, parseConfigFile } from '../src/config_file.ts'
import { pathnameOf } from '../src/handler.ts'
import { type TokenService, type TokenServiceOptions, createMetrics, createTokenService } from '../src/index.ts'
import { createDemoClient } from '../src/ops/demo_client.ts'
import { landingPage } from '../src/ops/landing.ts'
import type { Store } from '../src/storage/types.ts'
import { type Log, createLog } from './log.ts'
import { chooseStore, describeStore, openStore } from './store.ts'

/** A request handler as the runtimes' servers call it. */
export type ServeHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** A listening server. */
export interface RunningServer {
  /**
   * Stops accepting connections, lets requests in flight finish for up to `graceMs`, then closes
   * what is left; resolves when it is closed.
   */
  close(graceMs: number): Promise<void>
}

export interface Runtime {
  name: string
  args: string[]
  env: (name: string) => string | undefined
  readTextFile: (path: string) => Promise<string>
  /**
   * Starts listening; resolves once the server accepts connections. Rejects (or throws) with the
   * runtime's error when it cannot listen (`code: 'EADDRINUSE'` for a busy port on all three).
   */
  serve: (handler: ServeHandler, options: { port: number; hostname: string }) => Promise<RunningServer>
  onSignal: (signal: 'SIGTERM' | 'SIGINT', listener: () => void) => void
  /** Runtime-specific service options (e.g. Node's synchronous secret digest and signer). */
  serviceOptions?: Pick<TokenServiceOptions, 'secretDigest' | 'signer' | 'sha256'>
  exit: (code: number) => never
}

/** The demo configuration used when no file is given. */
export const DEMO: Pick<ConfigFile, 'clients' | 'users'> = {
  clients: [
    {
      clientId: 'demo-service',
      clientSecret: 'demo-service-secret',
      displayName: 'Demo service (client credentials)',
      permissions: ['ept:token', 'ept:introspection', 'ept:revocation', 'gt:client_credentials', 'scp:api1'],
      redirectUris: [],
      postLogoutRedirectUris: [],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
    },
    {
      clientId: 'demo-web',
      clientSecret: 'demo-web-secret',
      displayName: 'Demo web app',
      permissions: [
        'ept:authorization',
        'ept:token',
        'ept:logout',
        'ept:revocation',
        'ept:introspection',
        'gt:authorization_code',
        'gt:refresh_token',
        'rst:code',
        'scp:openid',
        'scp:profile',
        'scp:email',
        'scp:api1',
      ],
      redirectUris: ['http://localhost:8080/callback'],
      postLogoutRedirectUris: ['http://localhost:8080/'],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
    },
  ],
  users: [
    {
      sub: 'demo-user-1',
      username: 'alice',
      password: 'alice-password',
      email: 'alice@example.com',
      email_verified: true,
      given_name: 'Alice',
      family_name: 'Example',
    },
  ],
}

function flag(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === name) return args[i + 1]
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1)
  }
  return undefined
}

/**
 * Makes the store's clients what the configuration file lists: each is created, updated or left
 * unchanged; with `prune`, stored clients the file does not list are deleted. One line per client.
 */
export async function syncClients(
  service: TokenService,
  clients: ConfigFile['clients'],
  prune: boolean,
): Promise<string[]> {
  const results = await Promise.all(clients.map((client) => service.clients.sync(client)))
  const lines = results.map(({ status, client }) => `client ${client.clientId}: ${status}`)
  const listed = new Set(clients.map((client) => client.clientId))
  for (const stored of await service.clients.list()) {
    // Clients that registered themselves (RFC 7591) are not the file's: never listed, never pruned.
    if (listed.has(stored.clientId) || stored.registration !== undefined) continue
    if (prune) {
      await service.clients.delete(stored.clientId)
      lines.push(`client ${stored.clientId}: removed (not in the configuration file; pruneClients is true)`)
    } else {
      lines.push(`client ${stored.clientId}: kept (not in the configuration file; set "pruneClients": true to remove)`)
    }
  }
  return lines
}

/** Paths the standalone server answers besides the service's endpoints. */
export const PATHS = { liveness: '/healthz', readiness: '/readyz', metrics: '/metrics', demo: '/demo' } as const

const seconds = v.pipe(
  v.string(),
  v.regex(/^\d+(\.\d+)?$/, 'must be a number of seconds'),
  v.transform(Number),
  v.maxValue(3600, 'must be at most 3600'),
)
const portNumber = v.pipe(
  v.string(),
  v.regex(/^\d{1,5}$/, 'must be a port number'),
  v.transform(Number),
  v.maxValue(65535, 'must be a port number'),
)

/** The environment settings of the standalone server besides PORT, HOST, ISSUER and the store. */
const SettingsSchema = v.object({
  /** `json`: one JSON object per line (time, level, msg, fields). Default `text`. */
  LOG_FORMAT: v.optional(v.picklist(['text', 'json'], 'must be text or json'), 'text'),
  /** `true`: serve Prometheus metrics at /metrics. Default false. */
  METRICS: v.optional(v.picklist(['true', 'false', '1', '0', ''], 'must be true or false'), 'false'),
  /** Serve the metrics at /metrics on this port (of HOST) instead of the main port. */
  METRICS_PORT: v.optional(portNumber),
  /** Seconds requests in flight get to finish after SIGTERM/SIGINT. Default 10. */
  SHUTDOWN_TIMEOUT: v.optional(seconds, '10'),
})

/** Our flags that npm takes for its own when they come before `--` (npm start --config F). */
const NPM_SWALLOWED = ['config'] as const

/** Whether `err` is a runtime's "address in use" (Node, Bun and Deno all set `code: 'EADDRINUSE'`). */
function isAddressInUse(err: unknown): boolean {
  const e = err as { code?: unknown; name?: unknown } | undefined
  return e?.code === 'EADDRINUSE' || e?.name === 'AddrInUse'
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

/** The JSON answer of the readiness probe while the server drains. */
const STOPPING = () =>
  new Response('{"status":"stopping"}', {
    status: 503,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  })

/** Starts the service on a runtime. Exits with status 1 and a clear message on bad configuration. */
export async function start(runtime: Runtime): Promise<TokenService> {
  const parsedSettings = v.safeParse(SettingsSchema, {
    LOG_FORMAT: runtime.env('LOG_FORMAT') || undefined,
    METRICS: runtime.env('METRICS'),
    METRICS_PORT: runtime.env('METRICS_PORT') || undefined,
    SHUTDOWN_TIMEOUT: runtime.env('SHUTDOWN_TIMEOUT') || undefined,
  })
  const log: Log = createLog(
    parsedSettings.success ? parsedSettings.output.LOG_FORMAT : runtime.env('LOG_FORMAT') === 'json' ? 'json' : 'text',
  )
  const fail = (message: string): never => {
    log.error(message)
    return runtime.exit(1)
  }
  if (!parsedSettings.success) {
    const issue = parsedSettings.issues[0]
    const name = v.getDotPath(issue) ?? 'environment'
    return fail(`${name} ${issue.message}, got ${JSON.stringify(runtime.env(name) ?? '')}`)
  }
  const ops = parsedSettings.output
  const metricsEnabled = ops.METRICS === 'true' || ops.METRICS === '1' || ops.METRICS_PORT !== undefined

  const args = runtime.args
  if (args.includes('--config') && flag(args, '--config') === undefined) fail('--config needs a file path')
  let configPath = flag(args, '--config')
  const rest = args.filter(
    (arg, i) => !(arg === '--config' || args[i - 1] === '--config' || arg.startsWith('--config=')),
  )
  // `npm start --config F` (no `--`): npm keeps the flag as npm_config_config, `true` with F left as
  // an argument (npm 11) or F itself (`--config=F`). Honour it, and say how to pass flags.
  for (const name of NPM_SWALLOWED) {
    const swallowed = runtime.env(`npm_config_${name}`)
    if (swallowed === undefined || swallowed === '' || configPath !== undefined) continue
    const value = swallowed === 'true' ? rest.find((arg) => !arg.startsWith('-')) : swallowed
    if (value === undefined) {
      fail(`npm took --${name} for itself and dropped its value; pass flags after --: npm start -- --${name} FILE`)
    }
    if (swallowed === 'true') rest.splice(rest.indexOf(value as string), 1)
    configPath = value
    log.warn(
      `npm took --${name} for itself; using ${value} as the configuration file (pass flags after --: npm start -- --${name} ${value})`,
    )
  }
  for (const arg of rest) log.warn(`ignoring unexpected argument ${JSON.stringify(arg)} (flags: --config FILE)`)
  configPath ??= runtime.env('GATEHOUSE_CONFIG')

  const portText = runtime.env('PORT') ?? '3000'
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535)
    fail(`PORT must be a port number, got ${JSON.stringify(portText)}`)
  const port = Number(portText)
  const hostname = runtime.env('HOST') ?? 'localhost'

  let file: ConfigFile | undefined
  if (configPath !== undefined) {
    let text = ''
    try {
      text = await runtime.readTextFile(configPath)
    } catch (err) {
      fail(`cannot read configuration file ${configPath}: ${(err as Error).message}`)
    }
    try {
      file = parseConfigFile(text, configPath)
    } catch (err) {
      fail((err as Error).message)
    }
  }
  const issuer = runtime.env('ISSUER') ?? file?.issuer ?? `http://localhost:${port}`
  const {
    clients: fileClients,
    users = DEMO.users,
    $schema: _schema,
    issuer: _issuer,
    store: storeConfig,
    pruneClients = false,
    ...settings
  } = file ?? {}
  // With the demo seed, the demo client's callback on this server is a redirect URI of demo-web
  // (only where a redirect URI may be: https, or http on a loopback host).
  const issuerUrl = new URL(issuer)
  const demoCallback =
    !file && (issuerUrl.protocol === 'https:' || isLoopback(issuerUrl.hostname))
      ? `${issuerUrl.origin}${PATHS.demo}/callback`
      : undefined
  const clients =
    fileClients ??
    DEMO.clients.map((client) =>
      client.clientId === DEMO_CLIENT && demoCallback
        ? { ...client, redirectUris: [...client.redirectUris, demoCallback] }
        : client,
    )
  let chosen: StoreConfig
  let store: Store | undefined
  try {
    chosen = chooseStore(runtime.env, storeConfig)
    store = await openStore(chosen)
  } catch (err) {
    return fail((err as Error).message)
  }
  if (file) {
    log.info(
      `Loaded ${configPath}: issuer ${issuer}, ${describeStore(chosen)}, ${plural(clients.length, 'client')}, ${plural(users.length, 'user')}`,
      { config: configPath, issuer, store: describeStore(chosen), clients: clients.length, users: users.length },
    )
  }
  const metrics = metricsEnabled ? createMetrics() : undefined
  let service: TokenService
  try {
    // Requests come from the runtime's HTTP server, which holds bodies to their Content-Length.
    const limits = { ...('limits' in settings ? settings.limits : {}), trustContentLength: true }
    service = createTokenService({
      logger: log.service,
      ...settings,
      ...runtime.serviceOptions,
      limits,
      issuer,
      users,
      health: { livenessPath: PATHS.liveness, readinessPath: PATHS.readiness },
      ...(metrics ? { metrics } : {}),
      ...(store ? { store } : {}),
    })
  } catch (err) {
    await store?.close?.()
    return fail((err as Error).message)
  }
  try {
    // The file is the source of truth for the clients it lists (the demo seed only fills gaps).
    const lines = file ? await syncClients(service, clients, pruneClients) : []
    if (!file) await seedDemo(service, clients, demoCallback)
    await service.ready()
    for (const line of lines) log.info(line)
  } catch (err) {
    await service.close().catch(() => {})
    return fail((err as Error).message)
  }

  const theme = 'theme' in settings ? (settings.theme ?? {}) : {}
  const demoUser = DEMO.users[0]
  const demo =
    demoCallback && demoUser
      ? {
          url: `${issuerUrl.origin}${PATHS.demo}`,
          handle: createDemoClient({
            service,
            clientId: DEMO_CLIENT,
            clientSecret: DEMO_CLIENT_SECRET,
            redirectUri: demoCallback,
            basePath: PATHS.demo,
            theme,
          }),
        }
      : undefined
  const metricsOnMain = metrics !== undefined && ops.METRICS_PORT === undefined
  const operations = [
    { label: 'Liveness', path: PATHS.liveness },
    { label: 'Readiness', path: PATHS.readiness },
    ...(metricsOnMain ? [{ label: 'Prometheus metrics', path: PATHS.metrics }] : []),
  ]
  let stopping = false
  const app: ServeHandler = (request, info) => {
    const pathname = pathnameOf(request.url)
    if (pathname === '/' && (request.method === 'GET' || request.method === 'HEAD')) {
      const landing = landingPage(theme, {
        issuer,
        endpoints: service.endpoints,
        ...(demo && demoUser
          ? { demo: { url: demo.url, username: demoUser.username, password: demoUser.password } }
          : {}),
        operations,
      })
      return Promise.resolve(request.method === 'HEAD' ? new Response(null, landing) : landing)
    }
    if (pathname === PATHS.readiness && stopping) return Promise.resolve(STOPPING())
    if (metricsOnMain && pathname === PATHS.metrics) return Promise.resolve(metrics.response())
    if (demo) {
      const answered = demo.handle(request, pathname)
      if (answered) return answered
    }
    return service.fetch(request, info)
  }

  const servers: RunningServer[] = []
  const listen = async (handler: ServeHandler, listenPort: number, variable: string): Promise<void> => {
    try {
      servers.push(await runtime.serve(handler, { port: listenPort, hostname }))
    } catch (err) {
      await Promise.allSettled(servers.map((server) => server.close(0)))
      await service.close().catch(() => {})
      if (isAddressInUse(err)) fail(`port ${listenPort} is in use; set ${variable} to another port`)
      const code = (err as { code?: unknown }).code
      fail(
        `cannot listen on ${hostname}:${listenPort}${code === 'EACCES' ? ': permission denied' : `: ${(err as Error).message}`}; set ${variable} (and HOST)`,
      )
    }
  }
  await listen(app, port, 'PORT')
  if (metrics && ops.METRICS_PORT !== undefined) {
    const only: ServeHandler = (request) =>
      Promise.resolve(
        pathnameOf(request.url) === PATHS.metrics ? metrics.response() : new Response('not found', { status: 404 }),
      )
    await listen(only, ops.METRICS_PORT, 'METRICS_PORT')
  }

  const host = hostname.includes(':') ? `[${hostname}]` : hostname
  log.info(
    `Gatehouse (${runtime.name}) listening on http://${host}:${port}, issuer ${issuer}, ${describeStore(chosen)}`,
    {
      runtime: runtime.name,
      url: `http://${host}:${port}`,
      issuer,
      store: describeStore(chosen),
    },
  )
  const metricsWhere = !metrics
    ? 'metrics off (METRICS=true serves /metrics)'
    : ops.METRICS_PORT !== undefined
      ? `metrics at http://${host}:${ops.METRICS_PORT}${PATHS.metrics}`
      : `metrics at ${PATHS.metrics}`
  log.info(`Health at ${PATHS.liveness} and ${PATHS.readiness}; ${metricsWhere}`)
  if (!file) {
    log.info('No --config given: seeded the demo client "demo-service" and the demo user "alice". Get a token with:')
    log.info(
      `  curl -s -u demo-service:demo-service-secret -d grant_type=client_credentials -d scope=api1 ${service.endpoints.token}`,
    )
    if (demo && demoUser) {
      log.info(
        `Try the sign-in flow in a browser: ${demo.url} (user ${demoUser.username}, password ${demoUser.password})`,
      )
    }
  }

  const graceMs = ops.SHUTDOWN_TIMEOUT * 1000
  const stop = (signal: 'SIGTERM' | 'SIGINT') => {
    if (stopping) return
    stopping = true
    log.info(`${signal}: stopping; requests in flight get up to ${ops.SHUTDOWN_TIMEOUT} s`, { signal })
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
  return service
}

/** The demo client whose redirect URIs get the demo callback. */
const DEMO_CLIENT = 'demo-web'
const DEMO_CLIENT_SECRET = 'demo-web-secret'

/**
 * Seeds the demo clients where missing. A demo-web stored by an earlier start (a persistent store)
 * gets the demo callback added to its redirect URIs when it lacks it.
 */
async function seedDemo(
  service: TokenService,
  clients: ConfigFile['clients'],
  demoCallback: string | undefined,
): Promise<void> {
  const results = await Promise.all(clients.map((client) => service.clients.ensure(client)))
  for (const { created, client } of results) {
    if (created || client.clientId !== DEMO_CLIENT || !demoCallback) continue
    if (!client.redirectUris.includes(demoCallback)) {
      await service.clients.update(DEMO_CLIENT, { redirectUris: [...client.redirectUris, demoCallback] })
    }
  }
}
