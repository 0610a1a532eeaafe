/**
 * @module adapters/workers
 * The service as a Cloudflare Worker (and on workerd, locally): `export default createWorker(…)`.
 * The service is built once per isolate from `env`; the client address is Cloudflare's
 * `CF-Connecting-IP`; work after the response goes through `waitUntil` of `cloudflare:workers`;
 * the `scheduled` handler (a Cron Trigger) prunes the store's expired records. The logic is
 * Web-standard and lives in src/worker/index.ts; the store `env` asks for, in src/worker/store.ts.
 *
 * @example
 * import { createWorker, workerStore } from 'gatehouse-oidc/adapters/workers'
 * export default createWorker(async (env) => ({ issuer: env.ISSUER, store: await workerStore(env) }))
 */
import type { TokenServiceOptions } from '../src/index.ts'
import {
  chooseWorkerStore,
  createWorkerHandlers,
  openWorkerStore,
  type WorkerHandlers,
  type WorkerOptions,
} from '../src/worker/index.ts'
import type { Store } from '../src/storage/index.ts'

/**
 * `waitUntil` of `cloudflare:workers`, which wrangler and workerd provide. Imported through a
 * computed specifier, so that bundlers leave it to workerd and Deno (which publishes this file to
 * JSR) does not try to resolve it.
 */
const CLOUDFLARE_WORKERS = 'cloudflare:workers'
const { waitUntil } = (await import(CLOUDFLARE_WORKERS)) as { waitUntil(promise: Promise<unknown>): void }

export type { WorkerContext, WorkerFetch, WorkerHandlers, WorkerOptions } from '../src/worker/index.ts'
export { chooseWorkerStore, describeWorkerStore, type WorkerStoreChoice } from '../src/worker/index.ts'

/** The store `env` asks for (GATEHOUSE_STORE, DATABASE_URL; see src/worker/store.ts); undefined: memory. */
export function workerStore(env: object): Promise<Store | undefined> {
  return openWorkerStore(chooseWorkerStore(env as Record<string, unknown>))
}

/**
 * The Worker's handlers for the service `configure` builds from `env`. Self-registered clients'
 * server-side fetches may go to host names (`allowUnpinnedHostNames: true`, unless `configure`
 * says otherwise): workerd has no DNS API nor a way to pin a connection, and the platform keeps
 * `fetch` off private networks itself (Cloudflare's network; with the compatibility flag
 * `global_fetch_strictly_public`, which the Worker must set, off the zone's origin too; workerd's
 * default outbound network is public addresses only). See docs/workers.md (#39 item 5).
 */
export function createWorker<Env>(
  configure: (env: Env) => TokenServiceOptions | Promise<TokenServiceOptions>,
  options: Omit<WorkerOptions<Env>, 'address'> = {},
): WorkerHandlers<Env> {
  return createWorkerHandlers(async (env) => ({ waitUntil, allowUnpinnedHostNames: true, ...(await configure(env)) }), {
    address: (request) => request.headers.get('cf-connecting-ip') ?? undefined,
    ...options,
  })
}
