/**
 * @module adapters/node_entry
 * The package's main entry (`gatehouse`) where the "node" export condition applies: Node, Bun and
 * Deno (their npm support honours it). Everything of src/index.ts, with a `createTokenService`
 * whose `outboundFetch` defaults to `nodeOutboundFetch()` (#39 item 5): a self-registered
 * client's host names are resolved once and connected to the checked address instead of refused.
 * Workers, edge runtimes and browsers get src/index.ts itself (package.json `exports`).
 */
import { type TokenService, type TokenServiceOptions, createTokenService as createService } from '../src/index.ts'
import { nodeOutboundFetch } from './node_outbound.ts'

export * from '../src/index.ts'

/**
 * Creates the token service (src/index.ts), with `outboundFetch: nodeOutboundFetch()` unless the
 * host chose its own way out: an `outboundFetch`, or `allowUnpinnedHostNames: true`.
 */
export function createTokenService(options: TokenServiceOptions): TokenService {
  const chosen = typeof options !== 'object' || options === null || options.outboundFetch !== undefined
  if (chosen || options.allowUnpinnedHostNames === true) return createService(options)
  return createService({ ...options, outboundFetch: nodeOutboundFetch() })
}
