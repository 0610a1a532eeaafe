/**
 * @module adapters/deno
 * Serves a fetch handler on Deno with `Deno.serve` (no dependency: the handler fits as is). Deno
 * implements `node:crypto`, so the service's synchronous digests are the Node adapter's
 * (`denoServiceOptions()`); its signatures stay on WebCrypto (see there).
 */
import type { SecretDigest } from '../src/secrets.ts'
import { nodeSecretDigest, nodeSha256 } from './node_crypto.ts'
import { nodeResolveHost } from './node_dns.ts'

export { nodeSecretDigest, nodeSha256 } from './node_crypto.ts'

/** A fetch handler; `info.address` is the TCP peer's address (the service's throttling uses it). */
export type FetchHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** The part of `Deno.HttpServer` the adapter's callers use (structural: no Deno types needed). */
export interface DenoServer {
  /** Where it listens (`port` is useful with `port: 0`). */
  readonly addr: { port: number } | { path: string }
  /** Stops accepting connections and resolves once the in-flight requests have been answered. */
  shutdown(): Promise<void>
  /** Resolves when the server has closed. */
  readonly finished: Promise<void>
}

/** Starts `Deno.serve` for `handler`; resolves once it listens. */
export function serveDeno(handler: FetchHandler, options: { port: number; hostname?: string }): Promise<DenoServer> {
  return new Promise((resolve) => {
    // Deno calls onListen synchronously, before `Deno.serve` has returned the server: settle on
    // whichever of the two happens last.
    let server: DenoServer | undefined
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

/**
 * The service options `npm run start:deno` passes: `resolveHost` through `node:dns/promises`, and
 * the secret digest and SHA-256 through Deno's `node:crypto`, synchronous, instead of WebCrypto's promises (introspection on the bench:
 * 30k -> 45k req/s). No `signer`: Deno's ES256 signature costs ~450 us through `node:crypto`
 * against ~375 us through WebCrypto, which also spreads them over its worker threads (measured
 * with Deno 2.9.6; Node's OpenSSL takes ~25 us), so jose on WebCrypto signs.
 */
export function denoServiceOptions(): {
  secretDigest: SecretDigest
  sha256: (value: string) => string
  resolveHost: (hostname: string) => Promise<string[]>
} {
  return { secretDigest: nodeSecretDigest(), sha256: nodeSha256(), resolveHost: nodeResolveHost() }
}
