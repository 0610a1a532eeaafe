/**
 * The Worker of `npm run start:workers` (bundled by bin/serve_workers.ts, run on workerd): the
 * service `npm start` serves, built from the Worker's `env` through adapters/workers.ts. The
 * launcher has read the flags, environment and configuration file in Node and passes them here as
 * bindings: the file's text, the issuer, whether to seed the demo, the store's variables.
 */
// The PostgreSQL-capable adapter (#28 item 4): the launcher runs workerd with nodejs_compat.
import { createWorker, workerStore } from '../adapters/workers_postgres.ts'
import { parseConfigFile } from '../src/config/index.ts'
import { type Metrics, createMetrics } from '../src/index.ts'
import { createLog } from './log.ts'
import { describeClients, seedDemo, syncClients } from './seed.ts'
import { PATHS, createApp } from './start_app.ts'
import { type Plan, plan } from './start_plan.ts'

/** The bindings the launcher passes (bin/serve_workers.ts); a deployment passes its own. */
export interface StandaloneEnv {
  ISSUER: string
  /** The configuration file's text and path (for messages); absent without --config. */
  GATEHOUSE_CONFIG_TEXT?: string
  GATEHOUSE_CONFIG_PATH?: string
  /** `1`: seed the demo clients and user (no file, and the in-memory store or --demo). */
  GATEHOUSE_SEED?: string
  LOG_FORMAT?: string
  METRICS?: string
  /** `d1` (the binding DB) or `memory`; GATEHOUSE_STORE_DESCRIPTION says where, for the log. */
  GATEHOUSE_STORE?: string
  GATEHOUSE_STORE_DESCRIPTION?: string
  DB?: unknown
}

/** Built once per isolate, on its first request (in `configure`), used by `setup` and `wrap`. */
let planned: { plan: Plan; metrics: Metrics | undefined } | undefined

export default createWorker<StandaloneEnv>(
  async (env) => {
    const log = createLog(env.LOG_FORMAT === 'json' ? 'json' : 'text')
    const file =
      env.GATEHOUSE_CONFIG_TEXT === undefined
        ? undefined
        : parseConfigFile(env.GATEHOUSE_CONFIG_TEXT, env.GATEHOUSE_CONFIG_PATH ?? 'configuration file')
    const issuerPort = Number(new URL(env.ISSUER).port || 80)
    const made = plan(
      { env: (name) => (name === 'ISSUER' ? env.ISSUER : undefined) },
      file,
      issuerPort,
      env.GATEHOUSE_SEED === '1',
    )
    const metrics = env.METRICS === 'true' || env.METRICS === '1' ? createMetrics() : undefined
    planned = { plan: made, metrics }
    const store = await workerStore(env)
    // Requests come from workerd's HTTP server, which holds bodies to their Content-Length.
    const limits = { ...('limits' in made.settings ? made.settings.limits : {}), trustContentLength: true }
    return {
      logger: log.service,
      ...made.settings,
      limits,
      issuer: made.issuer,
      users: made.users,
      health: { livenessPath: PATHS.liveness, readinessPath: PATHS.readiness },
      ...(metrics ? { metrics } : {}),
      ...(store ? { store } : {}),
    }
  },
  {
    async setup(service, env) {
      const { plan: made } = planned as NonNullable<typeof planned>
      const log = createLog(env.LOG_FORMAT === 'json' ? 'json' : 'text')
      const lines =
        env.GATEHOUSE_CONFIG_TEXT === undefined
          ? []
          : await syncClients(service, made.clients, made.pruneClients, env.GATEHOUSE_CONFIG_PATH)
      if (made.seed) await seedDemo(service, made.clients, made.demoCallback)
      for (const line of lines) (/: removed \(a demo client/.test(line) ? log.warn : log.info)(line)
      if (env.GATEHOUSE_CONFIG_TEXT === undefined && env.GATEHOUSE_STORE === 'd1') {
        // As `npm start` on a persistent store: the clients it holds, or how to add some.
        await describeClients(service, log, made.seed, env.GATEHOUSE_STORE_DESCRIPTION ?? 'local D1 store', false)
      }
    },
    wrap(service) {
      const { plan: made, metrics } = planned as NonNullable<typeof planned>
      return createApp({
        service,
        issuer: made.issuer,
        theme: made.theme,
        demoCallback: made.demoCallback,
        metricsOnMain: metrics,
      }).handler
    },
  },
)
