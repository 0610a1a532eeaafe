/**
 * #27 item 10: a store outage under load. The standalone server (`npm start`: bin/serve_node.ts)
 * runs on PostgreSQL or Redis through a TCP proxy (test/runtime/tcp_proxy.ts: the shared servers
 * are never stopped); eight workers send client_credentials + introspection requests while the
 * proxy refuses connections, or swallows them (a black hole), for a few seconds, and then forwards
 * again. During the outage every answer is a 200 or a 503 `temporarily_unavailable` with
 * Retry-After, none slower than about 2 s (no hang, no 500); within a few seconds of the store
 * coming back every answer is a 200 again; and the server logs the failures as a few lines with
 * counts, not one line per request. Needs DATABASE_URL / REDIS_URL (skipped without).
 */
import { Redis } from 'ioredis'
import postgresClient from 'postgres'
import { afterEach, describe, expect, it } from 'vitest'
import { uniqueId } from '../storage/contract.ts'
import { runSchema } from '../storage/sql_helpers.ts'
import { CONFIG, ROOT, freePort, launch, waitUntilServing, writeConfig } from './server.ts'
import { type TcpProxy, tcpProxy } from './tcp_proxy.ts'

const TSX = `${ROOT}node_modules/.bin/tsx`
const basic = (id: string, secret: string) => `Basic ${btoa(`${id}:${secret}`)}`
/** Milliseconds: load before the outage, the outage, and the time allowed to recover after it. */
const WARM = 1500
const OUTAGE = 6000
const AFTER = 7000

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

interface Sample {
  /** Start of the request, ms since the load started. */
  at: number
  ms: number
  /** HTTP status, 0 when the client gave up after 5 s. */
  status: number
  retryAfter: string | null
  error?: string
}

