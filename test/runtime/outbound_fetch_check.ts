/**
 * Run by outbound_fetch.test.ts under Node (tsx), Bun and Deno (#39 item 5): `nodeOutboundFetch`
 * on the runtime's own node:http/node:https, against https origins on 127.0.0.1 and 127.0.0.2
 * (same port) that count connections, and a service that uses it. Name resolution is injected
 * (the names are made up); everything else is the runtime's. Prints one JSON line of what it
 * observed; the test judges it. Argument: the directory of key.pem and cert.pem (*.example.test).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import process from 'node:process'
import { type ResolvedAddress, nodeOutboundFetch } from '../../adapters/node_outbound.ts'
import { createClientKeySource } from '../../src/clients/jwks.ts'
import { createTokenService } from '../../src/index.ts'
import { countingOrigin } from '../helpers/counting_origin.ts'

const dir = process.argv[2] as string
const key = readFileSync(join(dir, 'key.pem'), 'utf8')
const cert = readFileSync(join(dir, 'cert.pem'), 'utf8')
const RU = 'https://rp.example.test/cb'
const runtime = 'Bun' in globalThis ? 'bun' : 'Deno' in globalThis ? 'deno' : 'node'

let documentUrl = ''
const loopback = await countingOrigin({
  key,
  cert,
  host: '127.0.0.1',
  handle: (request, response) => {
    if (request.url === '/hang') return
    if (request.url === '/big') {
      // An endless JSON body: the reader must stop at its limit and close the connection.
      response.writeHead(200, { 'content-type': 'application/json' })
      response.write('{"keys":[],"pad":"')
      const timer = setInterval(() => response.write('x'.repeat(16_384)), 1)
      response.on('close', () => clearInterval(timer))
      return
    }
    if (request.url === '/client.json') {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ client_id: documentUrl, client_name: 'Tool', redirect_uris: [RU] }))
      return
    }
    response.end('loopback')
  },
})
const port = loopback.port
documentUrl = `https://tool.example.test:${port}/client.json`
const other = await countingOrigin({
  key,
  cert,
  host: '127.0.0.2',
  port,
  handle: (_q, response) => response.end('other'),
})

const answers = (...addresses: string[]): ResolvedAddress[] =>
  addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
const to =
  (...addresses: string[]) =>
  async () =>
    answers(...addresses)
const outcome = async (run: () => Promise<Response>) => {
  try {
    const response = await run()
    return { status: response.status, body: await response.text() }
  } catch (err) {
    const code = (err as { code?: unknown }).code
    return { error: typeof code === 'string' ? code : (err as Error).name }
  }
}
const url = (path: string) => `https://tool.example.test:${port}${path}`
const onlyLoopback = (address: string) => address === '127.0.0.1'
const publicOnly = (address: string) => !address.startsWith('127.') && address !== '::1'

const before = loopback.connections
const allowed = await outcome(() =>
  nodeOutboundFetch({ resolve: to('127.0.0.1'), ca: cert })(url('/hi'), {}, onlyLoopback),
)
const afterAllowed = loopback.connections
const refused = await outcome(() =>
  nodeOutboundFetch({ resolve: to('127.0.0.1'), ca: cert })(url('/hi'), {}, publicOnly),
)
const mixed = await outcome(() =>
  nodeOutboundFetch({ resolve: to('93.184.216.34', '127.0.0.1'), ca: cert })(url('/hi'), {}, publicOnly),
)
const literal = await outcome(() => nodeOutboundFetch({ ca: cert })(`https://127.0.0.1:${port}/hi`, {}, publicOnly))
const afterRefusals = loopback.connections

// Rebinding: the first answer is the allowed 127.0.0.2, any later one 127.0.0.1.
let lookups = 0
const rebinding = async () => (lookups++ === 0 ? answers('127.0.0.2') : answers('127.0.0.1'))
const onlyOther = (address: string) => address === '127.0.0.2'
const beforeRebound = loopback.connections
const rebound = await outcome(() => nodeOutboundFetch({ resolve: rebinding, ca: cert })(url('/hi'), {}, onlyOther))

const reboundConnections = { loopback: loopback.connections - beforeRebound, other: other.connections }

const started = Date.now()
const hung = await outcome(() =>
  nodeOutboundFetch({ resolve: to('127.0.0.1'), ca: cert })(
    url('/hang'),
    { signal: AbortSignal.timeout(200) },
    onlyLoopback,
  ),
)
const hangMs = Date.now() - started

// The service: a document on a name that resolves to 127.0.0.1 gets no connection; with a
// test-only allowance for loopback the same document is read.
async function authorize(allowLoopback: boolean): Promise<number> {
  const pinned = nodeOutboundFetch({ resolve: to('127.0.0.1'), ca: cert })
  const service = createTokenService({
    issuer: 'https://auth.example.test',
    secretHashIterations: 1000,
    scopes: ['mcp:tools'],
    logger: { warn() {}, error() {} },
    clientIdMetadataDocuments: { scopes: ['mcp:tools'] },
    outboundFetch: allowLoopback ? (u, init, allow) => pinned(u, init, (a) => onlyLoopback(a) || allow(a)) : pinned,
  })
  const authorizeUrl = new URL('https://auth.example.test/connect/authorize')
  authorizeUrl.search = new URLSearchParams({
    response_type: 'code',
    client_id: documentUrl,
    redirect_uri: RU,
    scope: 'mcp:tools',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString()
  const response = await service.fetch(new Request(authorizeUrl, { redirect: 'manual' }))
  await response.body?.cancel()
  return response.status
}
// A self-registered client's endless jwks_uri: cut at 64 KiB, well within the time-out.
const bigStarted = Date.now()
const pinnedLoopback = nodeOutboundFetch({ resolve: to('127.0.0.1'), ca: cert })
const keys = createClientKeySource({
  now: () => Math.floor(Date.now() / 1000),
  timeoutMs: 5000,
  outboundFetch: (u, init, allow) => pinnedLoopback(u, init, (a) => onlyLoopback(a) || allow(a)),
})
const big = await keys.keysFor({ clientId: 'self', jwksUri: url('/big'), registration: {} }).then(
  () => 'read',
  (err: Error) => err.message,
)
const bigBounded = Date.now() - bigStarted < 4000

const beforeService = loopback.connections
const serviceRefused = await authorize(false)
const afterServiceRefused = loopback.connections
const serviceAllowed = await authorize(true)
const afterServiceAllowed = loopback.connections

await loopback.close()
await other.close()
console.log(
  JSON.stringify({
    runtime,
    allowed,
    allowedConnections: afterAllowed - before,
    names: [...new Set(loopback.names)],
    refused,
    mixed,
    literal,
    refusedConnections: afterRefusals - afterAllowed,
    rebound,
    lookups,
    reboundConnections,
    hung,
    hangBounded: hangMs < 2000,
    big,
    bigBounded,
    serviceRefused,
    serviceRefusedConnections: afterServiceRefused - beforeService,
    serviceAllowed,
    serviceAllowedConnections: afterServiceAllowed - afterServiceRefused,
  }),
)
process.exit(0)
