/**
 * #44 item 4: the CPU a Node bridge costs per request, in one process, without the kernel. A
 * profiling and A/B aid, not a bench cell (the bench's `bridge` scenario measures over sockets):
 * `serveNode` of this checkout's adapters/node.ts, and of another checkout's (`BASE=path`, e.g. an
 * earlier commit with node_modules linked), serve the same handler; requests reach them through
 * in-memory connections (`server.emit('connection', stream)`), 16 of them, one request in flight
 * on each, and each variant's CPU time (`process.cpuUsage`) is divided by the requests answered.
 * Variants alternate in rounds so that both see the same state of a shared machine.
 *
 *   node --import tsx bench/bridge_cost.ts [trivial|token] [rounds] [requests per round]
 *
 * `trivial`: the bench's bridge handler (read the form, answer two fields as JSON), also on bare
 * node:http (the floor, as the bench's `bridge-bare`); `token`:
 * Gatehouse's client_credentials grant as bench/servers/gatehouse_node.ts sets it up. With
 * `BASE_HANDLER=1` the BASE variant also runs BASE's Gatehouse (its src/, setup and signer), not
 * only its bridge: the A/B of a change to the handler's path (#44 item 4).
 */
import type { Server } from 'node:http'
import { resolve } from 'node:path'
import { Duplex } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { API_SCOPE, SERVICE_CLIENT } from './fixtures.ts'

type Serve = (
  handler: (request: Request, info?: { address?: string }) => Promise<Response>,
  options: { port: number; hostname?: string },
) => Promise<Server>

/** One end of an in-memory connection: what is written to it is read from `peer`. */
class End extends Duplex {
  peer: End | undefined
  remoteAddress = '127.0.0.1'
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.peer?.push(chunk)
    done()
  }
  override _read(): void {}
  setTimeout(): this {
    return this
  }
  setNoDelay(): this {
    return this
  }
  setKeepAlive(): this {
    return this
  }
}

const [kind = 'trivial', roundsArg = '5', countArg = '20000'] = process.argv.slice(2)
const auth = Buffer.from(`${SERVICE_CLIENT.id}:${SERVICE_CLIENT.secret}`).toString('base64')
const body = `grant_type=client_credentials&scope=${API_SCOPE}`
const path = kind === 'token' ? '/connect/token' : '/token'
const wire = Buffer.from(
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAuthorization: Basic ${auth}\r\n` +
    `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
)

type Handler = (request: Request, info?: { address?: string }) => Promise<Response>

async function handlerFor(root = '.'): Promise<Handler> {
  if (kind === 'trivial') {
    return async (request) => {
      const params = new URLSearchParams(await request.text())
      const json = JSON.stringify({ grant_type: params.get('grant_type'), scope: params.get('scope') })
      return new Response(json, { headers: { 'content-type': 'application/json' } })
    }
  }
  const from = (path: string) => pathToFileURL(resolve(root, path)).href
  const { setupGatehouse } = (await import(
    from('bench/servers/gatehouse_setup.ts')
  )) as typeof import('./servers/gatehouse_setup.ts')
  const { nodeServiceOptions } = (await import(from('adapters/node.ts'))) as typeof import('../adapters/node.ts')
  const service = await setupGatehouse({
    serviceOptions: nodeServiceOptions(),
    env: (name) => (name === 'PORT' ? '3000' : undefined),
    writeTextFile: async () => {},
  })
  return (request, info) => service.fetch(request, info)
}

/** Sends `count` requests over 16 in-memory connections to `server`, one in flight on each. */
function drive(server: Server, count: number): Promise<void> {
  let sent = 0
  let answered = 0
  return new Promise((done, fail) => {
    for (let i = 0; i < 16; i++) {
      const client = new End()
      const side = new End()
      client.peer = side
      side.peer = client
      server.emit('connection', side)
      client.on('data', (chunk: Buffer) => {
        // One small response per chunk: the status line starts it.
        if (chunk.indexOf('HTTP/1.1 ') !== 0) return
        if (chunk.indexOf('HTTP/1.1 200') !== 0) fail(new Error(chunk.toString()))
        answered++
        if (answered === count) done()
        else if (sent < count) {
          sent++
          client.write(wire)
        }
      })
      sent++
      client.write(wire)
    }
  })
}

const handler = await handlerFor()
const variants: Array<{ name: string; server: Server }> = []
for (const [name, root] of [
  ['this checkout', '.'] as const,
  ...(process.env.BASE ? [['BASE', process.env.BASE] as const] : []),
]) {
  const url = pathToFileURL(resolve(root, 'adapters/node.ts')).href
  const { serveNode } = (await import(url)) as { serveNode: Serve }
  const own = root !== '.' && kind === 'token' && process.env.BASE_HANDLER === '1' ? await handlerFor(root) : handler
  variants.push({ name, server: await serveNode(own, { port: 0, hostname: '127.0.0.1' }) })
}
if (kind === 'trivial') {
  // The floor: the same handler on bare node:http, no Web objects (BRIDGE=bare of bridge_node.ts).
  const { createServer } = await import('node:http')
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const params = new URLSearchParams(Buffer.concat(chunks).toString())
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ grant_type: params.get('grant_type'), scope: params.get('scope') }))
    })
  })
  variants.push({ name: 'bare node:http', server })
}
const count = Number(countArg)
for (const variant of variants) await drive(variant.server, count) // warm-up
const results = new Map<string, number[]>(variants.map((v) => [v.name, []]))
for (let round = 0; round < Number(roundsArg); round++) {
  for (const variant of round % 2 ? [...variants].reverse() : variants) {
    const before = process.cpuUsage()
    await drive(variant.server, count)
    const used = process.cpuUsage(before)
    results.get(variant.name)?.push((used.user + used.system) / count)
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
// Other processes only ever add time: on a shared machine the fastest rounds are the cleanest.
const fastest = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 10)] ?? Number.NaN
for (const [name, values] of results) {
  console.log(
    `${kind} · ${name}: median ${median(values).toFixed(1)}, 10th percentile ${fastest(values).toFixed(1)} µs CPU/request (${values.map((v) => v.toFixed(1)).join(', ')})`,
  )
}
// The same-round ratio to this checkout, the figure to read on a shared machine.
const ours = results.get('this checkout') ?? []
for (const [name, values] of results) {
  if (name === 'this checkout') continue
  const ratios = values.map((value, round) => (ours[round] ?? Number.NaN) / value)
  console.log(`${kind} · this checkout ÷ ${name}, same round: median ${median(ratios).toFixed(2)}×`)
}
for (const variant of variants) variant.server.close()
process.exit(0)
