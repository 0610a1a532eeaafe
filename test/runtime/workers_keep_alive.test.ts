/**
 * #39 item 9: malformed requests over keep-alive connections, on `npm run start:workers` (workerd
 * through Miniflare) and on `npm start` (Node), which must agree: bodies on GET, DELETE, PATCH and
 * PUT, bodies of the wrong type, HEAD on every endpoint, and large bodies the answer never reads,
 * sent a few rounds over six connections with every request queued at once. Each gets its status
 * and an RFC error JSON (an HTML page on the browser endpoints), and no connection is reset or
 * dropped: workerd closes the connection after answering a request whose body was left unread,
 * which reset the next request on it (src/worker/index.ts, `drainUnread`).
 */
import { request as httpRequest, Agent, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { dirname } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, launch, node22, type Running, waitUntilServing } from './server.ts'

/** What an answer must be: its status and body (`json`: RFC error JSON; `document`: a JSON document). */
type Kind = 'json' | 'html' | 'document' | 'empty'

interface Case {
  method: string
  path: string
  /** The body's content type and length in bytes (filled with `x`; a form when the type is one). */
  body?: { type: string; bytes: number }
  status: number
  kind: Kind
}

const FORM = 'application/x-www-form-urlencoded'
const KIB = 1024

/** HEAD on every endpoint (and a path that is none): the GET answer's status, no content. */
const HEADS: Case[] = (
  [
    ['/.well-known/openid-configuration', 200],
    ['/.well-known/oauth-authorization-server', 200],
    ['/.well-known/jwks.json', 200],
    ['/connect/authorize', 400],
    ['/connect/token', 405],
    ['/connect/userinfo', 401],
    ['/connect/logout', 200],
    ['/connect/introspect', 405],
    ['/connect/revoke', 405],
    ['/connect/par', 405],
    ['/connect/device', 405],
    ['/connect/verify', 200],
    ['/connect/interaction', 400],
    ['/connect/register', 404],
    ['/healthz', 200],
    ['/readyz', 200],
    ['/', 200],
    ['/nope', 404],
  ] as const
).map(([path, status]) => ({ method: 'HEAD', path, status, kind: 'empty' }))

type Row = readonly [method: string, path: string, status: number, kind: Kind, type?: string, bytes?: number]

/** The cases of `rows`: [method, path, status, kind, body type, body bytes]. */
const cases = (rows: readonly Row[]): Case[] =>
  rows.map(([method, path, status, kind, type, bytes]) => ({
    method,
    path,
    status,
    kind,
    ...(type !== undefined && bytes !== undefined ? { body: { type, bytes } } : {}),
  }))

const TEXT = 'text/plain'
const JSON_TYPE = 'application/json'

const CASES: Case[] = cases([
  // The three of the issue.
  ['DELETE', '/.well-known/openid-configuration', 405, 'json', TEXT, 5],
  ['HEAD', '/connect/logout', 200, 'empty'],
  ['PATCH', '/connect/introspect', 405, 'json', JSON_TYPE, 12],
  // Bodies on GET, DELETE, PATCH and PUT, and bodies of the wrong type.
  ['GET', '/.well-known/jwks.json', 200, 'document', TEXT, 20],
  ['GET', '/connect/token', 405, 'json', FORM, 40],
  ['GET', '/connect/userinfo', 401, 'json', FORM, 40],
  ['GET', '/connect/authorize', 400, 'html', FORM, 40],
  ['GET', '/nope', 404, 'json', TEXT, 8],
  ['DELETE', '/connect/token', 405, 'json', FORM, 40],
  ['DELETE', '/connect/authorize', 405, 'html', FORM, 40],
  ['DELETE', '/healthz', 405, 'json', TEXT, 3],
  ['DELETE', '/nope', 404, 'json', TEXT, 3],
  ['PATCH', '/connect/revoke', 405, 'json', JSON_TYPE, 30],
  ['PATCH', '/connect/logout', 405, 'html', TEXT, 30],
  ['PATCH', '/.well-known/jwks.json', 405, 'json', FORM, 30],
  ['PUT', '/connect/par', 405, 'json', FORM, 30],
  ['POST', '/connect/token', 400, 'json', TEXT, 30],
  ['POST', '/connect/introspect', 400, 'json', JSON_TYPE, 30],
  ['POST', '/connect/logout', 400, 'html', TEXT, 30],
  ['POST', '/.well-known/openid-configuration', 405, 'json', FORM, 30],
  // Large bodies the answer does not read (413 from the declared length, 404, 405, 400, a GET).
  ['POST', '/connect/token', 413, 'json', FORM, 64 * KIB],
  ['POST', '/connect/token', 413, 'json', FORM, 600 * KIB],
  ['POST', '/connect/authorize', 413, 'html', FORM, 100 * KIB],
  ['POST', '/connect/revoke', 400, 'json', TEXT, 200 * KIB],
  ['PUT', '/connect/introspect', 405, 'json', TEXT, 256 * KIB],
  ['DELETE', '/nope', 404, 'json', TEXT, 512 * KIB],
  ['GET', '/.well-known/openid-configuration', 200, 'document', TEXT, 128 * KIB],
]).concat(HEADS)

