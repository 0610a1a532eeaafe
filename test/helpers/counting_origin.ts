/**
 * An https origin on a local address that counts the TCP connections it accepts (before any TLS)
 * and records the server names (SNI) and requests it sees: what a server-side fetch reached.
 * Runs on Node, Bun and Deno (node:https).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'

export interface CountingOrigin {
  port: number
  /** TCP connections accepted so far. */
  readonly connections: number
  /** Server names (SNI) of the TLS handshakes. */
  names: string[]
  /** `METHOD path` of each request. */
  requests: string[]
  close(): Promise<void>
}

/** Answers a request; returning nothing leaves it hanging (the client must time out). */
export type OriginHandler = (request: IncomingMessage, response: ServerResponse) => void

export async function countingOrigin(options: {
  key: string
  cert: string
  host: string
  port?: number
  handle: OriginHandler
}): Promise<CountingOrigin> {
  let connections = 0
  const sockets = new Set<Socket>()
  const names: string[] = []
  const requests: string[] = []
  const server = createServer({ key: options.key, cert: options.cert }, (request, response) => {
    requests.push(`${request.method} ${request.url}`)
    options.handle(request, response)
  })
  server.on('connection', (socket: Socket) => {
    connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.on('secureConnection', (socket: { servername?: string | false }) => {
    names.push(String(socket.servername))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host, () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections
    },
    names,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}
