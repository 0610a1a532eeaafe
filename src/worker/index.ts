/**
 * @module worker
 * The service as the handlers of a module Worker (`export default { fetch, scheduled }`, the shape
 * Cloudflare Workers and workerd call): built once per isolate from the Worker's `env` (bindings
 * and secrets) on its first event, then reused by every request that isolate serves. Web-standard:
 * the Workers adapter (adapters/workers.ts) adds only what comes from `cloudflare:workers`.
 *
 * State never lives in the isolate: an isolate can be evicted, and a deployment runs many at once.
 * Signing keys, codes, sessions and refresh tokens live in the store (`env`'s database), so the
 * in-memory store is for trying it out on one local isolate only (see src/worker/store.ts).
 *
 * @see https://developers.cloudflare.com/workers/runtime-apis/handlers/fetch/
 * @see https://developers.cloudflare.com/workers/runtime-apis/handlers/scheduled/
 */
import { createTokenService, type RequestInfo, type TokenService, type TokenServiceOptions } from '../index.ts'
import { WORKERS_PBKDF2_LIMIT } from '../security/index.ts'
export { chooseWorkerStore, describeWorkerStore, openWorkerStore, type WorkerStoreChoice } from './store.ts'

/** The part of a Worker's `ctx` (ExecutionContext) the handlers use. */
export interface WorkerContext {
  /** Keeps the invocation alive until `promise` settles (work after the response). */
  waitUntil(promise: Promise<unknown>): void
}

/** A fetch handler as the service's `fetch` (the address is the client's, from the platform). */
export type WorkerFetch = (request: Request, info?: RequestInfo) => Promise<Response>

export interface WorkerOptions<Env> {
  /**
   * Runs once per isolate after the service is created and before it answers: e.g.
   * `service.clients.ensure(…)` with a secret from `env`. A failure fails the isolate's requests
   * (503) until a later request builds it again.
   */
  setup?: (service: TokenService, env: Env) => Promise<void> | void
  /** Routes of the host around the service's (a landing page, a health path): default `service.fetch`. */
  wrap?: (service: TokenService, env: Env) => WorkerFetch
  /** The request's client address: Cloudflare's `CF-Connecting-IP` (set by its edge, not by the client). */
  address?: (request: Request) => string | undefined
  /** Where the isolate's errors go (a failed build, a failed prune). Default `console.error`. */
  onError?: (message: string, err: unknown) => void
  /**
   * Runs each event (a request, a scheduled run; the service's build included) inside a scope of
   * its own: what the event's store connections hang on, closed through `ctx.waitUntil` once it
   * is done (adapters/workers_postgres.ts: PostgreSQL, whose sockets cannot cross requests).
   */
  scope?: <T>(ctx: WorkerContext, run: () => Promise<T>) => Promise<T>
}

/** What `createWorkerHandlers` returns: `export default` it from the Worker's module. */
export interface WorkerHandlers<Env> {
  fetch(request: Request, env: Env, ctx: WorkerContext): Promise<Response>
  /** Cron Triggers: prunes the store's expired records (codes, sessions, tokens, counters). */
  scheduled(controller: unknown, env: Env, ctx: WorkerContext): Promise<void>
}

/** A store that can remove its expired records in one go (the SQL stores' `prune`, the memory store's `sweep`). */
interface Prunable {
  prune?: () => Promise<unknown> | unknown
  sweep?: () => unknown
}

/** Removes the store's expired records, where the store can; true when it could. */
export async function pruneExpired(store: unknown): Promise<boolean> {
  const prunable = store as Prunable
  if (typeof prunable.prune === 'function') {
    await prunable.prune()
    return true
  }
  if (typeof prunable.sweep === 'function') {
    prunable.sweep()
    return true
  }
  return false
}

