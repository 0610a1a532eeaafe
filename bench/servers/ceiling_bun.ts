/**
 * Bench server `ceiling-bun` (#31): the ceiling on Bun, `Bun.serve` around the runtime-neutral
 * token endpoint of ceiling_core.ts (client_credentials, code redemption with PKCE, refresh
 * rotation; Gatehouse's keys, algorithms, token contents and store work, in three Maps).
 * Environment: PORT, HOST, SIGNER (ceiling_signers.ts; default node-batch, Bun's fastest: see
 * bench/README.md "#31"), CODES, CODES_FILE. Prints `READY {json}`.
 */
import { CEILING_HEADERS, createCeiling } from './ceiling_core.ts'
import { ceilingSigner } from './ceiling_signers.ts'

declare const Bun: {
  version: string
  serve(options: { port: number; hostname: string; fetch(request: Request): Promise<Response> }): unknown
  write(path: string, text: string): Promise<number>
}

const port = Number(process.env.PORT)
const signer = process.env.SIGNER ?? 'node-batch'
const ceiling = createCeiling(`http://127.0.0.1:${port}`, await ceilingSigner(signer))
const codes = Number(process.env.CODES ?? '0')
if (codes > 0 && process.env.CODES_FILE) await Bun.write(process.env.CODES_FILE, ceiling.createCodes(codes))

const notFound = (): Response => new Response('{"error":"invalid_request"}', { status: 404, headers: CEILING_HEADERS })
Bun.serve({
  port,
  hostname: process.env.HOST ?? '127.0.0.1',
  async fetch(request) {
    if (request.method !== 'POST' || !request.url.endsWith('/token')) return notFound()
    const { status, body } = await ceiling.token(request.headers.get('authorization'), await request.text())
    return new Response(body, { status, headers: CEILING_HEADERS })
  },
})
console.log(`READY ${JSON.stringify({ pid: process.pid, runtime: `bun ${Bun.version}`, signer })}`)
