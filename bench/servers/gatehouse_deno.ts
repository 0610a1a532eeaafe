/**
 * Bench server: Gatehouse on Deno through adapters/deno.ts (Deno.serve), in-memory store, with
 * `denoServiceOptions()` as `npm run start:deno` passes.
 * Environment: PORT, CODES, CODES_FILE (see gatehouse_setup.ts); DENO_SIGNER=node-rsa (#31, the
 * `gatehouse-deno-node-rsa` row): RS256 and ES256 through Deno's node:crypto as well, not WebCrypto,
 * the A/B of the shipped choice. Prints `READY {json}`.
 */
import { denoServiceOptions, serveDeno } from '../../adapters/deno.ts'
import { nodeSigner } from '../../adapters/node_crypto.ts'
import { setupGatehouse } from './gatehouse_setup.ts'

// The Deno API used here, declared for tsc (bench/ is type-checked with Node's types; Deno
// itself brings the real ones).
declare const Deno: {
  env: { get(name: string): string | undefined }
  writeTextFile(path: string, text: string): Promise<void>
  pid: number
  version: { deno: string }
}

const service = await setupGatehouse({
  serviceOptions:
    Deno.env.get('DENO_SIGNER') === 'node-rsa'
      ? { ...denoServiceOptions(), signer: nodeSigner({ algorithms: ['EdDSA', 'RS256', 'ES256'], batch: false }) }
      : denoServiceOptions(),
  env: (name) => Deno.env.get(name),
  writeTextFile: (path, text) => Deno.writeTextFile(path, text),
})
await serveDeno(service.fetch, { port: Number(Deno.env.get('PORT')), hostname: Deno.env.get('HOST') ?? '127.0.0.1' })
console.log(`READY ${JSON.stringify({ pid: Deno.pid, runtime: `deno ${Deno.version.deno}` })}`)
