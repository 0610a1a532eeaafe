/**
 * @module security/outbound
 * Server-side requests to URLs a stranger chose (a self-registered client's `jwks_uri` and
 * `backchannel_logout_uri`, a Client ID Metadata Document): where they may connect (#39 item 5).
 *
 * Checks, in order (`fetchPublic`):
 * - a literal host must be a public address (`isPublicAddress`); `localhost` names are refused
 * - a host name goes through, in this order of preference:
 *   1. the host's own `fetch` for these requests (an option's `fetch`: an egress proxy, a test
 *      double), after the `resolveHost` check when there is one: the connection is the host's
 *   2. the runtime's `outboundFetch` (adapters/node_outbound.ts on Node, Bun and Deno): it resolves
 *      the name once, refuses the request when any address is not public, and connects to a
 *      checked address, so a name that resolves differently the second time (DNS rebinding)
 *      reaches nothing private
 *   3. with `allowUnpinnedHostNames` (the host opts in: a platform that keeps fetches off private
 *      networks, as Cloudflare Workers, or an egress firewall), the `resolveHost` check when there
 *      is one, then the global `fetch`, which resolves the name again: rebinding stays open
 *   4. otherwise it is refused: a plain Web runtime cannot see where a name leads
 */
import { isPublicAddress } from './networks.ts'

/** A fetch as the options take it. */
export type PlainFetch = (url: string, init: RequestInit) => Promise<Response>

/**
 * A runtime's fetch that connects only where `allowAddress` agrees: it resolves the URL's host
 * name once, rejects (connecting nowhere) when `allowAddress` refuses any resolved address, and
 * connects to one of the checked addresses (TLS still verifies the certificate for the host name).
 * No redirect is followed; the response's body is a stream the caller reads within its own limit.
 */
export type OutboundFetch = (
  url: string,
  init: RequestInit,
  allowAddress: (address: string) => boolean,
) => Promise<Response>

/** How a guarded request may go out (see the module comment). */
export interface OutboundOptions {
  /** The host's own fetch for these requests (used as is, after the literal and resolver checks). */
  fetch?: PlainFetch | undefined
  /** The runtime's pinning fetch (`outboundFetch` option). */
  outboundFetch?: OutboundFetch | undefined
  /** The runtime's name resolution (`resolveHost` option), checked before an unpinned fetch. */
  resolveHost?: ((hostname: string) => Promise<string[]>) | undefined
  /** Host names may go out unpinned (`allowUnpinnedHostNames` option). */
  allowUnpinnedHostNames?: boolean | undefined
}

/** Why a request was not sent: a non-public address, a name that did not resolve, or a host name with no way to pin it. */
export type OutboundRefusal = 'private' | 'unresolved' | 'host_name'

/** What `fetchPublic` did: the response, or why nothing was sent. */
export type OutboundResult = { response: Response } | { refused: OutboundRefusal }

const globalFetch: PlainFetch = (url, init) => fetch(url, init)

/** Every address `resolveHost` gives for `name` is public (a refusal otherwise). */
async function checkResolved(
  name: string,
  resolveHost: (hostname: string) => Promise<string[]>,
): Promise<OutboundRefusal | undefined> {
  let addresses: unknown
  try {
    addresses = await resolveHost(name)
  } catch {
    return 'unresolved'
  }
  if (!Array.isArray(addresses) || addresses.length === 0) return 'unresolved'
  return addresses.some((address) => isPublicAddress(String(address)) !== true) ? 'private' : undefined
}

/**
 * Sends a request to a URL a stranger chose, only toward public addresses (see the module comment).
 * Resolves with the response or the refusal; a network failure rejects as the fetch did.
 */
export async function fetchPublic(url: URL, init: RequestInit, options: OutboundOptions): Promise<OutboundResult> {
  const literal = isPublicAddress(url.hostname)
  if (literal === false) return { refused: 'private' }
  const name = url.hostname.toLowerCase().replace(/\.$/, '')
  if (literal === undefined && (name === 'localhost' || name.endsWith('.localhost'))) return { refused: 'private' }
  const pinned = options.fetch === undefined ? options.outboundFetch : undefined
  if (literal === undefined && !pinned) {
    if (options.fetch === undefined && !options.allowUnpinnedHostNames) return { refused: 'host_name' }
    const refusal = options.resolveHost ? await checkResolved(name, options.resolveHost) : undefined
    if (refusal) return { refused: refusal }
  }
  if (!pinned) return { response: await (options.fetch ?? globalFetch)(url.href, init) }
  let refused = false
  const allowAddress = (address: string): boolean => {
    const allowed = isPublicAddress(address) === true
    if (!allowed) refused = true
    return allowed
  }
  try {
    return { response: await pinned(url.href, init, allowAddress) }
  } catch (err) {
    if (refused) return { refused: 'private' }
    throw err
  }
}
