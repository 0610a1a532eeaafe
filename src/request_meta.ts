/**
 * @module request_meta
 * Per-request facts that do not travel in the Request itself: the source address the adapter saw
 * (or the host's `clientAddress` derived) and a request id for audit events, kept in a WeakMap so
 * the handler keeps the Web signature `(request) => Response` everywhere inside.
 */
import type { RequestMeta } from './events.ts'

const metas = new WeakMap<Request, RequestMeta>()
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

function create(request: Request, address: string | undefined): RequestMeta {
  let id: string | undefined
  return {
    ...(address !== undefined ? { address } : {}),
    requestId() {
      if (id === undefined) {
        const given = request.headers.get('x-request-id')
        id = given !== null && REQUEST_ID.test(given) ? given : crypto.randomUUID()
      }
      return id
    },
  }
}

/** Records the source address of a request (called once, by the service's fetch). */
export function bindRequest(request: Request, address: string | undefined): void {
  metas.set(request, create(request, address))
}

/** The request's facts; created on first use when nothing was bound. */
export function metaOf(request: Request): RequestMeta {
  let meta = metas.get(request)
  if (!meta) {
    meta = create(request, undefined)
    metas.set(request, meta)
  }
  return meta
}
