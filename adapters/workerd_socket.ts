/**
 * @module adapters/workerd_socket
 * postgres.js's `socket` option on workerd: a TCP socket from `cloudflare:sockets` in the shape
 * postgres.js expects of a Node socket, as its own Cloudflare build makes (postgres/cf/polyfills.js,
 * Unlicense), with two differences:
 * - An error after postgres.js let go of the socket is dropped. postgres.js removes its listeners
 *   when a connection closes, and closing cancels the pending read ("Stream was cancelled") or
 *   loses the connection ("Network connection lost"): emitted without a listener, that throws, an
 *   unhandled rejection for every connection a request closes.
 * - Connecting is awaited here, within `connect_timeout` (postgres.js starts its own connect
 *   timer only after a custom socket is returned), failing with CONNECT_TIMEOUT.
 * - Its errors carry the code of the Node error they stand for (ECONNREFUSED: cannot connect,
 *   ECONNRESET: the connection was lost), so that the store answers them with 503.
 * TLS (`sslmode=require`) works as in postgres.js: it upgrades this socket with `startTls`.
 */
import { Buffer } from 'node:buffer'
import { EventEmitter } from 'node:events'
import { connect } from 'cloudflare:sockets'

/** The options postgres.js passes to `socket` (its parsed options; the first host is used). */
interface SocketOptions {
  host: string[]
  port: number[]
  ssl?: unknown
  connect_timeout?: number
}

interface RawSocket {
  readable: ReadableStream<Uint8Array>
  writable: WritableStream<Uint8Array>
  opened: Promise<unknown>
  closed: Promise<void>
  close(): Promise<void>
  startTls(options?: { expectedServerHostname?: string }): RawSocket
}

/** `err` with `code` unless it has one (workerd's socket errors have none). */
function coded(err: unknown, code: string): unknown {
  if (!(err instanceof Error) || 'code' in err) return err
  try {
    return Object.assign(err, { code })
  } catch {
    return Object.assign(new Error(err.message, { cause: err }), { code })
  }
}

/** An EventEmitter whose `error` without a listener is dropped, not thrown. */
class Socket extends EventEmitter {
  readyState = 'opening'
  raw!: RawSocket
  writer!: WritableStreamDefaultWriter<Uint8Array>
  reader!: ReadableStreamDefaultReader<Uint8Array>
  destroyed = false
  ssl = false

  override emit(name: string | symbol, ...args: unknown[]): boolean {
    if (name === 'error' && this.listenerCount('error') === 0) return false
    return super.emit(name, ...args)
  }

  write(data: Uint8Array, cb?: () => void): boolean {
    this.writer.write(data).then(cb, (err: unknown) => this.fail(err))
    return true
  }

  end(data?: Uint8Array): void {
    if (data) this.write(data, () => void this.raw.close().catch(() => {}))
    else void this.raw.close().catch(() => {})
  }

  destroy(): void {
    this.destroyed = true
    this.end()
  }

  /** Reads until the stream ends (postgres.js's TLS upgrade calls it again on the new stream). */
  async read(): Promise<void> {
    try {
      for (;;) {
        const { done, value } = await this.reader.read()
        if (done) return
        this.emit('data', Buffer.from(value))
      }
    } catch (err) {
      this.fail(err)
    }
  }

  /** Reads only the answer to the SSL request (one byte), then lets the TLS upgrade take over. */
  async readFirst(): Promise<void> {
    try {
      const { value } = await this.reader.read()
      if (value) this.emit('data', Buffer.from(value))
    } catch (err) {
      this.fail(err)
    }
  }

  fail(err: unknown): void {
    this.emit('error', coded(err, 'ECONNRESET'))
    this.close()
  }

  close(): void {
    if (this.readyState === 'closed') return
    this.readyState = 'closed'
    this.emit('close')
  }
}

/** Opens a connected socket to the first host (postgres.js: `postgres(url, { socket: workerdSocket })`). */
export async function workerdSocket(options: SocketOptions): Promise<Socket> {
  const host = options.host[0] ?? 'localhost'
  const port = options.port[0] ?? 5432
  const socket = new Socket()
  socket.ssl = Boolean(options.ssl)
  const raw = connect(
    `${host.includes(':') ? `[${host}]` : host}:${port}`,
    socket.ssl ? { secureTransport: 'starttls' } : {},
  ) as RawSocket
  socket.raw = raw
  raw.closed.then(
    // Closed by a TLS upgrade (the new stream takes over), or for good.
    () => {
      if (socket.readyState !== 'upgrade') return socket.close()
      socket.readyState = 'open'
      socket.emit('secureConnect')
    },
    (err: unknown) => socket.fail(err),
  )
  socket.writer = raw.writable.getWriter()
  socket.reader = raw.readable.getReader()
  const seconds = options.connect_timeout ?? 30
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    await Promise.race([
      raw.opened,
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error(`write CONNECT_TIMEOUT ${host}:${port}`), { code: 'CONNECT_TIMEOUT' })),
          seconds * 1000,
        )
      }),
    ])
  } catch (err) {
    void raw.close().catch(() => {})
    throw coded(err, 'ECONNREFUSED')
  } finally {
    clearTimeout(timer)
  }
  socket.readyState = 'open'
  void (socket.ssl ? socket.readFirst() : socket.read())
  return socket
}
