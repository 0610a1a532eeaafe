// Run inside a project that installed the packed tarball, by Node, Bun or Deno:
//   <runtime> check_imports.mjs core|all
// Prints one JSON line: which subpaths imported, the error of each that did not, the status and
// issuer of a discovery request answered by the imported handler (no sockets), and `outbound`: why
// the plain `createTokenService` of 'gatehouse-oidc' refused a Client ID Metadata Document on this
// machine's own host name (#39 item 5). The name resolves to the machine's loopback or private
// address: the pinned outbound fetch of the "node" export condition resolves it and refuses it as
// private; the Web entry (no way to pin a name) refuses it as a host name without resolving it.
const mode = process.argv[2] ?? globalThis.Deno?.args[0] ?? 'core'

const SUBPATHS = [
  'gatehouse-oidc',
  'gatehouse-oidc/resource-server',
  'gatehouse-oidc/client',
  'gatehouse-oidc/adapters/node',
  'gatehouse-oidc/adapters/bun',
  'gatehouse-oidc/adapters/deno',
  'gatehouse-oidc/storage/postgres',
  'gatehouse-oidc/storage/redis',
  'gatehouse-oidc/storage/pglite',
  'gatehouse-oidc/storage/sqlite',
]

const imported = {}
const failed = {}
for (const subpath of SUBPATHS) {
  try {
    const module = await import(subpath)
    imported[subpath] = Object.keys(module).sort()
  } catch (error) {
    failed[subpath] = error instanceof Error ? error.message : String(error)
  }
}

const { createTokenService } = await import('gatehouse-oidc')
const issuer = 'https://auth.example.test'
const service = createTokenService({ issuer })
const response = await service.fetch(new Request(`${issuer}/.well-known/openid-configuration`))
const discovery = { status: response.status, issuer: (await response.json()).issuer }
await service.close?.()

const { hostname } = await import('node:os')
const cimd = createTokenService({ issuer, scopes: ['mcp'], clientIdMetadataDocuments: { scopes: ['mcp'] } })
const pushed = await cimd.fetch(
  new Request(`${issuer}/connect/par`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: `https://${hostname()}/client.json`,
      response_type: 'code',
      redirect_uri: 'https://app.example.test/cb',
      scope: 'mcp',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }),
  }),
)
const outbound = { host: hostname(), status: pushed.status, ...(await pushed.json()) }
await cimd.close?.()

console.log(JSON.stringify({ mode, imported, failed, discovery, outbound }))
