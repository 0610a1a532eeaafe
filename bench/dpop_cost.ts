/**
 * The handler's own cost of a DPoP-bound client_credentials request against the plain one,
 * without sockets (as bench/handler_cost.ts): Gatehouse on Node (memory store, the Node secret
 * digest, signer and SHA-256, as `npm start` runs it) answers pre-built Requests in process, 16 in
 * flight, alternating plain and DPoP batches; each request carries a pre-signed ES256 proof
 * (bench/dpop_proofs.ts). Prints wall and CPU time (all threads: WebCrypto's pool included) per
 * request. A profiling aid (`node --cpu-prof --import tsx bench/dpop_cost.ts`), not a bench cell.
 *
 *   npx tsx bench/dpop_cost.ts [requests per batch] [rounds] [ES256|EdDSA|PS256]
 *
 * The proof's algorithm decides most of the difference: one signature verification per request
 * (ES256 ~70 µs, Ed25519 ~110 µs, RSA-2048 ~20 µs with OpenSSL 3.0 on the bench machine).
 */
import { nodeServiceOptions } from '../adapters/node.ts'
import { type ProofAlg, createDpopProofs } from './dpop_proofs.ts'
import { SERVICE_CLIENT, basicAuth } from './fixtures.ts'
import { setupGatehouse } from './servers/gatehouse_setup.ts'

const count = Number(process.argv[2] ?? '20000')
const rounds = Number(process.argv[3] ?? '3')
const alg = (process.argv[4] ?? 'ES256') as ProofAlg
const service = await setupGatehouse({
  serviceOptions: nodeServiceOptions(),
  env: (name) => (name === 'PORT' ? '3000' : undefined),
  writeTextFile: async () => {},
})
const body = 'grant_type=client_credentials&scope=api1'
const headers = { authorization: basicAuth(SERVICE_CLIENT), 'content-type': 'application/x-www-form-urlencoded' }
const request = (proof?: string): Request =>
  new Request(service.endpoints.token, { method: 'POST', headers: proof ? { ...headers, dpop: proof } : headers, body })

/** Answers `requests` 16 at a time; µs of wall and CPU time per request. */
async function run(requests: Request[], tokenType: string): Promise<{ wall: number; cpu: number }> {
  let next = 0
  const cpu = process.cpuUsage()
  const started = performance.now()
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < requests.length) {
        const response = await service.fetch(requests[next++] as Request, { address: '127.0.0.1' })
        const text = await response.text()
        if (response.status !== 200 || !text.includes(`"token_type":"${tokenType}"`)) {
          throw new Error(`status ${response.status}: ${text}`)
        }
      }
    }),
  )
  const used = process.cpuUsage(cpu)
  return {
    wall: ((performance.now() - started) * 1000) / requests.length,
    cpu: (used.user + used.system) / requests.length,
  }
}

// One proof per request of every batch (the warm-up's included), all signed before timing starts.
const proofs = createDpopProofs(count * (rounds + 1) + 1, service.endpoints.token, 'POST', alg)
let proofIndex = 1
const dpopBatch = () => Array.from({ length: count }, () => request(proofs.proof(proofIndex++)))
const plainBatch = () => Array.from({ length: count }, () => request())

await run(plainBatch().slice(0, 5000), 'Bearer') // warm-up
await run(dpopBatch(), 'DPoP')
const results = { plain: [] as { wall: number; cpu: number }[], dpop: [] as { wall: number; cpu: number }[] }
for (let round = 0; round < rounds; round++) {
  results.plain.push(await run(plainBatch(), 'Bearer'))
  results.dpop.push(await run(dpopBatch(), 'DPoP'))
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const summary = (kind: 'plain' | 'dpop') => ({
  wall: median(results[kind].map((r) => r.wall)),
  cpu: median(results[kind].map((r) => r.cpu)),
})
const plain = summary('plain')
const dpop = summary('dpop')
console.log(
  `client_credentials: ${plain.wall.toFixed(1)} µs wall, ${plain.cpu.toFixed(1)} µs CPU per request\n` +
    `client_credentials with DPoP (${alg} proofs): ${dpop.wall.toFixed(1)} µs wall, ${dpop.cpu.toFixed(1)} µs CPU per request\n` +
    `ratio (DPoP / plain): ${(dpop.wall / plain.wall).toFixed(2)} wall, ${(dpop.cpu / plain.cpu).toFixed(2)} CPU ` +
    `(${count} requests per batch, median of ${rounds} rounds)`,
)
await service.close()
