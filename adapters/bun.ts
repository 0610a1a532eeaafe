/**
 * @module adapters/bun
 * Serves a fetch handler on Bun through @hattip/adapter-bun. Bun implements `node:crypto`, so the
 * service's synchronous crypto options are the Node adapter's (`bunServiceOptions()`).
 */
import bunAdapter from '@hattip/adapter-bun'
import { nodeServiceOptions } from './node_crypto.ts'

export { nodeSecretDigest, nodeSha256, nodeSigner } from './node_crypto.ts'

/** A fetch handler; `info.address` is the TCP peer's address (the service's throttling uses it). */
export type FetchHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** Starts `Bun.serve` for `handler`. */
export function serveBun(handler: FetchHandler, options: { port: number; hostname?: string }) {
  return Bun.serve(
    bunAdapter((ctx) => handler(ctx.request, { address: ctx.ip }), { port: options.port, hostname: options.hostname }),
  )
}

/**
 * The service options `npm run start:bun` passes: secret digest, SHA-256 and JWS signatures
 * (batched per turn of the event loop) through Bun's `node:crypto` instead of WebCrypto.
 */
export const bunServiceOptions = nodeServiceOptions
