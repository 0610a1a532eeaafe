/**
 * Bench server `ceiling-deno` (#31): the ceiling on Deno, `Deno.serve` around the runtime-neutral
 * token endpoint of ceiling_core.ts (client_credentials, code redemption with PKCE, refresh
 * rotation; Gatehouse's keys, algorithms, token contents and store work, in three Maps).
 * Environment: PORT, HOST, SIGNER (ceiling_signers.ts; default the fastest measured on Deno: see
 * bench/README.md "#31"), CODES, CODES_FILE. Prints `READY {json}`.
 */
import { CEILING_HEADERS, createCeiling } from './ceiling_core.ts'
import { ceilingSigner } from './ceiling_signers.ts'

// The Deno API used here, declared for tsc (bench/ is type-checked with Node's types).
declare const Deno: {
  env: { get(name: string): string | undefined }
  writeTextFile(path: string, text: string): Promise<void>
  serve(
    options: { port: number; hostname: string; onListen?: () => void },
    handler: (request: Request) => Promise<Response>,
  ): unknown
  pid: number
  version: { deno: string }
}

const port = Number(Deno.env.get('PORT'))
const signer = Deno.env.get('SIGNER') ?? 'webcrypto'
const ceiling = createCeiling(`http://127.0.0.1:${port}`, await ceilingSigner(signer))
const codes = Number(Deno.env.get('CODES') ?? '0')
const codesFile = Deno.env.get('CODES_FILE')
if (codes > 0 && codesFile) await Deno.writeTextFile(codesFile, ceiling.createCodes(codes))

const notFound = (): Response => new Response('{"error":"invalid_request"}', { status: 404, headers: CEILING_HEADERS })
await new Promise<void>((resolve) => {
  Deno.serve({ port, hostname: Deno.env.get('HOST') ?? '127.0.0.1', onListen: resolve }, async (request) => {
    if (request.method !== 'POST' || !request.url.endsWith('/token')) return notFound()
    const { status, body } = await ceiling.token(request.headers.get('authorization'), await request.text())
    return new Response(body, { status, headers: CEILING_HEADERS })
  })
})
console.log(`READY ${JSON.stringify({ pid: Deno.pid, runtime: `deno ${Deno.version.deno}`, signer })}`)
