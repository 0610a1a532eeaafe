/** `npm start`: the service on Node through adapters/node.ts. */
import { readFile } from 'node:fs/promises'
import type { Server } from 'node:http'
import { nodeServiceOptions, serveNode } from '../adapters/node.ts'
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

/**
 * Under npm (`npm start`, `npx gatehouse serve`: npm sets npm_lifecycle_event), npm runs this
 * process through a shell and passes a SIGTERM sent to npm's PID to that shell alone, which exits
 * without passing it on: this process would be left serving, orphaned. Its parent changing is that
 * SIGTERM (checked every 250 ms; a process started any other way is never stopped by its parent).
 */
function onParentExit(listener: () => void): void {
  if (process.env.npm_lifecycle_event === undefined) return
  const parent = process.ppid
  const timer = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(timer)
    listener()
  }, 250)
  timer.unref()
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
