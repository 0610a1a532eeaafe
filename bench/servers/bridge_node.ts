/**
 * Bench server: the cost of a Node bridge alone. One trivial handler (read the urlencoded form,
 * answer a small JSON object with two of its fields) served three ways:
 * - BRIDGE=bare: `node:http` with its own (IncomingMessage, ServerResponse) handler, no Web objects;
 * - BRIDGE=gatehouse: the same handler written as a Web fetch handler `(Request) => Response`,
 *   served by `serveNode` of adapters/node.ts (@hono/node-server), exactly as Gatehouse is;
 * - BRIDGE=hattip: that fetch handler behind `@hattip/adapter-node` (its default entry);
 * - BRIDGE=hattip-buffered: hattip helped as far as it allows: its `fast-fetch` entry (raw string
 *   responses) and its middleware fed a body already buffered into `req.rawBody` (size-limited).
 * Environment: PORT, HOST, BRIDGE. Prints `READY {json}`.
 */
import { createServer } from 'node:http'
import { createMiddleware, createServer as createHattipServer } from '@hattip/adapter-node'
import { serveNode } from '../../adapters/node.ts'

const port = Number(process.env.PORT)
const host = process.env.HOST ?? '127.0.0.1'
const bridge = process.env.BRIDGE ?? 'bare'

/** The answer every variant gives: two fields of the form, as JSON. */
function answer(body: string): string {
  const params = new URLSearchParams(body)
  return JSON.stringify({ grant_type: params.get('grant_type'), scope: params.get('scope') })
}

async function fetchHandler(request: Request): Promise<Response> {
  if (request.method !== 'POST') return new Response(null, { status: 405 })
  return new Response(answer(await request.text()), { headers: { 'content-type': 'application/json' } })
}

if (bridge === 'bare') {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(answer(Buffer.concat(chunks).toString()))
    })
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
} else if (bridge === 'gatehouse') {
  await serveNode(fetchHandler, { port, hostname: host })
} else if (bridge === 'hattip') {
  const server = createHattipServer((context) => fetchHandler(context.request))
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
} else if (bridge === 'hattip-buffered') {
  await import('@hattip/adapter-node/fast-fetch')
  const middleware = createMiddleware((context) => fetchHandler(context.request))
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    let size = 0
    request.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > 65_536) request.destroy()
      else chunks.push(chunk)
    })
    request.on('end', () => {
      ;(request as typeof request & { rawBody: Buffer }).rawBody = Buffer.concat(chunks)
      middleware(request, response)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
} else {
  throw new Error(`BRIDGE must be bare, gatehouse, hattip or hattip-buffered, not ${bridge}`)
}
console.log(`READY ${JSON.stringify({ pid: process.pid, runtime: `node ${process.version}`, bridge })}`)
