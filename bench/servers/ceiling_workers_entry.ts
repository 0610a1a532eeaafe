/**
 * The Worker of bench server `ceiling-workers` (#31): the ceiling on workerd, a module Worker
 * (`export default { fetch }`) around the runtime-neutral token endpoint of ceiling_core.ts
 * (client_credentials, code redemption with PKCE, refresh rotation; Gatehouse's keys, algorithms,
 * token contents and store work, in three Maps). Bundled and run by ceiling_workers.ts.
 *
 * - Signing: WebCrypto (`SIGNER=webcrypto` of ceiling_signers.ts), as Gatehouse signs on workerd;
 *   workerd's node:crypto was no faster in a timing run (bench/README.md "#31").
 * - The verified-secret cache's keyed hash: node:crypto's synchronous HMAC-SHA-256 (nodejs_compat).
 *   workerd's node:crypto is BoringSSL's, which has no SHA3; Gatehouse on workerd remembers
 *   verified secrets as a WebCrypto HMAC-SHA-256 (asynchronous), so the ceiling's is the cheaper
 *   of the two.
 * - workerd refuses random values outside a request: the ceiling (its keys, `kid`s and secret
 *   key) is made on the first request, for the issuer in the ISSUER binding.
 * - `POST /bench/codes?count=N` (bench only): N codes as Gatehouse's authorization endpoint leaves
 *   them (ceiling_core.ts `createCodes`), one a line; the launcher writes them to CODES_FILE.
 */
import { createHmac } from 'node:crypto'
import { CEILING_HEADERS, createCeiling } from './ceiling_core.ts'
import { ceilingSigner } from './ceiling_signers.ts'

interface Env {
  ISSUER: string
  SIGNER?: string
}

type Ceiling = ReturnType<typeof createCeiling>
let ceiling: Promise<Ceiling> | undefined

const hmacSecretDigest = (key: string, secret: string): string =>
  createHmac('sha256', key).update(secret).digest('base64url')

const notFound = (): Response => new Response('{"error":"invalid_request"}', { status: 404, headers: CEILING_HEADERS })

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    ceiling ??= ceilingSigner(env.SIGNER ?? 'webcrypto').then((sign) =>
      createCeiling(env.ISSUER, sign, { secretDigest: hmacSecretDigest }),
    )
    const ready = await ceiling
    if (request.method !== 'POST') return notFound()
    if (request.url.endsWith('/token')) {
      const { status, body } = await ready.token(request.headers.get('authorization'), await request.text())
      return new Response(body, { status, headers: CEILING_HEADERS })
    }
    const url = new URL(request.url)
    if (url.pathname === '/bench/codes') {
      return new Response(ready.createCodes(Number(url.searchParams.get('count') ?? '0')), {
        headers: { 'content-type': 'text/plain' },
      })
    }
    return notFound()
  },
}
