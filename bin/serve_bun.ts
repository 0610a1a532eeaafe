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
    return {
      // stop(false): stop accepting and let requests in flight finish; stop(true) after the bound.
      async close(graceMs) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const bound = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs)
        })
        await Promise.race([server.stop(false), bound])
        clearTimeout(timer)
        await server.stop(true)
      },
    }
  },
  onSignal: (signal, listener) => process.on(signal, listener),
  exit: (code) => process.exit(code),
  serviceOptions: bunServiceOptions(),
})
