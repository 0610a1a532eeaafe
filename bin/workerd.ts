/**
 * @module bin/workerd
 * Running a Worker on workerd through Miniflare, as `npm run start:workers` does
 * (bin/serve_workers.ts) and the bench's workerd servers do the same way: the compatibility date
 * and flags, the esbuild bundle of a Worker entry, Miniflare's options, and SIGTERM/SIGINT left to
 * the caller. Importing it starts nothing.
 */
import type { Miniflare, convertV4MiniflareOptions } from 'miniflare'

/** workerd's compatibility date for the local Worker (a deployment sets its own in wrangler.toml). */
export const COMPATIBILITY_DATE = '2026-08-01'

/**
 * #28 item 4: postgres.js over TCP sockets, and the request scope (AsyncLocalStorage) through
 * `nodejs_compat`. #39 item 5: `global_fetch_strictly_public`, which a deployment must set (the
 * Worker entry lets self-registered clients' fetches go to host names, relying on the platform to
 * keep them off private networks; docs/workers.md); workerd itself ignores it.
 */
export const COMPATIBILITY_FLAGS: readonly string[] = ['nodejs_compat', 'global_fetch_strictly_public']

/** Miniflare's options (Miniflare 5 takes its documented v4 options through convertV4MiniflareOptions). */
export type MiniflareOptions = ReturnType<typeof convertV4MiniflareOptions>

/**
 * A Worker entry bundled as one ES module for workerd: `cloudflare:*` stay imports, and so do
 * `node:*`, which workerd's `nodejs_compat` provides (postgres.js).
 */
export async function bundleWorker(entry: string): Promise<string> {
  const { build } = await import('esbuild')
  const bundle = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'browser'],
    external: ['cloudflare:*', 'node:*'],
    logLevel: 'silent',
  })
  return bundle.outputFiles[0]?.text ?? ''
}

/** One Worker on workerd. */
export interface WorkerdOptions {
  host?: string
  /** 0: any free port. */
  port: number
  name: string
  /** The bundled module (`bundleWorker`). */
  script: string
  bindings?: Record<string, string>
  inspectorPort?: number
  /** A local D1 database bound as `DB`. */
  d1?: boolean
  /** Where Miniflare keeps D1 and cache data; absent: in memory. */
  persist?: string
}

/** Miniflare's options for one Worker, with start:workers' compatibility date and flags. */
export async function miniflareOptions(worker: WorkerdOptions): Promise<MiniflareOptions> {
  const { convertV4MiniflareOptions } = await import('miniflare')
  return convertV4MiniflareOptions({
    ...(worker.host !== undefined ? { host: worker.host } : {}),
    port: worker.port,
    ...(worker.inspectorPort !== undefined ? { inspectorPort: worker.inspectorPort } : {}),
    cf: false,
    telemetry: { enabled: false },
    logRequests: false,
    workers: [
      {
        name: worker.name,
        modules: [{ type: 'ESModule', path: 'worker.js', contents: worker.script }],
        compatibilityDate: COMPATIBILITY_DATE,
        compatibilityFlags: [...COMPATIBILITY_FLAGS],
        ...(worker.bindings ? { bindings: worker.bindings } : {}),
        ...(worker.d1 ? { d1Databases: { DB: 'gatehouse' } } : {}),
      },
    ],
    ...(worker.persist !== undefined ? { resourcePersistencePath: worker.persist } : {}),
  })
}

/**
 * Starts Miniflare (workerd) with `options`. Miniflare answers SIGTERM/SIGINT by killing workerd
 * and exiting 143/130; the caller stops on them itself (workerd disposed, exit 0, as `npm start`),
 * so the signal listeners Miniflare added go. Its "exit" hook stays: workerd never outlives this
 * process.
 */
export async function createMiniflare(options: MiniflareOptions): Promise<Miniflare> {
  const { Miniflare } = await import('miniflare')
  const before = { SIGTERM: process.listeners('SIGTERM'), SIGINT: process.listeners('SIGINT') }
  const instance = new Miniflare(options)
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    for (const listener of process.listeners(signal)) {
      if (!before[signal].includes(listener)) process.removeListener(signal, listener)
    }
  }
  return instance
}
