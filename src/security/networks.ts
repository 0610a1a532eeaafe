/**
 * @module security/networks
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

/**
 * The wider network an address belongs to, for limits that a holder of many addresses must not
 * escape (#39 item 7): its /24 for IPv4, its /48 for IPv6 (the usual assignment to one site, which
 * holds 65,536 /64s). Undefined when `address` is not an IP address.
 */
export function networkBucket(address: string): string | undefined {
  const ip = parseAddress(address)
  if (!ip) return undefined
  if (ip.kind() === 'ipv4') return `${(ip as ipaddr.IPv4).octets.slice(0, 3).join('.')}.0/24`
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 3).map((part) => part.toString(16))
  return `${parts.join(':')}::/48`
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

/** The IPv4 address in the last 32 bits of an IPv6 address (RFC 6052 §2.2 with a /96 prefix). */
function lastIpv4(ip: ipaddr.IPv6): ipaddr.IPv4 {
  const [high = 0, low = 0] = ip.parts.slice(6)
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])
}

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one in a way a host may meet in
 * practice: NAT64 with the well-known prefix `64:ff9b::/96` (RFC 6052 §2.1, what DNS64 answers on
 * an IPv6-only network) and 6to4 `2002::/16` (RFC 3056 §2: bits 16–47). Undefined otherwise.
 * IPv4-mapped addresses never get here: `parseAddress` turns them into IPv4 already.
 */
function embeddedIpv4(ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const [p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0] = ip.parts
  if (p0 === 0x64 && p1 === 0xff9b && p2 === 0 && p3 === 0 && p4 === 0 && p5 === 0) return lastIpv4(ip)
  if (p0 === 0x2002) return new ipaddr.IPv4([p1 >> 8, p1 & 0xff, p2 >> 8, p2 & 0xff])
  return undefined
}

/**
 * Whether an IP address is globally routable unicast: not private (RFC 1918), loopback,
 * link-local, unique-local (fc00::/7), carrier-grade NAT, multicast, unspecified, reserved.
 * An IPv6 address that embeds an IPv4 address is judged by that address (IPv4-mapped
 * `::ffff:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`); the other embedding forms are refused
 * whatever they embed: IPv4-compatible `::/96` (deprecated, RFC 4291 §2.5.5.1: `::7f00:1` is
 * 127.0.0.1 to some stacks), IPv4-translated `::ffff:0:0:0/96` (RFC 6145), NAT64 local-use
 * `64:ff9b:1::/48` (RFC 8215: the embedding is the network's choice) and Teredo `2001::/32`
 * (RFC 4380: the client address is obfuscated). Undefined when `address` is not an IP address.
 */
export function isPublicAddress(address: string): boolean | undefined {
  const ip = parseAddress(address)
  if (ip === undefined) return undefined
  if (ip.kind() === 'ipv4') return ip.range() === 'unicast'
  const v6 = ip as ipaddr.IPv6
  const embedded = embeddedIpv4(v6)
  if (embedded !== undefined) return embedded.range() === 'unicast'
  // ::/96: the IPv4-compatible form (and ::, ::1), never a public address.
  if (v6.parts.slice(0, 6).every((part) => part === 0)) return false
  return v6.range() === 'unicast'
}

/** Whether a hostname names this machine (localhost, 127.0.0.0/8, ::1). */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}
