/**
 * @module adapters/bun
 * Serves a fetch handler on Bun with `Bun.serve` (no dependency: the handler fits as is, and
 * `server.requestIP` gives the peer's address). Bun implements `node:crypto`, so the service's
 * synchronous crypto options are the Node adapter's (`bunServiceOptions()`), and its `node:http`
 * connections honour `lookup`, so is `outboundFetch` (adapters/node_outbound.ts).
 */
import { nodeServiceOptions } from './node_crypto.ts'

export { nodeSecretDigest, nodeSha256, nodeSigner } from './node_crypto.ts'
export { nodeOutboundFetch } from './node_outbound.ts'

/** A fetch handler; `info.address` is the TCP peer's address (the service's throttling uses it). */
export type FetchHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** The part of Bun's `Server` the adapter's callers use (kept structural: no Bun types needed). */
export interface BunServer {
  /** The port it listens on (useful with `port: 0`). */
  readonly port: number
  /** Stops accepting connections; `true` also closes the open ones. Resolves when stopped. */
  stop(closeActiveConnections?: boolean): Promise<void>
}

interface BunServeOptions {
  port: number
  hostname?: string
  fetch(request: Request, server: { requestIP(request: Request): { address: string } | null }): Promise<Response>
}

/** Starts `Bun.serve` for `handler`. */
export function serveBun(handler: FetchHandler, options: { port: number; hostname?: string }): BunServer {
  const bun = (globalThis as unknown as { Bun: { serve(options: BunServeOptions): BunServer } }).Bun
  return bun.serve({
    port: options.port,
    ...(options.hostname ? { hostname: options.hostname } : {}),
    fetch: (request, server) => {
      const address = server.requestIP(request)?.address
      return handler(request, address === undefined ? {} : { address })
    },
  })
}

/**
 * The service options `npm run start:bun` passes: secret digest, SHA-256 and JWS signatures
 * (batched per turn of the event loop) through Bun's `node:crypto` instead of WebCrypto.
 */
export const bunServiceOptions: typeof nodeServiceOptions = nodeServiceOptions
