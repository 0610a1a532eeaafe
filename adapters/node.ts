/**
 * @module adapters/node
 * Serves a fetch handler on Node.js through @hattip/adapter-node.
 */
import type { Server } from 'node:http'
import { createServer } from '@hattip/adapter-node'

export type FetchHandler = (request: Request) => Promise<Response>

/** Starts an HTTP server for `handler`; resolves once it listens. */
export function serveNode(handler: FetchHandler, options: { port: number; hostname?: string }): Promise<Server> {
  const server = createServer((ctx) => handler(ctx.request))
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.hostname, () => resolve(server))
  })
}
