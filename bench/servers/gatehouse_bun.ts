/**
 * Bench server: Gatehouse on Bun through adapters/bun.ts (@hattip/adapter-bun), in-memory store,
 * with `bunServiceOptions()` (node:crypto digests and batched signatures) as shipped.
 * Environment: PORT, CODES, CODES_FILE (see gatehouse_setup.ts). Prints `READY {json}`.
 */
import { bunServiceOptions, serveBun } from '../../adapters/bun.ts'
import { setupGatehouse } from './gatehouse_setup.ts'

const service = await setupGatehouse({
  // The same runtime options as `npm run start:bun` (bin/serve_bun.ts).
  serviceOptions: bunServiceOptions(),
  env: (name) => process.env[name],
  writeTextFile: async (path, text) => void (await Bun.write(path, text)),
})
serveBun(service.fetch, { port: Number(process.env.PORT), hostname: process.env.HOST ?? '127.0.0.1' })
console.log(`READY ${JSON.stringify({ pid: process.pid, runtime: `bun ${Bun.version}` })}`)
