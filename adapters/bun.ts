/**
 * @module adapters/bun
 * Serves a fetch handler on Bun through @hattip/adapter-bun.
 */
import bunAdapter from '@hattip/adapter-bun'

/** A fetch handler; `info.address` is the TCP peer's address (the service's throttling uses it). */
export type FetchHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** Starts `Bun.serve` for `handler`. */
export function serveBun(handler: FetchHandler, options: { port: number; hostname?: string }) {
  return Bun.serve(
    bunAdapter((ctx) => handler(ctx.request, { address: ctx.ip }), { port: options.port, hostname: options.hostname }),
  )
}
