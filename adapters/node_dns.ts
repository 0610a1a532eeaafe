/**
 * @module adapters/node_dns
 * Name resolution through `node:dns/promises` for the service's `resolveHost` option, on every
 * runtime that has it (Node, Bun, Deno): the service then refuses a client metadata document
 * whose host name resolves to a private, loopback, link-local or unique-local address.
 */
import { lookup } from 'node:dns/promises'

/**
 * `(hostname) => addresses`: every address the system resolver (getaddrinfo, as the runtime's
 * `fetch` uses) gives for the name, IPv4 and IPv6.
 */
export function nodeResolveHost(): (hostname: string) => Promise<string[]> {
  return async (hostname) => {
    const results = await lookup(hostname, { all: true, verbatim: true })
    return results.map((result) => result.address)
  }
}
