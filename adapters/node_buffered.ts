/**
 * @module adapters/node_buffered
 * The Node bridge's lean path for small requests (#44 item 4). A request without a body (GET,
 * HEAD) goes straight to the fetch handler. A request whose body is declared small (Content-Length
 * at most `limit`, no Transfer-Encoding: a token request's form, a sign-in form) is read whole
 * first, with one `data` and one `end` listener, and handed to @hono/node-server as
 * `incoming.rawBody`: its Request then answers `text()` from that buffer instead of wiring four
 * listeners, a promise and a drain guard to the socket per request. Anything else (a chunked or
 * larger body) takes the streaming bridge unchanged, so the service's own limit answers it (413
 * from the declared length, or once the stream passes the limit). Responses are written by
 * @hono/node-server either way: `writeHead` + `end` for a string or byte body, a stream otherwise.
 */
import type { IncomingMessage, RequestListener } from 'node:http'

/** The largest declared body read whole before the handler runs (the service's default body limit). */
export const BUFFERED_BODY_LIMIT = 16_384

/**
 * One request listener of two: `buffered` (whose Request reads `rawBody`) for a request without a
 * body or with a declared body of at most `limit` bytes, once that body is read; `streaming` for
 * the rest. A client that goes away before its body is complete is never handed on.
 */
export function bufferedFirst(
  buffered: RequestListener,
  streaming: RequestListener,
  limit: number = BUFFERED_BODY_LIMIT,
): RequestListener {
  return (incoming, outgoing) => {
    const size = declaredSize(incoming)
    if (size === 0 && (incoming.method === 'GET' || incoming.method === 'HEAD')) return buffered(incoming, outgoing)
    if (size === undefined || size > limit) return streaming(incoming, outgoing)
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', () => {
      ;(incoming as IncomingMessage & { rawBody: Buffer }).rawBody =
        chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)
      buffered(incoming, outgoing)
    })
  }
}

/** The body's declared size: 0 when it has none, undefined when chunked or not a plain number. */
function declaredSize(incoming: IncomingMessage): number | undefined {
  if (incoming.headers['transfer-encoding'] !== undefined) return undefined
  const declared = incoming.headers['content-length']
  if (declared === undefined) return 0
  // Node's parser has refused a Content-Length that is not digits (400) before any listener runs.
  const size = Number(declared)
  return Number.isSafeInteger(size) ? size : undefined
}
