/**
 * #44 item 4: `serveNode` (adapters/node.ts) with its lean path for small bodies
 * (adapters/node_buffered.ts): a request with no body or a declared body of at most 16 KiB reaches
 * the fetch handler once its body is whole; a chunked or larger body streams as before. Over real
 * sockets (node:http's client): the form POST and the GET, the streaming fallback, several
 * Set-Cookie headers, HEAD, the service's 413 either way, a client that goes away (mid-body, and
 * while its GET is answered: `request.signal`), keep-alive, and the peer address in `info`.
 */
import { type IncomingHttpHeaders, type Server, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type FetchHandler, serveNode } from '../../adapters/node.ts'
import { BUFFERED_BODY_LIMIT } from '../../adapters/node_buffered.ts'
import { createTokenService } from '../../src/index.ts'
import { CLIENTS } from '../helpers/service.ts'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** Serves `handler` on a free loopback port; the port. */
async function serve(handler: FetchHandler): Promise<number> {
  const server: Server = await serveNode(handler, { port: 0, hostname: '127.0.0.1' })
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
  server.closeIdleConnections()
  closers.unshift(async () => server.closeAllConnections())
  return (server.address() as AddressInfo).port
}

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
  reusedSocket: boolean
}

/** One request over node:http; `chunks` written with `gapMs` between them. */
function send(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string | number>; chunks?: string[] },
  agent?: import('node:http').Agent,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: options.headers,
        agent,
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reusedSocket: req.reusedSocket }),
        )
      },
    )
    req.on('error', reject)
    for (const chunk of options.chunks ?? []) req.write(chunk)
    req.end()
  })
}

/** An echo handler: what the Request showed, and when it was called (`calls`). */
function echo(calls: string[]): FetchHandler {
  return async (request, info) => {
    calls.push(request.method)
    const body = request.method === 'GET' || request.method === 'HEAD' ? null : await request.text()
    return Response.json({
      method: request.method,
      url: request.url,
      type: request.headers.get('content-type'),
      authorization: request.headers.get('authorization'),
      body,
      address: info?.address,
    })
  }
}

const FORM = 'application/x-www-form-urlencoded'
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Opens a raw connection and writes `head` and `firstPart`; the socket. */
async function partialPost(port: number, declared: number, firstPart: string): Promise<import('node:net').Socket> {
  const socket = connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write(
    `POST /form HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: ${FORM}\r\nContent-Length: ${declared}\r\n\r\n${firstPart}`,
  )
  return socket
}

