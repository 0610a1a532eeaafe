/**
 * @module adapters/node
 * Serves a fetch handler on Node.js through @hono/node-server, whose Request is built lazily from
 * the incoming message (measured on this project's 2-core machine, a trivial form-parsing Web
 * handler: bare node:http 36k req/s, @hono/node-server 31k, @hattip/adapter-node 3k; see
 * bench/README.md, "Bridge" and "Design notes and earlier rounds"). A dependency of the package (with
 * `hono`, which it imports), not an optional peer: `npx gatehouse serve` runs after installing
 * gatehouse alone (#27 item 11). #44 item 4: a request without a body, or with a small declared one
 * (a token request's form), is read whole before the handler runs and given to @hono/node-server
 * as its buffered body (node_buffered.ts); chunked and larger bodies stream through it as before.
 */
import { type Server, createServer } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import { bufferedFirst } from './node_buffered.ts'

export { nodeDpopVerifier, nodeSecretDigest, nodeServiceOptions, nodeSha256, nodeSigner } from './node_crypto.ts'
export { nodeResolveHost } from './node_dns.ts'
export { type NodeOutboundFetchOptions, nodeOutboundFetch, RefusedAddressError } from './node_outbound.ts'

/** A fetch handler; `info.address` is the TCP peer's address (the service's throttling uses it). */
export type FetchHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** Starts an HTTP server for `handler`; resolves once it listens. */
export function serveNode(handler: FetchHandler, options: { port: number; hostname?: string }): Promise<Server> {
  const fetch = (request: Request, env: { incoming?: { socket: { remoteAddress?: string } } }) => {
    const address = env.incoming?.socket.remoteAddress
    return handler(request, address === undefined ? {} : { address })
  }
  const host = options.hostname ? { hostname: options.hostname } : {}
  const buffered = getRequestListener(fetch, { ...host, autoCleanupIncoming: false })
  const server = createServer(bufferedFirst(buffered, getRequestListener(fetch, host)))
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.hostname, () => resolve(server))
  })
}
