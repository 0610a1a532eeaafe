/**
 * The runtime-neutral part of `npm start`: reads flags and environment, loads the configuration
 * file (or seeds the demo clients and user), builds the service and hands it to a runtime's server.
 *
 * Flags: --config FILE (or GATEHOUSE_CONFIG); --demo (or GATEHOUSE_DEMO=1): without a file, seed
 * the demo clients into a persistent store too (the in-memory store gets them anyway; a persistent
 * store keeps them, and their secrets are in the README). Environment: PORT (3000), HOST (localhost),
 * ISSUER (http://localhost:PORT, used byte for byte); the store as `bin/store.ts` says;
 * LOG_FORMAT (text, json), METRICS (true: `/metrics`), METRICS_PORT (metrics on their own port),
 * SHUTDOWN_TIMEOUT (seconds in-flight requests get on SIGTERM/SIGINT, default 10).
 *
 * Besides the service, the server answers `GET /healthz` and `GET /readyz` (liveness, readiness),
 * `GET /` (a landing page) and, with the demo seed, the demo client at `/demo`.
 *
 * The steps live in bin/start_options.ts (flags, environment, file), bin/seed.ts (clients and
 * users), bin/start_app.ts (the handler) and bin/start_listen.ts (listening and stopping).
 */
import type { ConfigFile, StoreConfig } from '../src/config/index.ts'
import { type Metrics, type TokenService, createMetrics, createTokenService } from '../src/index.ts'
import type { Store } from '../src/storage/index.ts'
import type { Log } from './log.ts'
import type { Fail, Runtime } from './runtime.ts'
import { describeClients, seedDemo, syncClients } from './seed.ts'
import { PATHS, createApp } from './start_app.ts'
import { listenAll, logStarted, metricsOnly, stopOnSignals } from './start_listen.ts'
import { type Plan, plan } from './start_plan.ts'
import { readAddress, readConfigFile, readConfigPath, readDemoFlag, readSettings } from './start_options.ts'
import { chooseStore, describeStore, openStore } from './store.ts'

export type { RunningServer, Runtime, ServeHandler } from './runtime.ts'
export { DEMO, syncClients } from './seed.ts'
export { PATHS } from './start_app.ts'

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

/**
 * #40 item 5: a file whose clients sign users in but that lists no `users`: the built-in sign-in
 * page has nobody to sign in (the demo user belongs to the demo seed, which a file replaces).
 */
export function usersMissing(
  configPath: string | undefined,
  clients: Plan['clients'],
  users: Plan['users'],
): string | undefined {
  const signsIn = clients.some((c) =>
    c.permissions.some((p) => p === 'ept:authorization' || p === 'ept:device_authorization'),
  )
  if (users.length > 0 || !signsIn) return undefined
  return `${configPath} lists no "users": the built-in sign-in page signs nobody in. The demo user alice belongs to the demo seed, which --config replaces: add "users" to the file (or sign users in through your own interaction hook when embedding)`
}

interface Opening {
  runtime: Runtime
  log: Log
  fail: Fail
  configPath: string | undefined
  file: ConfigFile | undefined
  plan: Plan
  chosen: StoreConfig
  metrics: Metrics | undefined
}

/**
 * Opens the store, builds the service on it and loads the clients: the file's synced (their source
 * of truth), else the demo seed where missing. Exits with the reason when any of it fails.
 */
async function openService({ runtime, log, fail, configPath, file, plan, chosen, metrics }: Opening) {
  const { issuer, users, settings, clients } = plan
  let store: Store | undefined
  try {
    store = await openStore(chosen)
  } catch (err) {
    return fail((err as Error).message)
  }
  if (file) {
    log.info(
      `Loaded ${configPath}: issuer ${issuer}, ${describeStore(chosen)}, ${plural(clients.length, 'client')}, ${plural(users.length, 'user')}`,
      { config: configPath, issuer, store: describeStore(chosen), clients: clients.length, users: users.length },
    )
    const noUsers = usersMissing(configPath, clients, users)
    if (noUsers) log.warn(noUsers)
  }
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
    const lines = file ? await syncClients(service, clients, plan.pruneClients, configPath) : []
    if (plan.seed) await seedDemo(service, clients, plan.demoCallback)
    await service.ready()
    for (const line of lines) (/: removed \(a demo client/.test(line) ? log.warn : log.info)(line)
    if (!file && chosen.type !== 'memory') await describeClients(service, log, plan.seed, describeStore(chosen))
  } catch (err) {
    await service.close().catch(() => {})
    return fail((err as Error).message)
  }
  return { service, chosen }
}

/** Starts the service on a runtime. Exits with status 1 and a clear message on bad configuration. */
export async function start(runtime: Runtime): Promise<TokenService> {
  const { log, fail, settings: ops } = readSettings(runtime)
  const metricsEnabled = ops.METRICS === 'true' || ops.METRICS === '1' || ops.METRICS_PORT !== undefined
  const configPath = readConfigPath(runtime, log, fail)
  const { port, hostname } = readAddress(runtime, fail)
  const file = await readConfigFile(runtime, configPath, fail)
  const demo = readDemoFlag(runtime, log)
  if (file && demo) {
    fail(
      '--demo (GATEHOUSE_DEMO) seeds the demo clients when no configuration file is given; the file lists the clients',
    )
  }
  let chosen: StoreConfig
  try {
    chosen = chooseStore(runtime.env, file?.store)
  } catch (err) {
    return fail((err as Error).message)
  }
  // The demo seed belongs to the in-memory store; a persistent store keeps it, so it takes --demo.
  const planned = plan(runtime, file, port, !file && (chosen.type === 'memory' || demo))
  const metrics = metricsEnabled ? createMetrics() : undefined
  const { service } = await openService({ runtime, log, fail, configPath, file, plan: planned, chosen, metrics })

  const app = createApp({
    service,
    issuer: planned.issuer,
    theme: planned.theme,
    demoCallback: planned.demoCallback,
    metricsOnMain: ops.METRICS_PORT === undefined ? metrics : undefined,
  })
  const servers = await listenAll(runtime, service, fail, hostname, [
    { handler: app.handler, port, variable: 'PORT' },
    ...(metrics && ops.METRICS_PORT !== undefined
      ? [{ handler: metricsOnly(metrics), port: ops.METRICS_PORT, variable: 'METRICS_PORT' as const }]
      : []),
  ])
  logStarted(log, {
    runtime: runtime.name,
    hostname,
    port,
    issuer: planned.issuer,
    store: describeStore(chosen),
    metrics,
    metricsPort: ops.METRICS_PORT,
    seeded: planned.seed,
    tokenEndpoint: service.endpoints.token,
    demo: app.demo,
  })
  stopOnSignals(runtime, log, { app, servers, service, shutdownTimeout: ops.SHUTDOWN_TIMEOUT })
  return service
}
