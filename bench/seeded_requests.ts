/**
 * Requests that introspect a uniformly random one of the seeded refresh tokens, for autocannon
 * (bench/load.ts and bench/cpu_cost.ts).
 *
 * autocannon rebuilds a request from its options whenever it has a `setupRequest` (object spreads,
 * header joins, three Buffers: ~12 KB allocated per request, measured), and at 40k+ req/s the load
 * process's own scavenges then show up in the latencies it reports. Here each connection keeps
 * autocannon's own bytes of the request for token 0 and sends a copy with the token overwritten
 * (every seeded token has the same length), through `setupClient`.
 */
import { seedTokenValue } from './fixtures.ts'

/** What `setupClient` sees of an autocannon connection (its `getRequestBuffer` is replaceable). */
export interface AutocannonClient {
  getRequestBuffer(): Buffer
}

/** The form body autocannon is given (the request for token 0). */
export const firstSeededBody = () => new URLSearchParams({ token: seedTokenValue(0) }).toString()

/** autocannon's `setupClient`: each request of the connection presents a random one of `count` tokens. */
export function randomSeededToken(count: number): (client: AutocannonClient) => void {
  const first = seedTokenValue(0)
  return (client) => {
    if (typeof client.getRequestBuffer !== 'function') throw new Error('autocannon client without getRequestBuffer')
    const template = client.getRequestBuffer()
    const offset = template.lastIndexOf(first)
    if (offset < 0 || offset + first.length !== template.length) throw new Error('unexpected request layout')
    client.getRequestBuffer = () => {
      const bytes = Buffer.allocUnsafe(template.length)
      template.copy(bytes, 0, 0, offset)
      bytes.write(seedTokenValue(Math.floor(Math.random() * count)), offset, 'latin1')
      return bytes
    }
  }
}
