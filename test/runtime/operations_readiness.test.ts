/**
 * Readiness follows the store: a TCP proxy between the service and PostgreSQL (or Redis) is cut
 * (its sockets destroyed, its port closed) and /readyz turns 503 naming the store check; the proxy
 * comes back on the same port and /readyz turns 200 again as the driver reconnects. Needs
 * DATABASE_URL / REDIS_URL (skipped without).
 */
import { type Server, type Socket, connect, createServer } from 'node:net'
import postgresClient from 'postgres'
import { afterEach, describe, expect, it } from 'vitest'
import { createMetrics, createTokenService } from '../../src/index.ts'
import { createPostgresStore } from '../../src/storage/postgres.ts'
import { createRedisStore } from '../../src/storage/redis.ts'
import type { Store } from '../../src/storage/types.ts'
import { uniqueId } from '../storage/contract.ts'
import { runSchema } from '../storage/sql_helpers.ts'

/** A loopback TCP proxy to `target` that can be cut and restored on the same port. */
async function tcpProxy(target: URL) {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const listening = createServer((client) => {
        const upstream = connect(Number(target.port), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('close', () => sockets.delete(socket))
          socket.on('error', () => {
            client.destroy()
            upstream.destroy()
          })
        }
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
  await listen()
  return {
    url(): string {
      const url = new URL(target)
      url.hostname = '127.0.0.1'
      url.port = String(port)
      return url.href
    },
    /** Stops listening and destroys every open connection. */
    async cut(): Promise<void> {
      const closed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
      for (const socket of sockets) socket.destroy()
      await closed
    },
    restore: listen,
  }
}

type Probe = { status: number; body: { status: string; checks?: Record<string, string> } }

async function readiness(fetcher: (request: Request) => Promise<Response>): Promise<Probe> {
  const response = await fetcher(new Request('http://127.0.0.1:1/readyz'))
  return { status: response.status, body: (await response.json()) as Probe['body'] }
}

/** Polls readiness until it answers `status`, for up to 20 s. */
async function until(fetcher: (request: Request) => Promise<Response>, status: number): Promise<Probe> {
  let last: Probe | undefined
  for (let tries = 0; tries < 100; tries++) {
    last = await readiness(fetcher)
    if (last.status === status) return last
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`readiness stayed ${JSON.stringify(last)}`)
}

const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const kinds = [
  {
    name: 'PostgreSQL',
    skip: !process.env.DATABASE_URL,
    async open(url: string): Promise<Store> {
      const schema = runSchema('ready')
      cleanups.push(async () => {
        const admin = postgresClient(process.env.DATABASE_URL as string, { max: 1, onnotice: () => {} })
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await admin.end()
      })
      const store = createPostgresStore({ url, schema, connectTimeout: 2 })
      cleanups.push(() => store.close())
      await store.migrate()
      return store
    },
    target: () => new URL(process.env.DATABASE_URL as string),
  },
  {
    name: 'Redis',
    skip: !process.env.REDIS_URL,
    async open(url: string): Promise<Store> {
      const store = createRedisStore({ url, prefix: `${uniqueId('gh-ready')}:`, connectTimeout: 2000 })
      await store.connect()
      cleanups.push(async () => {
        await store.clear().catch(() => {})
        await store.close()
      })
      return store
    },
    target: () => new URL(process.env.REDIS_URL as string),
  },
]

describe.each(kinds)('$name', (kind) => {
  it.skipIf(kind.skip)('readiness fails while the connection to the store is cut and recovers after', async () => {
    const proxy = await tcpProxy(kind.target())
    cleanups.push(() => proxy.cut())
    const store = await kind.open(proxy.url())
    const metrics = createMetrics()
    const service = createTokenService({
      issuer: 'http://127.0.0.1:1',
      store,
      metrics,
      health: { livenessPath: '/healthz', readinessPath: '/readyz', readinessTimeout: 1 },
      logger: { warn() {}, error() {} },
    })
    await service.ready()
    expect(await readiness(service.fetch)).toEqual({ status: 200, body: { status: 'ok' } })

    await proxy.cut()
    const down = await until(service.fetch, 503)
    expect(down.body.status).toBe('unavailable')
    expect(['failed', 'timeout']).toContain(down.body.checks?.store)
    expect(down.body.checks?.keys).toBe('skipped')
    // Liveness does not depend on the store.
    expect((await service.fetch(new Request('http://127.0.0.1:1/healthz'))).status).toBe(200)
    expect(metrics.render()).toMatch(/^gatehouse_store_errors_total [1-9]\d*$/m)

    await proxy.restore()
    expect(await until(service.fetch, 200)).toEqual({ status: 200, body: { status: 'ok' } })
  })
})
