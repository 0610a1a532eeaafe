/**
 * #39 item 5 on Workers: workerd has no DNS API and no way to pin a `fetch`, so `createWorker`
 * (adapters/workers.ts) lets self-registered clients' host names through
 * (`allowUnpinnedHostNames: true`) and relies on the platform (`global_fetch_strictly_public`,
 * docs/workers.md); a Worker's `configure` can turn it off. Literal private addresses stay refused.
 * `cloudflare:workers` is workerd's: its `waitUntil` is a stand-in here, the global fetch a stub.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { COMPATIBILITY_FLAGS } from '../../../bin/workerd.ts'
import type { TokenServiceOptions } from '../../../src/index.ts'
import { RU } from '../../helpers/service.ts'

vi.mock('cloudflare:workers', () => ({ waitUntil: () => {} }))

const ISSUER = 'https://auth.example.test'

async function authorize(clientId: string, options: Partial<TokenServiceOptions> = {}) {
  const fetched: string[] = []
  vi.stubGlobal('fetch', async (url: string) => {
    fetched.push(String(url))
    return Response.json({ client_id: String(url), client_name: 'Tool', redirect_uris: [RU] })
  })
  const { createWorker } = await import('../../../adapters/workers.ts')
  const worker = createWorker(() => ({
    issuer: ISSUER,
    secretHashIterations: 1000,
    scopes: ['mcp:tools'],
    logger: { warn() {}, error() {} },
    clientIdMetadataDocuments: { scopes: ['mcp:tools'] },
    ...options,
  }))
  const url = new URL(`${ISSUER}/connect/authorize`)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: RU,
    scope: 'mcp:tools',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString()
  const response = await worker.fetch(new Request(url, { redirect: 'manual' }), {}, { waitUntil: () => {} })
  return { status: response.status, text: await response.text(), fetched }
}

describe('#39 item 5 createWorker: host names through the platform', () => {
  afterEach(() => vi.unstubAllGlobals())

  it('#39 item 5 a self-registered document on a host name is fetched by the Worker (allowUnpinnedHostNames, global_fetch_strictly_public)', async () => {
    const document = 'https://tool.example.test/client.json'
    expect(await authorize(document)).toMatchObject({ status: 303, fetched: [document] })
    // start:workers passes the flag to workerd, as wrangler.jsonc does for a deployment.
    expect(COMPATIBILITY_FLAGS).toContain('global_fetch_strictly_public')
  })

  it("#39 item 5 the Worker's configure can turn it off; private literal addresses are refused either way", async () => {
    const off = await authorize('https://tool.example.test/client.json', { allowUnpinnedHostNames: false })
    expect(off).toMatchObject({ status: 400, fetched: [] })
    expect(off.text).toContain('this runtime cannot check')
    const literal = await authorize('https://10.0.0.5/client.json')
    expect(literal).toMatchObject({ status: 400, fetched: [] })
    expect(literal.text).toContain('private or local address')
  })
})
