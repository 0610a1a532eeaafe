/**
 * @module adapters/node_outbound
 * The service's `outboundFetch` (#39 item 5) through `node:http` and `node:https`, on every runtime
 * whose connections honour their `lookup` option: Node, Bun and Deno (each checked with its own
 * binary by test/runtime/outbound_fetch.test.ts). The host name is resolved once, by the `lookup`
 * the connection calls; every address it gives must pass `allowAddress` or the request fails
 * before any connection; the socket then connects to one of those checked addresses, so a name
 * that answers differently a second time (DNS rebinding) never gets a second lookup. TLS still
 * sends the host name (SNI) and verifies the certificate against it.
 *
 * Bounded as the service's own fetches are: no redirect is followed (a 3xx is answered as is),
 * the caller's `signal` ends the request and its body, a fresh connection per request (no pooled
 * socket from an earlier lookup), response headers at most 16 KiB; the body is a stream with
 * backpressure that the service reads up to its own limit (64 KiB) and cancels.
 */
import { lookup as systemLookup } from 'node:dns'
import { type IncomingMessage, request as httpRequest, type RequestOptions } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP } from 'node:net'
import type { OutboundFetch } from '../src/security/index.ts'

/** One resolved address, as `node:dns` `lookup` gives them. */
export interface ResolvedAddress {
  address: string
  family: number
}

export interface NodeOutboundFetchOptions {
  /**
   * Resolves a host name to all its addresses. Default: `node:dns` `lookup` with `all: true`
   * (getaddrinfo, as the runtime's own `fetch` resolves).
   */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>
  /** Certificates to trust for https (e.g. a test CA); default: the runtime's trust store. */
  ca?: string | Uint8Array
}

type LookupCallback = (err: Error | null, address: string | ResolvedAddress[], family?: number) => void

/** An address `allowAddress` refused (the request connects nowhere). */
export class RefusedAddressError extends Error {
  readonly code = 'ERR_ADDRESS_REFUSED'
  constructor(hostname: string) {
    super(`${hostname} resolves to an address that may not be fetched`)
    this.name = 'RefusedAddressError'
  }
}

const defaultResolve = (hostname: string): Promise<ResolvedAddress[]> =>
  new Promise((resolve, reject) =>
    systemLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  )

/**
 * The `lookup` of one request: resolves once (a second call reuses the answer), refuses unless
 * every address passes `allowAddress`, and answers with the checked addresses only.
 */
function pinnedLookup(
  resolveName: (hostname: string) => Promise<ResolvedAddress[]>,
  allowAddress: (address: string) => boolean,
): (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback) => void {
  let answer: Promise<ResolvedAddress[]> | undefined
  return (hostname, options, callback) => {
    answer ??= resolveName(hostname).then((addresses) => {
      if (!Array.isArray(addresses) || addresses.length === 0) throw new Error(`${hostname} has no address`)
      // Every address, not just the one used: a name with any private address is refused whole.
      const refused = addresses.filter((entry) => !allowAddress(entry.address))
      if (refused.length > 0) throw new RefusedAddressError(hostname)
      return addresses
    })
    answer.then(
      (addresses) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0)
        const usable = family === 4 || family === 6 ? addresses.filter((entry) => entry.family === family) : addresses
        const first = usable[0]
        if (!first) callback(new Error(`${hostname} has no IPv${family} address`), '')
        else if (options.all) callback(null, usable)
        else callback(null, first.address, first.family)
      },
      (err: Error) => callback(err, ''),
    )
  }
}

/** The request body as bytes (the service sends strings; forms and bytes are accepted too). */
function bodyBytes(body: RequestInit['body']): Uint8Array | undefined {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return new TextEncoder().encode(body)
  if (body instanceof URLSearchParams) return new TextEncoder().encode(body.toString())
  if (body instanceof Uint8Array) return body
  throw new TypeError('nodeOutboundFetch sends string, URLSearchParams or Uint8Array bodies only')
}

