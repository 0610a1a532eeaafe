/**
 * #39 item 9: a Worker reads a request body its answer left unread before the response goes
 * (src/worker/index.ts, `drainUnread`), so that workerd keeps the keep-alive connection; bounded
 * by DRAIN_LIMIT. The connections themselves are tested on workerd in
 * test/runtime/workers_keep_alive.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { DRAIN_LIMIT, createWorkerHandlers, drainUnread } from '../../../src/worker/index.ts'

const ISSUER = 'https://auth.example.com'
const ctx = { waitUntil: () => {} }

/** A body of `chunks` chunks of `size` bytes (endless when `chunks` is Infinity), and what was done to it. */
function body(chunks: number, size = 1024) {
  const seen = { pulled: 0, closed: false, cancelled: false }
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled === chunks) {
        seen.closed = true
        controller.close()
        return
      }
      seen.pulled++
      controller.enqueue(new Uint8Array(size))
    },
    cancel() {
      seen.cancelled = true
    },
  })
  return { stream, seen }
}

function requestWith(stream: ReadableStream<Uint8Array>, method = 'DELETE', headers: Record<string, string> = {}) {
  return new Request(`${ISSUER}/nope`, {
    method,
    body: stream,
    headers: { 'content-type': 'text/plain', ...headers },
    duplex: 'half',
  } as RequestInit)
}

describe('#39 item 9 a Worker reads the request body its answer left unread', () => {
  it('#39 item 9 a 404 or 405 answered without reading the body: the Worker reads it to its end before answering', async () => {
    const worker = createWorkerHandlers(() => ({ issuer: ISSUER }))
    for (const [method, path, status] of [
      ['DELETE', '/nope', 404],
      ['PATCH', '/connect/introspect', 405],
      ['DELETE', '/.well-known/openid-configuration', 405],
    ] as const) {
      const { stream, seen } = body(5)
      const request = new Request(`${ISSUER}${path}`, { method, body: stream, duplex: 'half' } as RequestInit)
      const response = await worker.fetch(request, {}, ctx)
      expect(response.status).toBe(status)
      expect(await response.json()).toMatchObject({ error: expect.any(String) })
      expect(seen).toEqual({ pulled: 5, closed: true, cancelled: false })
    }
  })

  it('#39 item 9 a body the answer read is left alone, and so is a request without one', async () => {
    const worker = createWorkerHandlers(() => ({ issuer: ISSUER }))
    const token = new Request(`${ISSUER}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    })
    expect((await worker.fetch(token, {}, ctx)).status).toBe(401)
    expect(token.bodyUsed).toBe(true)
    await drainUnread(new Request(`${ISSUER}/nope`))
    // A body someone else is reading (locked) is theirs.
    const { stream, seen } = body(3)
    const locked = requestWith(stream)
    const reader = locked.body?.getReader()
    await drainUnread(locked)
    expect(seen.pulled).toBeLessThanOrEqual(1)
    expect((await reader?.read())?.done).toBe(false)
  })

  it('#39 item 9 bounded: past DRAIN_LIMIT bytes it stops and cancels the body; a larger declared length is not read at all', async () => {
    const endless = body(Number.POSITIVE_INFINITY, 64 * 1024)
    await drainUnread(requestWith(endless.stream))
    expect(endless.seen.cancelled).toBe(true)
    expect(endless.seen.pulled * 64 * 1024).toBeLessThanOrEqual(DRAIN_LIMIT + 3 * 64 * 1024)
    const declared = body(3)
    await drainUnread(requestWith(declared.stream, 'DELETE', { 'content-length': String(DRAIN_LIMIT + 1) }))
    expect(declared.seen.pulled).toBeLessThanOrEqual(1) // the stream's own first pull, nothing read
    expect(declared.seen.closed).toBe(false)
  })

  it('#39 item 9 a body the client stops sending does not fail the answer', async () => {
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('connection reset by peer'))
      },
    })
    await expect(drainUnread(requestWith(failing))).resolves.toBeUndefined()
  })
})
