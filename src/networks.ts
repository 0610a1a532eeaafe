/**
 * @module networks
 * Source-network restrictions for clients: CIDR ranges (IPv4 and IPv6) parsed and matched with
 * ipaddr.js. IPv4 addresses must be in four-part decimal form; IPv4-mapped IPv6 addresses
 * (`::ffff:10.0.0.1`, as dual-stack servers report IPv4 peers) match IPv4 ranges.
 */
import ipaddr from 'ipaddr.js'

type Address = ipaddr.IPv4 | ipaddr.IPv6
type Range = [Address, number]

function parseAddress(value: string): Address | undefined {
  const text = value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text)
  if (!text.includes(':') || !ipaddr.IPv6.isValid(text)) return undefined
  const v6 = ipaddr.IPv6.parse(text)
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6
}

function parseRange(value: string): Range | undefined {
  const slash = value.indexOf('/')
  if (slash < 0) {
    const address = parseAddress(value)
    return address && [address, address.kind() === 'ipv4' ? 32 : 128]
  }
  const text = value.slice(0, slash)
  const address = parseAddress(text)
  const bitsText = value.slice(slash + 1)
  if (!address || !/^\d{1,3}$/.test(bitsText)) return undefined
  let bits = Number(bitsText)
  // An IPv4-mapped range (`::ffff:10.0.0.0/104`) was turned into IPv4: drop the 96 mapped bits.
  if (address.kind() === 'ipv4' && text.includes(':')) {
    if (bits < 96) return undefined
    bits -= 96
  }
  return bits <= (address.kind() === 'ipv4' ? 32 : 128) ? [address, bits] : undefined
}

/** Whether `value` is an IPv4/IPv6 address or CIDR range we accept in `allowedNetworks`. */
export function isCidr(value: string): boolean {
  return parseRange(value) !== undefined
}

/** Creates a matcher for a list of ranges (validated at registration). */
export function networkMatcher(ranges: readonly string[]): (address: string | undefined) => boolean {
  const parsed = ranges.map(parseRange).filter((range): range is Range => range !== undefined)
  return (address) => {
    if (address === undefined) return false
    const ip = parseAddress(address)
    if (!ip) return false
    return parsed.some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits))
  }
}

/**
 * The canonical text of an IP address (IPv4-mapped IPv6 as IPv4, IPv6 compressed), or undefined
 * when `value` is not an address: what the service keeps as a request's source address.
 */
export function canonicalAddress(value: string | undefined): string | undefined {
  if (value === undefined || value.length > 64) return undefined
  if (DOTTED_QUAD.test(value)) return value // already canonical: the common case, without parsing
  return parseAddress(value)?.toString()
}

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)'
const DOTTED_QUAD = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`)

/**
 * The unit that throttling counts for an address: the address for IPv4, its /64 for IPv6 (one
 * host commonly holds a whole /64, so single IPv6 addresses would give an attacker endless keys).
 */
export function addressBucket(address: string): string {
  if (DOTTED_QUAD.test(address)) return address
  const ip = parseAddress(address)
  if (!ip || ip.kind() === 'ipv4') return address
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16))
  return `${parts.join(':')}::/64`
}

const matchers = new Map<string, (address: string | undefined) => boolean>()

/** Whether `address` lies in one of `ranges`; an unknown address never does. Matchers are cached. */
export function inNetworks(address: string | undefined, ranges: readonly string[]): boolean {
  const key = ranges.join(',')
  let matcher = matchers.get(key)
  if (!matcher) {
    if (matchers.size >= 1000) matchers.clear()
    matcher = networkMatcher(ranges)
    matchers.set(key, matcher)
  }
  return matcher(address)
}

/**
 * Whether an IP address is globally routable unicast: not private (RFC 1918), loopback,
 * link-local, unique-local (fc00::/7), carrier-grade NAT, multicast, unspecified, reserved, nor a
 * translation range that may embed one of those (6to4, Teredo, NAT64). Undefined when `address`
 * is not an IP address.
 */
export function isPublicAddress(address: string): boolean | undefined {
  const ip = parseAddress(address)
  return ip === undefined ? undefined : ip.range() === 'unicast'
}

/** Whether a hostname names this machine (localhost, 127.0.0.0/8, ::1). */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}
