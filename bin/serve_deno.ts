/** `npm run start:deno`: the service on Deno through adapters/deno.ts. */
import { denoServiceOptions, serveDeno } from '../adapters/deno.ts'
import { start } from './start.ts'

await start({
  name: 'deno',
  args: Deno.args,
  env: (name) => Deno.env.get(name),
  readTextFile: (path) => Deno.readTextFile(path),
  async serve(handler, options) {
    // Deno's shutdown() ends the reading of request bodies still arriving (Deno 2.9: BadResource),
    // so closing first lets the requests in flight at that moment finish, then shuts down.
    const inFlight = new Set<Promise<Response>>()
    const server = await serveDeno((request, info) => {
      const answer = handler(request, info)
      inFlight.add(answer)
      const done = () => void inFlight.delete(answer)
      answer.then(done, done)
      return answer
    }, options)
    return {
      // Bounded: the process exits after graceMs whatever is still open.
      async close(graceMs) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const bound = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs)
        })
        const drained = Promise.allSettled([...inFlight]).then(() => server.shutdown())
        await Promise.race([drained, bound])
        clearTimeout(timer)
      },
    }
  },
  onSignal: (signal, listener) => Deno.addSignalListener(signal, listener),
  exit: (code) => Deno.exit(code),
  serviceOptions: denoServiceOptions(),
})