describe('#44 item 4 serveNode: the lean path for small bodies', () => {
  it('#44 item 4 a form POST reaches the handler once its body is whole: method, URL, headers, text, peer address', async () => {
    const calls: string[] = []
    const port = await serve(echo(calls))
    const body = 'grant_type=client_credentials&scope=api1'
    const socket = await partialPost(port, body.length, body.slice(0, 10))
    await wait(150)
    // The streaming bridge called the handler on the headers; the lean path waits for the body.
    expect(calls).toEqual([])
    const answer = new Promise<string>((resolve) => {
      let text = ''
      socket.on('data', (chunk) => {
        text += chunk.toString()
        if (text.includes('}')) resolve(text)
      })
    })
    socket.write(body.slice(10))
    const raw = await answer
    socket.destroy()
    expect(calls).toEqual(['POST'])
    const json = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>
    expect(json).toEqual({
      method: 'POST',
      url: `http://127.0.0.1:${port}/form`,
      type: FORM,
      authorization: null,
      body,
      address: '127.0.0.1',
    })
  })

  it('#44 item 4 a GET without a body: method, URL with its query, headers; keep-alive reuses the connection', async () => {
    const port = await serve(echo([]))
    const { Agent } = await import('node:http')
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    closers.push(async () => agent.destroy())
    const first = await send(port, { path: '/x?a=1&b=%20', headers: { authorization: 'Bearer t' } }, agent)
    const second = await send(
      port,
      { method: 'POST', path: '/y', headers: { 'content-type': FORM }, chunks: ['a=1'] },
      agent,
    )
    expect(first.status).toBe(200)
    expect(JSON.parse(first.body)).toMatchObject({
      method: 'GET',
      url: `http://127.0.0.1:${port}/x?a=1&b=%20`,
      authorization: 'Bearer t',
      body: null,
      address: '127.0.0.1',
    })
    expect(JSON.parse(second.body)).toMatchObject({ method: 'POST', body: 'a=1' })
    expect(second.reusedSocket).toBe(true)
  })

  it('#44 item 4 a body over the limit or chunked streams: the handler runs before it is whole and reads it all', async () => {
    const calls: string[] = []
    const port = await serve(echo(calls))
    const big = 'a'.repeat(BUFFERED_BODY_LIMIT + 1)
    const socket = await partialPost(port, big.length, big.slice(0, 100))
    await wait(150)
    expect(calls).toEqual(['POST'])
    socket.write(big.slice(100))
    socket.destroy()
    const chunked = await send(port, {
      method: 'POST',
      headers: { 'content-type': FORM, 'transfer-encoding': 'chunked' },
      chunks: ['x=', 'y'.repeat(40_000)],
    })
    expect(JSON.parse(chunked.body)).toMatchObject({ body: `x=${'y'.repeat(40_000)}` })
  })

  it('#44 item 4 several Set-Cookie headers stay apart; HEAD answers the headers without the body', async () => {
    const port = await serve(async () => {
      const headers = new Headers({ 'content-type': 'text/plain' })
      headers.append('set-cookie', 'a=1; Path=/; HttpOnly')
      headers.append('set-cookie', 'b=2; Path=/; Secure')
      return new Response('hello', { headers })
    })
    const get = await send(port, {})
    expect(get.headers['set-cookie']).toEqual(['a=1; Path=/; HttpOnly', 'b=2; Path=/; Secure'])
    expect(get.body).toBe('hello')
    expect(get.headers['content-length']).toBe('5')
    const post = await send(port, { method: 'POST', headers: { 'content-type': FORM }, chunks: ['a=1'] })
    expect(post.headers['set-cookie']).toHaveLength(2)
    const head = await send(port, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.body).toBe('')
    expect(head.headers['set-cookie']).toHaveLength(2)
  })

  it('#44 item 4 a streamed response body (SSE) is written as it comes', async () => {
    let push: ((text: string) => void) | undefined
    let close: (() => void) | undefined
    const port = await serve(async () => {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          push = (text) => controller.enqueue(new TextEncoder().encode(text))
          close = () => controller.close()
        },
      })
      return new Response(stream, { headers: { 'content-type': 'text/event-stream' } })
    })
    const first = await new Promise<string>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/events' }, (res) => {
        res.once('data', (chunk: Buffer) => resolve(chunk.toString()))
        res.on('end', () => {})
      })
      req.on('error', reject)
      req.end()
      setTimeout(() => push?.('data: one\n\n'), 50)
    })
    expect(first).toBe('data: one\n\n')
    close?.()
  })

  it('#44 item 4 the service answers 413 to a body over its limit, declared or chunked, and serves on', async () => {
    const service = createTokenService({
      issuer: 'http://127.0.0.1',
      secretHashIterations: 1000,
      logger: { warn() {}, error() {} },
    })
    await service.clients.ensure(CLIENTS.service as NonNullable<(typeof CLIENTS)['service']>)
    closers.push(() => service.close())
    const port = await serve((request, info) => service.fetch(request, info))
    const auth = `Basic ${Buffer.from('service:service-secret').toString('base64')}`
    const headers = { 'content-type': FORM, authorization: auth }
    const padding = `&x=${'a'.repeat(20_000)}`
    const declared = await send(port, {
      method: 'POST',
      path: '/connect/token',
      headers,
      chunks: [`grant_type=client_credentials${padding}`],
    })
    expect(declared.status).toBe(413)
    expect(JSON.parse(declared.body)).toMatchObject({ error: 'invalid_request' })
    const chunked = await send(port, {
      method: 'POST',
      path: '/connect/token',
      headers: { ...headers, 'transfer-encoding': 'chunked' },
      chunks: ['grant_type=client_credentials', padding],
    })
    expect(chunked.status).toBe(413)
    const ok = await send(port, {
      method: 'POST',
      path: '/connect/token',
      headers,
      chunks: ['grant_type=client_credentials&scope=api1'],
    })
    expect(ok.status).toBe(200)
    expect(JSON.parse(ok.body)).toMatchObject({ token_type: 'Bearer' })
  })

  it('#44 item 4 a client gone mid-body is never handed on; one gone during its GET aborts request.signal', async () => {
    const calls: string[] = []
    let aborted: Promise<unknown> | undefined
    const port = await serve(async (request) => {
      calls.push(request.method)
      if (request.method === 'GET') {
        aborted = new Promise((resolve) => request.signal.addEventListener('abort', resolve))
        await aborted
        return new Response('late')
      }
      return new Response(await request.text())
    })
    const socket = await partialPost(port, 40, 'grant_type=')
    await wait(50)
    socket.destroy()
    await wait(100)
    expect(calls).toEqual([])
    const get = connect(port, '127.0.0.1')
    get.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
    for (let i = 0; i < 50 && calls.length === 0; i++) await wait(10)
    get.destroy()
    await expect(Promise.race([aborted, wait(2_000).then(() => 'timeout')])).resolves.not.toBe('timeout')
    expect((await send(port, { method: 'POST', headers: { 'content-type': FORM }, chunks: ['ok=1'] })).body).toBe(
      'ok=1',
    )
  })
})
