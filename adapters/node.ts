/**
 * @module adapters/node
 * Serves a fetch handler on Node.js through @hono/node-server, whose Request is built lazily from
 * the incoming message (measured on this project's 2-core machine, a trivial form-parsing Web
 * handler: bare node:http 36k req/s, @hono/node-server 31k, @hattip/adapter-node 3k; see README).
 */
import { createHmac, randomBytes } from 'node:crypto'
import type { Server } from 'node:http'
import { createAdaptorServer } from '@hono/node-server'

export type FetchHandler = (request: Request) => Promise<Response>

/** Starts an HTTP server for `handler`; resolves once it listens. */
export function serveNode(handler: FetchHandler, options: { port: number; hostname?: string }): Promise<Server> {
  const server = createAdaptorServer({
    fetch: handler,
    ...(options.hostname ? { hostname: options.hostname } : {}),
  }) as Server
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.hostname, () => resolve(server))
  })
}

/**
 * A synchronous HMAC-SHA-256 under a random per-process key, for the service's `secretDigest`
 * option: a cached client secret check then costs microseconds instead of a thread-pool hop.
 */
export function nodeSecretDigest(): (secret: string) => string {
  const key = randomBytes(32)
  return (secret) => createHmac('sha256', key).update(secret, 'utf8').digest('base64url')
}
