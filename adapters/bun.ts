/**
 * @module adapters/bun
 * Serves a fetch handler on Bun through @hattip/adapter-bun.
 */
import bunAdapter from '@hattip/adapter-bun'

export type FetchHandler = (request: Request) => Promise<Response>

/** Starts `Bun.serve` for `handler`. */
export function serveBun(handler: FetchHandler, options: { port: number; hostname?: string }) {
  return Bun.serve(bunAdapter((ctx) => handler(ctx.request), { port: options.port, hostname: options.hostname }))
}
