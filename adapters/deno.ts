/**
 * @module adapters/deno
 * Serves a fetch handler on Deno with `Deno.serve` (no dependency: the handler fits as is).
 */
/** A fetch handler; `info.address` is the TCP peer's address (the service's throttling uses it). */
export type FetchHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** Starts `Deno.serve` for `handler`; resolves once it listens. */
export function serveDeno(
  handler: FetchHandler,
  options: { port: number; hostname?: string },
): Promise<Deno.HttpServer> {
  return new Promise((resolve) => {
    // Deno calls onListen synchronously, before `Deno.serve` has returned the server: settle on
    // whichever of the two happens last.
    let server: Deno.HttpServer | undefined
    let listening = false
    server = Deno.serve(
      {
        port: options.port,
        hostname: options.hostname,
        onListen: () => {
          listening = true
          if (server) resolve(server)
        },
      },
      (request, info) => {
        const peer = info.remoteAddr
        return handler(request, peer.transport === 'tcp' || peer.transport === 'udp' ? { address: peer.hostname } : {})
      },
    )
    if (listening) resolve(server)
  })
}
