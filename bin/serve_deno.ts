/** `npm run start:deno`: the service on Deno through adapters/deno.ts. */
import { denoServiceOptions, serveDeno } from '../adapters/deno.ts'
import { start } from './start.ts'

await start({
  name: 'deno',
  args: Deno.args,
  env: (name) => Deno.env.get(name),
  readTextFile: (path) => Deno.readTextFile(path),
  async serve(handler, options) {
    const server = await serveDeno(handler, options)
    return { close: () => server.shutdown() }
  },
  onSignal: (signal, listener) => Deno.addSignalListener(signal, listener),
  exit: (code) => Deno.exit(code),
  serviceOptions: denoServiceOptions(),
})
