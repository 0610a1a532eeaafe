/** `npm start`: the service on Node through adapters/node.ts. */
import { readFile } from 'node:fs/promises'
import { nodeServiceOptions, serveNode } from '../adapters/node.ts'
import { start } from './start.ts'

await start({
  name: 'node',
  args: process.argv.slice(2),
  env: (name) => process.env[name],
  readTextFile: (path) => readFile(path, 'utf8'),
  async serve(handler, options) {
    const server = await serveNode(handler, options)
    return {
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve())
          server.closeAllConnections()
        }),
    }
  },
  onSignal: (signal, listener) => process.on(signal, listener),
  exit: (code) => process.exit(code),
  serviceOptions: nodeServiceOptions(),
})
