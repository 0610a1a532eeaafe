// A TypeScript consumer of the installed package, type-checked (never run) by test/package/pack.test.ts
// under `moduleResolution: nodenext` and `bundler` with skipLibCheck off: every subpath, the
// types a host names, and the README's embedding snippets' shapes.
import { type TokenService, type TokenServiceOptions, createMemoryStore, createTokenService } from 'gatehouse-oidc'
import { serveBun } from 'gatehouse-oidc/adapters/bun'
import { serveDeno } from 'gatehouse-oidc/adapters/deno'
import { nodeServiceOptions, serveNode } from 'gatehouse-oidc/adapters/node'
import { type ClientCredentialsSource, createClientCredentialsSource } from 'gatehouse-oidc/client'
import { type ResourceServer, createResourceServer } from 'gatehouse-oidc/resource-server'
import { createPgliteStore } from 'gatehouse-oidc/storage/pglite'
import { createPostgresStore } from 'gatehouse-oidc/storage/postgres'
import { createRedisStore } from 'gatehouse-oidc/storage/redis'

const options: TokenServiceOptions = { issuer: 'http://localhost:3000', store: createMemoryStore() }
const service: TokenService = createTokenService({ ...options, ...nodeServiceOptions() })
export const handler: (request: Request) => Promise<Response> = service.fetch

export const stores = [
  createPostgresStore({ url: 'postgres://localhost/db' }),
  createRedisStore({ url: 'redis://localhost:6379' }),
  createPgliteStore({}),
]

export async function servers(): Promise<void> {
  const node = await serveNode(service.fetch, { port: 3000 })
  node.close()
  const bun = serveBun(service.fetch, { port: 3001 })
  await bun.stop()
  const deno = await serveDeno(service.fetch, { port: 3002 })
  await deno.shutdown()
}

export const api: ResourceServer = createResourceServer({ issuer: 'http://localhost:3000', audience: 'api1' })
export const source: ClientCredentialsSource = createClientCredentialsSource({
  issuer: 'http://localhost:3000',
  clientId: 'job',
  clientSecret: 'secret',
})