/** A Web Response over an incoming message: the body streams with backpressure and cancels the socket. */
function toResponse(message: IncomingMessage, method: string, done: () => void): Response {
  const headers = new Headers()
  for (let i = 0; i + 1 < message.rawHeaders.length; i += 2) {
    headers.append(message.rawHeaders[i] as string, message.rawHeaders[i + 1] as string)
  }
  const status = message.statusCode ?? 0
  if (status < 200 || status > 599) {
    message.destroy()
    throw new TypeError(`unexpected HTTP status ${status}`)
  }
  if (method === 'HEAD' || status === 204 || status === 205 || status === 304) {
    message.destroy()
    done()
    return new Response(null, { status, statusText: message.statusMessage ?? '', headers })
  }
  message.pause()
  // Once the body ended, failed or was cancelled, the stream takes nothing more.
  let finished = false
  const finish = (): boolean => {
    if (finished) return false
    finished = true
    done()
    return true
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      message.on('data', (chunk: Uint8Array) => {
        if (finished) return
        controller.enqueue(new Uint8Array(chunk))
        if ((controller.desiredSize ?? 0) <= 0) message.pause()
      })
      message.on('end', () => {
        if (finish()) controller.close()
      })
      const fail = (err: Error) => {
        if (finish()) controller.error(err)
      }
      message.on('error', fail)
      // A destroyed socket may close the message without an error: the body fails all the same.
      message.on('close', () => fail(new Error('the connection closed before the body ended')))
    },
    pull() {
      message.resume()
    },
    cancel() {
      finish()
      message.destroy()
    },
  })
  return new Response(body, { status, statusText: message.statusMessage ?? '', headers })
}

/**
 * The `outboundFetch` option for Node, Bun and Deno (see the module comment).
 *
 * @example
 * createTokenService({ issuer, outboundFetch: nodeOutboundFetch() }) // or ...nodeServiceOptions()
 */
export function nodeOutboundFetch(options: NodeOutboundFetchOptions = {}): OutboundFetch {
  const resolveName = options.resolve ?? defaultResolve
  return (url, init, allowAddress) =>
    new Promise<Response>((resolve, reject) => {
      const target = new URL(url)
      if (target.protocol !== 'https:' && target.protocol !== 'http:') {
        throw new TypeError(`nodeOutboundFetch fetches http and https URLs only, not ${target.protocol}`)
      }
      const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1')
      // A literal address gets no lookup: it is checked here.
      if (isIP(hostname) !== 0 && !allowAddress(hostname)) throw new RefusedAddressError(hostname)
      const signal = init.signal ?? undefined
      signal?.throwIfAborted()
      const method = (init.method ?? 'GET').toUpperCase()
      const body = bodyBytes(init.body)
      const headers: Record<string, string> = Object.fromEntries(new Headers(init.headers))
      if (body !== undefined) headers['content-length'] = String(body.byteLength)
      const request: RequestOptions = {
        hostname,
        ...(target.port !== '' ? { port: Number(target.port) } : {}),
        path: `${target.pathname}${target.search}`,
        method,
        headers,
        // A connection of its own: a pooled socket would carry an earlier request's lookup.
        agent: false,
        lookup: pinnedLookup(resolveName, allowAddress) as RequestOptions['lookup'],
        maxHeaderSize: 16_384,
        ...(options.ca !== undefined && target.protocol === 'https:' ? { ca: options.ca as string } : {}),
      }
      const onAbort = () => outgoing.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'))
      const done = () => signal?.removeEventListener('abort', onAbort)
      const outgoing = (target.protocol === 'https:' ? httpsRequest : httpRequest)(request, (message) => {
        try {
          resolve(toResponse(message, method, done))
        } catch (err) {
          done()
          reject(err)
        }
      })
      outgoing.on('error', (err) => {
        done()
        reject(err)
      })
      signal?.addEventListener('abort', onAbort, { once: true })
      outgoing.end(body)
    })
}
