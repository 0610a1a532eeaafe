// Run inside a project that installed the packed tarball, by Node, Bun or Deno:
//   <runtime> check_imports.mjs core|all
// Prints one JSON line: which subpaths imported, the error of each that did not, and the status
// and issuer of a discovery request answered by the imported handler (no sockets).
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

console.log(JSON.stringify({ mode, imported, failed, discovery }))
