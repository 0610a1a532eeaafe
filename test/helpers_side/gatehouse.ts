/**
 * A real Gatehouse over HTTP for the helper tests: the Node adapter on 127.0.0.1, port 0, with a
 * handler wrapper that counts requests per path and can answer the next request to a path with a
 * canned failure. No `.test` suffix: used by the test files beside it.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { importJWK, SignJWT, type JWTPayload } from 'jose'
import { serveNode } from '../../adapters/node.ts'
import { type TokenService, type TokenServiceOptions, createTokenService } from '../../src/index.ts'
import { CLIENTS, basic, clock } from '../helpers/service.ts'

export const WRITER = {
  clientId: 'writer',
  clientSecret: 'writer-secret',
  permissions: ['ept:token', 'gt:client_credentials', 'scp:api1', 'scp:api1.write'],
}

export interface Gatehouse {
  issuer: string
  service: TokenService
  /** The service's clock (epoch seconds), starting at the real time. */
  clock: ReturnType<typeof clock>
  /** Requests served per pathname. */
  count(pathname: string): number
  /** Answers the next request to `pathname` with `response` instead of the service. */
  failNext(pathname: string, response: () => Response): void
  /** A client_credentials token from the token endpoint (default client `service`, scope api1). */
  token(client?: { clientId: string; clientSecret: string }, scope?: string): Promise<string>
  /** Signs `claims` with the service's current ES256 (or `alg`) key (to forge headers and claims). */
  forge(claims: JWTPayload, header?: { typ?: string; alg?: string }): Promise<string>
  close(): Promise<void>
}

/** Starts a Gatehouse with the `service` and `writer` clients and the scopes api1, api1.write, api2. */
export async function startGatehouse(options: Partial<TokenServiceOptions> = {}): Promise<Gatehouse> {
  const counts = new Map<string, number>()
  const failures = new Map<string, () => Response>()
  let service: TokenService | undefined
  const server: Server = await serveNode(
    async (request) => {
      const { pathname } = new URL(request.url)
      counts.set(pathname, (counts.get(pathname) ?? 0) + 1)
      const failure = failures.get(pathname)
      if (failure) {
        failures.delete(pathname)
        return failure()
      }
      if (!service) return new Response('starting', { status: 503 })
      return service.fetch(request)
    },
    { port: 0, hostname: '127.0.0.1' },
  )
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const time = clock(Math.floor(Date.now() / 1000))
  const created = createTokenService({
    issuer,
    now: time.now,
    secretHashIterations: 1000,
    logger: { warn() {}, error() {} },
    scopes: [{ name: 'api1.write', audience: 'api1' }, 'api2'],
    ...options,
  })
  await created.clients.ensure(CLIENTS.service as NonNullable<typeof CLIENTS.service>)
  await created.clients.ensure(WRITER)
  await created.ready()
  service = created

  return {
    issuer,
    service: created,
    clock: time,
    count: (pathname) => counts.get(pathname) ?? 0,
    failNext(pathname, response) {
      failures.set(pathname, response)
    },
    async token(client = { clientId: 'service', clientSecret: 'service-secret' }, scope = 'api1') {
      const response = await fetch(`${issuer}/connect/token`, {
        method: 'POST',
        headers: { authorization: basic(client.clientId, client.clientSecret) },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
      })
      if (response.status !== 200) throw new Error(`token endpoint: ${response.status} ${await response.text()}`)
      return ((await response.json()) as { access_token: string }).access_token
    },
    async forge(claims, header = {}) {
      const now = time.now()
      const alg = header.alg ?? 'ES256'
      const record = (await created.store.keys.list()).find(
        (r) => r.alg === alg && r.activatesAt <= now && (r.retiresAt === undefined || r.retiresAt > now),
      )
      if (!record) throw new Error(`no ${alg} signing key`)
      const key = await importJWK(record.privateJwk as Parameters<typeof importJWK>[0], alg)
      return new SignJWT(claims).setProtectedHeader({ alg, kid: record.kid, typ: header.typ ?? 'at+jwt' }).sign(key)
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await created.close()
    },
  }
}
