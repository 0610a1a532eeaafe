/** `npm start`: the service on Node through adapters/node.ts. */
import { readFile } from 'node:fs/promises'
import type { Server } from 'node:http'
import { nodeServiceOptions, serveNode } from '../adapters/node.ts'
import { onParentExit } from './parent_exit.ts'
import { type RunningServer, start } from './start.ts'

/**
 * Graceful close: stop accepting, answer in-flight requests with `Connection: close`, close each
 * connection once idle, and after `graceMs` close whatever is left.
 */
function closer(server: Server): RunningServer {
  return {
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        // Responses still to come tell keep-alive clients not to send more on this connection.
        server.prependListener('request', (_request, response) => {
          response.shouldKeepAlive = false
        })
        const idle = setInterval(() => server.closeIdleConnections(), 50)
        const force = setTimeout(() => server.closeAllConnections(), graceMs)
        server.close(() => {
          clearInterval(idle)
          clearTimeout(force)
          resolve()
        })
        server.closeIdleConnections()
      }),
  }
}

await start({
  name: 'node',
  args: process.argv.slice(2),
  env: (name) => process.env[name],
  readTextFile: (path) => readFile(path, 'utf8'),
  serve: async (handler, options) => closer(await serveNode(handler, options)),
  onSignal: (signal, listener) => process.on(signal, listener),
  onParentExit,
  exit: (code) => process.exit(code),
  serviceOptions: nodeServiceOptions(),
})