const ROUNDS = 4
const CONNECTIONS = 6

interface Answer {
  status: number
  type: string
  body: string
}

/** What went wrong with one request: a wrong answer, or a connection reset or dropped. */
function check(c: Case, answer: Answer): string | undefined {
  const label = `${c.method} ${c.path}${c.body ? ` (${c.body.bytes} bytes)` : ''}`
  if (answer.status !== c.status) return `${label}: status ${answer.status}, expected ${c.status}`
  if (c.kind === 'empty') return answer.body === '' ? undefined : `${label}: HEAD answered with content`
  if (c.kind === 'html') return answer.type.startsWith('text/html') ? undefined : `${label}: not a page`
  if (!answer.type.startsWith('application/json')) return `${label}: not JSON (${answer.type})`
  let json: Record<string, unknown>
  try {
    json = JSON.parse(answer.body) as Record<string, unknown>
  } catch {
    return `${label}: not JSON: ${answer.body.slice(0, 100)}`
  }
  if (c.kind === 'json' && typeof json.error !== 'string') return `${label}: no RFC error JSON: ${answer.body}`
  return undefined
}

function send(port: number, agent: Agent, c: Case, sockets: Set<Socket>): Promise<Answer> {
  const body = c.body ? (c.body.type === FORM ? 'a=' : '').padEnd(c.body.bytes, 'x') : undefined
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: c.method,
        path: c.path,
        agent,
        headers: c.body ? { 'content-type': c.body.type, 'content-length': String(c.body.bytes) } : {},
      },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('error', reject)
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            type: String(response.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        )
      },
    )
    request.on('socket', (socket) => sockets.add(socket))
    request.on('error', reject)
    request.end(body)
  })
}

/**
 * Sends CASES ROUNDS times (each round rotated, so that each request follows others) over
 * CONNECTIONS keep-alive connections, every request queued at once: the problems, and how many
 * connections it took.
 */
async function hammer(port: number): Promise<{ problems: string[]; connections: number; requests: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  const sockets = new Set<Socket>()
  const queue = Array.from({ length: ROUNDS }, (_, round) => [
    ...CASES.slice((round * 7) % CASES.length),
    ...CASES.slice(0, (round * 7) % CASES.length),
  ]).flat()
  const problems = await Promise.all(
    queue.map((c) =>
      send(port, agent, c, sockets).then(
        (answer) => check(c, answer),
        (err: NodeJS.ErrnoException) => `${c.method} ${c.path}: ${err.code ?? err.message}`,
      ),
    ),
  )
  agent.destroy()
  return {
    problems: problems.filter((problem): problem is string => problem !== undefined),
    connections: sockets.size,
    requests: queue.length,
  }
}

const running: Running[] = []
afterAll(async () => {
  for (const server of running.splice(0)) await server.stop(10_000).catch(() => undefined)
})

async function start(script: 'start' | 'start:workers'): Promise<number> {
  const port = await freePort()
  const path = script === 'start:workers' ? `${dirname(await node22())}:${process.env.PATH ?? ''}` : process.env.PATH
  const server = launch(['npm', 'run', script], {
    HOST: '127.0.0.1',
    PORT: String(port),
    GATEHOUSE_STORE: 'memory',
    ...(path ? { PATH: path } : {}),
  })
  running.push(server)
  await waitUntilServing(server, `http://127.0.0.1:${port}/healthz`, 60_000)
  return port
}

describe('#39 item 9 malformed requests over keep-alive connections', () => {
  it.each(['start:workers', 'start'] as const)(
    '#39 item 9 npm run %s: every malformed request answered (RFC error JSON, pages, HEAD without content), no connection reset or dropped',
    async (script) => {
      const port = await start(script)
      const { problems, connections, requests } = await hammer(port)
      expect(requests).toBe(ROUNDS * CASES.length)
      expect(problems).toEqual([])
      // Kept alive: no connection was closed under the requests queued on it. Node's client gives
      // a connection up after each HEAD response without Content-Length (both servers keep it);
      // any other connection closed would take one more.
      const heads = CASES.filter((c) => c.method === 'HEAD').length * ROUNDS
      expect(connections).toBeLessThanOrEqual(CONNECTIONS + heads)
    },
    120_000,
  )
})
