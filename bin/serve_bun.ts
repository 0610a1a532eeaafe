/** `npm run start:bun`: the service on Bun through adapters/bun.ts. */
import { bunServiceOptions, serveBun } from '../adapters/bun.ts'
import { start } from './start.ts'

await start({
  name: 'bun',
  args: process.argv.slice(2),
  env: (name) => process.env[name],
  readTextFile: (path) => Bun.file(path).text(),
  async serve(handler, options) {
    const server = serveBun(handler, options)
    return { close: async () => void (await server.stop(true)) }
  },
  onSignal: (signal, listener) => process.on(signal, listener),
  exit: (code) => process.exit(code),
  serviceOptions: bunServiceOptions(),
})
