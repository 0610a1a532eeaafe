/**
 * @module adapters/workers-postgres
 * The Workers adapter (adapters/workers.ts) with PostgreSQL as a store: the same `createWorker`
 * and `workerStore`, where `workerStore` also opens PostgreSQL, from a Hyperdrive binding
 * (`env.HYPERDRIVE`, or the binding GATEHOUSE_HYPERDRIVE_BINDING names) or DATABASE_URL, with
 * GATEHOUSE_PG_SCHEMA. Needs the `nodejs_compat` compatibility flag (postgres.js on workerd uses
 * node:buffer, node:events and node:stream, and this module AsyncLocalStorage); the D1 and memory
 * stores of adapters/workers.ts need no flag, which is why this is a module of its own.
 *
 * Workers refuse to use a socket opened by one request from another, so each event gets its own
 * postgres.js client (src/storage/postgres_worker.ts): `createWorker` runs every event in a
 * RequestScope kept in an AsyncLocalStorage, tracks the service's `waitUntil` work in it, and
 * closes the event's connections through `waitUntil` once that work is done. Migrations run once
 * per isolate, when the service is built.
 *
 * @example
 * // wrangler.jsonc: "compatibility_flags": ["nodejs_compat"], "hyperdrive": [{ "binding": "HYPERDRIVE", "id": "…" }]
 * import { createWorker, workerStore } from 'gatehouse-oidc/adapters/workers-postgres'
 * export default createWorker(async (env) => ({ issuer: env.ISSUER, store: await workerStore(env) }))
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { waitUntil } from 'cloudflare:workers'
import type { TokenServiceOptions } from '../src/index.ts'
import { createWorkerPostgresStore } from '../src/storage/postgres_worker.ts'
import { RequestScope, type Store } from '../src/storage/index.ts'
import {
  chooseWorkerStore,
  openWorkerStore,
  type WorkerContext,
  type WorkerHandlers,
  type WorkerOptions,
} from '../src/worker/index.ts'
import { workerdSocket } from './workerd_socket.ts'
import { createWorker as createPlainWorker } from './workers.ts'

export type { WorkerContext, WorkerFetch, WorkerHandlers, WorkerOptions } from '../src/worker/index.ts'
export { chooseWorkerStore, describeWorkerStore, type WorkerStoreChoice } from '../src/worker/index.ts'
export { createWorkerPostgresStore, type WorkerPostgresStoreOptions } from '../src/storage/postgres_worker.ts'
export { RequestScope } from '../src/storage/index.ts'
export { workerdSocket } from './workerd_socket.ts'

const scopes = new AsyncLocalStorage<RequestScope>()

/** The current event's scope (undefined outside one). */
export function currentScope(): RequestScope | undefined {
  return scopes.getStore()
}

/** `WorkerOptions.scope`: the event in a RequestScope of its own, closed through `waitUntil` after it. */
export function requestScope<T>(ctx: WorkerContext, run: () => Promise<T>): Promise<T> {
  const scope = new RequestScope()
  return scopes.run(scope, async () => {
    try {
      return await run()
    } finally {
      ctx.waitUntil(scope.close())
    }
  })
}

/** `waitUntil` for the service: the work also keeps the event's connections open until it is done. */
function scopedWaitUntil(promise: Promise<unknown>): void {
  scopes.getStore()?.track(promise)
  waitUntil(promise)
}

/** The store `env` asks for: adapters/workers.ts's choices and PostgreSQL. Undefined: memory. */
export function workerStore(env: object): Promise<Store | undefined> {
  return openWorkerStore(chooseWorkerStore(env as Record<string, unknown>), {
    postgres: (choice) =>
      createWorkerPostgresStore({
        url: choice.url,
        ...(choice.schema ? { schema: choice.schema } : {}),
        scope: currentScope,
        socket: workerdSocket,
      }),
  })
}

/** The Worker's handlers for the service `configure` builds from `env`, each event in its own scope. */
export function createWorker<Env>(
  configure: (env: Env) => TokenServiceOptions | Promise<TokenServiceOptions>,
  options: Omit<WorkerOptions<Env>, 'address'> = {},
): WorkerHandlers<Env> {
  return createPlainWorker(async (env) => ({ waitUntil: scopedWaitUntil, ...(await configure(env)) }), {
    scope: requestScope,
    ...options,
  })
}