/** Eight workers of client_credentials + introspection until `until()` is true. */
async function load(issuer: string, t0: number, until: () => boolean): Promise<Sample[]> {
  const samples: Sample[] = []
  async function send(path: string, auth: string, body: string): Promise<Response | undefined> {
    const at = performance.now() - t0
    try {
      const response = await fetch(`${issuer}${path}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
        body,
        signal: AbortSignal.timeout(5000),
      })
      const text = await response.text()
      const sample: Sample = {
        at,
        ms: performance.now() - t0 - at,
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
      }
      if (response.status !== 200) sample.error = text.slice(0, 200)
      samples.push(sample)
      return response.status === 200 ? new Response(text) : undefined
    } catch (err) {
      samples.push({ at, ms: performance.now() - t0 - at, status: 0, retryAfter: null, error: String(err) })
      return undefined
    }
  }
  async function worker(): Promise<void> {
    while (!until()) {
      const token = await send(
        '/connect/token',
        basic('rt-service', 'rt-service-secret'),
        'grant_type=client_credentials&scope=api1',
      )
      if (token) {
        const { access_token } = (await token.json()) as { access_token: string }
        await send('/connect/introspect', basic('api1', 'api1-secret'), `token=${access_token}`)
      } else {
        await new Promise((r) => setTimeout(r, 10)) // a client's short pause before it tries again
      }
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return samples
}

/** Per-second buckets `second: status×count …`, for the failure message. */
function buckets(samples: Sample[]): string {
  const lines = new Map<number, Map<number, number>>()
  for (const s of samples) {
    const second = Math.floor(s.at / 1000)
    const line = lines.get(second) ?? new Map<number, number>()
    line.set(s.status, (line.get(s.status) ?? 0) + 1)
    lines.set(second, line)
  }
  return [...lines]
    .sort(([a], [b]) => a - b)
    .map(([second, line]) => {
      const worst = Math.max(...samples.filter((s) => Math.floor(s.at / 1000) === second).map((s) => s.ms))
      return `${second}s: ${[...line].map(([status, n]) => `${status}×${n}`).join(' ')} (slowest ${Math.round(worst)} ms)`
    })
    .join('\n')
}

const kinds = [
  {
    name: 'PostgreSQL',
    skip: !process.env.DATABASE_URL,
    target: () => new URL(process.env.DATABASE_URL as string),
    env(url: string): Record<string, string> {
      const schema = runSchema('outage')
      cleanups.push(async () => {
        const admin = postgresClient(process.env.DATABASE_URL as string, { max: 1, onnotice: () => {} })
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await admin.end()
      })
      return { GATEHOUSE_STORE: 'postgres', DATABASE_URL: url, GATEHOUSE_PG_SCHEMA: schema }
    },
  },
  {
    name: 'Redis',
    skip: !process.env.REDIS_URL,
    target: () => new URL(process.env.REDIS_URL as string),
    env(url: string): Record<string, string> {
      const prefix = `${uniqueId('gh-outage')}:`
      cleanups.push(async () => {
        const redis = new Redis(process.env.REDIS_URL as string)
        const keys = await redis.keys(`${prefix}*`)
        if (keys.length > 0) await redis.del(...keys)
        redis.disconnect()
      })
      return { GATEHOUSE_STORE: 'redis', REDIS_URL: url, GATEHOUSE_REDIS_PREFIX: prefix }
    },
  },
]

const modes = [
  { mode: 'refused connections', cut: (proxy: TcpProxy) => proxy.refuse() },
  { mode: 'a black hole', cut: async (proxy: TcpProxy) => proxy.blackhole() },
]

describe.each(kinds)('$name outage (#27 item 10)', (kind) => {
  it.skipIf(kind.skip).each(modes)(
    '#27 item 10: under load, $mode answer 503 with Retry-After within ~2 s, recover, and log a few counted lines',
    async ({ cut }) => {
      const proxy = await tcpProxy(kind.target())
      cleanups.push(() => proxy.close())
      const config = writeConfig(CONFIG)
      cleanups.push(config.remove)
      const port = await freePort()
      const issuer = `http://127.0.0.1:${port}`
      const server = launch([TSX, 'bin/serve_node.ts', '--config', config.path], {
        HOST: '127.0.0.1',
        PORT: String(port),
        ISSUER: issuer,
        ...kind.env(proxy.url()),
      })
      cleanups.push(async () => {
        await server.stop(10_000)
      })
      await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`)

      const t0 = performance.now()
      const elapsed = () => performance.now() - t0
      let stderrAtCut = 0
      const timeline = (async () => {
        await new Promise((r) => setTimeout(r, WARM))
        stderrAtCut = server.output().stderr.length
        await cut(proxy)
        await new Promise((r) => setTimeout(r, OUTAGE))
        await proxy.restore()
      })()
      const samples = await load(issuer, t0, () => elapsed() > WARM + OUTAGE + AFTER)
      await timeline
      const report = `${buckets(samples)}\nstderr:\n${server.output().stderr.slice(-3000)}`

      // Before: all served.
      const before = samples.filter((s) => s.at + s.ms < WARM)
      expect(before.length, report).toBeGreaterThan(0)
      expect(
        before.every((s) => s.status === 200),
        report,
      ).toBe(true)

      // During (and for any request that overlaps it): only 200 or 503 with Retry-After, none slow.
      const during = samples.filter((s) => s.at + s.ms >= WARM && s.at < WARM + OUTAGE)
      const unavailable = during.filter((s) => s.status === 503)
      expect(unavailable.length, report).toBeGreaterThan(0)
      expect(
        during.filter((s) => s.status !== 200 && s.status !== 503),
        report,
      ).toEqual([])
      expect(
        unavailable.every((s) => s.retryAfter !== null && /temporarily_unavailable/.test(s.error ?? '')),
        report,
      ).toBe(true)
      expect(Math.max(...samples.map((s) => s.ms)), report).toBeLessThan(3000)

      // After: within 4 s of the store's return every request is served again.
      const recovered = samples.filter((s) => s.at >= WARM + OUTAGE + 4000)
      expect(recovered.length, report).toBeGreaterThan(0)
      expect(
        recovered.filter((s) => s.status !== 200),
        report,
      ).toEqual([])

      // The log: a few lines per kind of failure, with counts, not one per failed request.
      await new Promise((r) => setTimeout(r, 500))
      const lines = server
        .output()
        .stderr.slice(stderrAtCut)
        .split('\n')
        .filter((line) => line.trim() !== '')
      expect(lines.length, lines.slice(0, 50).join('\n')).toBeLessThanOrEqual(20)
      const failures = samples.filter((s) => s.status === 503).length
      const counted = lines
        .map((line) => /store unavailable ×(\d+)/.exec(line)?.[1])
        .filter((n) => n !== undefined)
        .reduce((sum, n) => sum + Number(n), 0)
      expect(counted, lines.join('\n')).toBeGreaterThan(0)
      expect(lines.join('\n')).not.toMatch(/postgres:\/\/|redis:\/\//)
      expect(counted, `${failures} failures\n${lines.join('\n')}`).toBeLessThanOrEqual(failures)
    },
    60_000,
  )
})