const UNAVAILABLE = () =>
  new Response(
    JSON.stringify({
      error: 'temporarily_unavailable',
      error_description: 'The service could not start; the Worker log says why.',
    }),
    { status: 503, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', 'retry-after': '5' } },
  )

/** The most of an unread request body a Worker reads to keep its connection (see `drainUnread`): 1 MiB. */
export const DRAIN_LIMIT = 1_048_576

/**
 * #39 item 9: reads to its end, and discards, a request body the answer left unread (a 404 or 405,
 * a 413 from the declared length, an error before the form was parsed). workerd's HTTP server,
 * unlike Node's, Bun's and Deno's, does not read the rest itself: it closes the keep-alive
 * connection after the response, without `Connection: close` (through Miniflare's entry Worker, as
 * `npm run start:workers` runs it, for any body; bare workerd for larger ones), and with bytes
 * still unread the close is a TCP reset, losing the client's next request on that connection, or
 * this response. Cancelling the body closes it the same way and a `Connection: close` header is
 * dropped, so it is read before the response goes, up to DRAIN_LIMIT bytes (a larger body is left,
 * and its connection with it). A body the answer read or began to read is not touched, nor one
 * the client stops sending.
 */
export async function drainUnread(request: Request): Promise<void> {
  if (request.bodyUsed) return
  const body = request.body
  if (body === null || body.locked) return
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (!(declared <= DRAIN_LIMIT)) return
  const reader = body.getReader()
  try {
    for (let size = 0; size <= DRAIN_LIMIT; ) {
      const chunk = await reader.read()
      if (chunk.done) return
      size += chunk.value.byteLength
    }
    await reader.cancel()
  } catch {
    // The client stopped sending: its connection is gone anyway.
  }
}

/**
 * The handlers of a Worker whose service `configure` builds from `env`. The service is built on
 * the isolate's first event (Workers give `env` to handlers only, never at module scope) and
 * shared by the events after it; a build that fails is retried by the next event.
 */
export function createWorkerHandlers<Env>(
  configure: (env: Env) => TokenServiceOptions | Promise<TokenServiceOptions>,
  options: WorkerOptions<Env> = {},
): WorkerHandlers<Env> {
  const onError = options.onError ?? ((message, err) => console.error(`[gatehouse] ${message}`, err))
  let built: Promise<{ service: TokenService; handle: WorkerFetch }> | undefined

  function build(env: Env): Promise<{ service: TokenService; handle: WorkerFetch }> {
    built ??= (async () => {
      // Cloudflare's production runtime refuses PBKDF2 above 100,000 iterations (local workerd does
      // not): new hashes stay within it unless the Worker's own options say otherwise (#28 item 3).
      const service = createTokenService({ secretHashMaxIterations: WORKERS_PBKDF2_LIMIT, ...(await configure(env)) })
      try {
        await options.setup?.(service, env)
        await service.ready()
      } catch (err) {
        await service.close().catch(() => {})
        throw err
      }
      return { service, handle: options.wrap ? options.wrap(service, env) : service.fetch }
    })()
    // A failed build is not kept: the next event tries again (the store may be back).
    built.catch(() => {
      built = undefined
    })
    return built
  }

  const scoped = <T>(ctx: WorkerContext, run: () => Promise<T>): Promise<T> =>
    options.scope ? options.scope(ctx, run) : run()

  async function answer(request: Request, env: Env): Promise<Response> {
    let handle: WorkerFetch
    try {
      handle = (await build(env)).handle
    } catch (err) {
      onError('the service could not start', err)
      return UNAVAILABLE()
    }
    const address = options.address?.(request)
    return handle(request, address === undefined ? {} : { address })
  }

  async function fetch(request: Request, env: Env): Promise<Response> {
    const response = await answer(request, env)
    await drainUnread(request)
    return response
  }

  async function scheduled(env: Env): Promise<void> {
    const { service } = await build(env)
    try {
      if (!(await pruneExpired(service.store))) onError('the store has no prune: nothing was pruned', undefined)
    } catch (err) {
      onError('pruning the store failed', err)
      throw err
    }
  }

  return {
    fetch: (request, env, ctx) => scoped(ctx, () => fetch(request, env)),
    scheduled: (_controller, env, ctx) => scoped(ctx, () => scheduled(env)),
  }
}
