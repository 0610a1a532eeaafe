/**
 * @module adapters/deno
 * Serves a fetch handler on Deno with `Deno.serve` (no dependency: the handler fits as is).
 */
export type FetchHandler = (request: Request) => Promise<Response>

/** Starts `Deno.serve` for `handler`; resolves once it listens. */
export function serveDeno(handler: FetchHandler, options: { port: number; hostname?: string }): Promise<Deno.HttpServer> {
  return new Promise((resolve) => {
    const server = Deno.serve({ port: options.port, hostname: options.hostname, onListen: () => resolve(server) }, handler)
  })
}
