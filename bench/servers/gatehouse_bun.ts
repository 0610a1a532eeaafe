/**
 * Bench server: Gatehouse on Bun through adapters/bun.ts (@hattip/adapter-bun), in-memory store.
 * Environment: PORT, CODES, CODES_FILE (see gatehouse_setup.ts). Prints `READY {json}`.
 */
import { serveBun } from '../../adapters/bun.ts'
import { setupGatehouse } from './gatehouse_setup.ts'

const service = await setupGatehouse({
  env: (name) => process.env[name],
  writeTextFile: async (path, text) => void (await Bun.write(path, text)),
})
serveBun(service.fetch, { port: Number(process.env.PORT), hostname: process.env.HOST ?? '127.0.0.1' })
console.log(`READY ${JSON.stringify({ pid: process.pid, runtime: `bun ${Bun.version}` })}`)
