/**
 * A loopback TCP proxy in front of a shared database, to simulate its outage without stopping it
 * (other tests use the same server). Three states:
 * - `open`: forwards both ways;
 * - `refuse()`: the listener is closed and every connection destroyed, so connecting is refused
 *   (the database stopped);
 * - `blackhole()`: the port keeps accepting but nothing is forwarded either way, on new and on
 *   existing connections (a network partition: nothing answers, nothing closes).
 * `restore()` forwards again on the same port. Connections caught in the black hole stay silent
 * until `close()`, as a connection to a host that went away does: the client has to give them up.
 * No `.test` suffix: used by the runtime test files.
 */
import { type Server, type Socket, connect, createServer } from 'node:net'

export interface TcpProxy {
  /** `target` with the proxy's host and port. */
  url(): string
  refuse(): Promise<void>
  blackhole(): void
  restore(): Promise<void>
  /** Closes the listener and every connection. */
  close(): Promise<void>
}

/** Starts a proxy on 127.0.0.1 (a free port) forwarding to `target`'s host and port. */
export async function tcpProxy(target: URL): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  const pairs = new Set<[Socket, Socket]>()
  let server: Server | undefined
  let port = 0
  let silent = false

  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
  }
  const hold = (socket: Socket) => {
    socket.pause()
  }

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const listening = createServer((client) => {
        track(client)
        if (silent) return hold(client)
        const upstream = connect(Number(target.port), target.hostname)
        track(upstream)
        const pair: [Socket, Socket] = [client, upstream]
        pairs.add(pair)
        const end = () => {
          pairs.delete(pair)
          client.destroy()
          upstream.destroy()
        }
        client.on('close', end)
        upstream.on('close', end)
        client.pipe(upstream)
        upstream.pipe(client)
      })
      server = listening
      listening.once('error', reject)
      listening.listen(port, '127.0.0.1', () => {
        port = (listening.address() as { port: number }).port
        resolve()
      })
    })

  const stopListening = () =>
    new Promise<void>((resolve) => {
      const current = server
      server = undefined
      if (current?.listening) current.close(() => resolve())
      else resolve()
    })

  await listen()
  return {
    url() {
      const url = new URL(target)
      url.hostname = '127.0.0.1'
      url.port = String(port)
      return url.href
    },
    async refuse() {
      silent = false
      const closed = stopListening()
      for (const socket of sockets) socket.destroy()
      await closed
    },
    blackhole() {
      silent = true
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        hold(client)
        hold(upstream)
      }
      pairs.clear()
    },
    async restore() {
      silent = false
      if (!server) await listen()
    },
    async close() {
      const closed = stopListening()
      for (const socket of sockets) socket.destroy()
      await closed
    },
  }
}
