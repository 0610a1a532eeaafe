/**
 * @module adapters/deno
 * Serves a fetch handler on Deno with `Deno.serve` (no dependency: the handler fits as is). Deno
 * implements `node:crypto`, so the service's synchronous digests are the Node adapter's
 * (`denoServiceOptions()`); its signatures stay on WebCrypto (see there).
 */
import type { SecretDigest } from '../src/security/index.ts'
import type { JwsSigner } from '../src/crypto/index.ts'
import { nodeSecretDigest, nodeSha256, nodeSigner } from './node_crypto.ts'
import { nodeResolveHost } from './node_dns.ts'
import { nodeOutboundFetch } from './node_outbound.ts'
import type { OutboundFetch } from '../src/security/index.ts'

export { nodeSecretDigest, nodeSha256 } from './node_crypto.ts'
export { nodeOutboundFetch } from './node_outbound.ts'

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
 * The service options `npm run start:deno` passes: `resolveHost` through `node:dns/promises`,
 * `outboundFetch` through Deno's `node:http`/`node:https`, whose connections honour `lookup` (the
 * host name resolved once, connected to the checked address: adapters/node_outbound.ts), and
 * the secret digest and SHA-256 through Deno's `node:crypto`, synchronous, instead of WebCrypto's
 * promises (introspection on the bench: 30k -> 45k req/s). The `signer` takes EdDSA keys only:
 * measured with `bench/sign_cost.mjs` on Deno 2.9.6, an Ed25519 signature costs 16 us through
 * `node:crypto` against 68 us through WebCrypto, while ES256 (530 vs 430 us) and RS256/PS256
 * (1.35-1.7 ms vs 1.2 ms) are faster on WebCrypto, so jose signs those.
 */
export function denoServiceOptions(): {
  secretDigest: SecretDigest
  signer: JwsSigner
  sha256: (value: string) => string
  resolveHost: (hostname: string) => Promise<string[]>
  outboundFetch: OutboundFetch
} {
  return {
    secretDigest: nodeSecretDigest(),
    signer: nodeSigner({ algorithms: ['EdDSA'], batch: false }),
    sha256: nodeSha256(),
    resolveHost: nodeResolveHost(),
    outboundFetch: nodeOutboundFetch(),
  }
}
