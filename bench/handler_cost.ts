/**
 * The handler's own cost per request, without sockets: Gatehouse on Node (memory store, the Node
 * secret digest and signer, as `npm start` runs it) answers pre-built Requests in process, 16 in
 * flight, and the time per request is printed next to what the bare signature costs. A profiling
 * aid for `node --cpu-prof`, not part of the benchmark table.
 *
 *   npx tsx bench/handler_cost.ts [client_credentials|introspection] [requests]
 */
import { generateKeyPairSync, sign } from 'node:crypto'
import { nodeServiceOptions } from '../adapters/node.ts'
import { SERVICE_CLIENT, basicAuth } from './fixtures.ts'
import { setupGatehouse } from './servers/gatehouse_setup.ts'

const scenario = process.argv[2] ?? 'client_credentials'
const count = Number(process.argv[3] ?? '50000')
const service = await setupGatehouse({
  serviceOptions: nodeServiceOptions(),
  env: (name) => (name === 'PORT' ? '3000' : undefined),
  writeTextFile: async () => {},
})

async function tokenBody(): Promise<string> {
  const response = await service.fetch(request(service.endpoints.token, 'grant_type=client_credentials&scope=api1'))
  return ((await response.json()) as { access_token: string }).access_token
}

function request(url: string, body: string): Request {
  return new Request(url, {
    method: 'POST',
    headers: { authorization: basicAuth(SERVICE_CLIENT), 'content-type': 'application/x-www-form-urlencoded' },
    body,
  })
}

const [url, body] =
  scenario === 'introspection'
    ? [service.endpoints.introspection, `token=${await tokenBody()}`]
    : [service.endpoints.token, 'grant_type=client_credentials&scope=api1']

async function run(n: number): Promise<number> {
  const requests = Array.from({ length: n }, () => request(url, body))
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < requests.length) {
        const response = await service.fetch(requests[next++] as Request, { address: '127.0.0.1' })
        if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`)
        await response.text()
      }
    }),
  )
  return ((performance.now() - started) * 1000) / n
}

await run(Math.min(count, 10_000)) // warm-up
const perRequest = await run(count)
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
const input = Buffer.from('x'.repeat(400))
const signStarted = performance.now()
for (let i = 0; i < 10_000; i++) sign('sha256', input, { key: privateKey, dsaEncoding: 'ieee-p1363' })
const signCost = ((performance.now() - signStarted) * 1000) / 10_000
console.log(
  `${scenario}: ${perRequest.toFixed(1)} µs per request in process (${count} requests); one ES256 signature: ${signCost.toFixed(1)} µs`,
)
await service.close()
