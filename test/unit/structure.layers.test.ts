/**
 * The layers of src/ and the faces of its folders (#32), as docs/architecture.md draws them:
 * - value imports run downward through LAYERS (a module imports from its own layer or below);
 *   type-only imports are free (they carry no code: `context.ts` names every component's type),
 *   and the few upward imports that remain are named in UPWARD, each with its reason;
 * - a folder is entered through the files ENTRIES names (its `index.ts` where the folder is one
 *   family); no file outside the folder (src/, adapters/, bin/) imports any other of its files.
 * Walks the same files and imports as structure.test.ts (static, `export … from`, literal `import()`).
 */
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** Top (the package's entries) to bottom (what every layer uses); a unit is a src/ folder or top-level file. */
const LAYERS: readonly (readonly string[])[] = [
  ['index.ts', 'worker/', 'resource_server/', 'client_credentials_source.ts'],
  ['service/', 'config/'],
  ['handler.ts', 'routes.ts', 'cors.ts', 'ops/'],
  ['endpoints/'],
  ['grants/', 'interaction/', 'logout/'],
  ['clients/', 'client_auth/', 'dpop/', 'accounts/', 'protocol/'],
  ['tokens/', 'keys/', 'security/', 'pages/', 'events/'],
  ['storage/'],
  ['context.ts', 'http.ts', 'errors.ts', 'schema_issues.ts', 'optional_import.ts'],
]

/** The value imports that run upward, and why (docs/architecture.md "Layers" names the same). */
const UPWARD: Readonly<Record<string, string>> = {
  'src/clients/registration.ts -> src/config/defaults.ts': 'every default of the service lives in one file',
  'src/clients/dynamic_usage.ts -> src/config/defaults.ts': 'every default of the service lives in one file',
  'src/endpoints/registration.ts -> src/config/defaults.ts': 'every default of the service lives in one file',
  'src/grants/token_exchange_subject.ts -> src/endpoints/introspection.ts':
    'a subject token is checked exactly as introspection checks it (RFC 8693 §2.1)',
}

/** Per src/ folder, the files the rest of the code may import; its other files are its own. */
const ENTRIES: Readonly<Record<string, readonly string[]>> = {
  accounts: ['index.ts', 'users.ts'],
  client_auth: ['index.ts', 'client_jwks.ts'],
  clients: [
    'index.ts',
    'metadata.ts',
    'metadata_document.ts',
    'permissions.ts',
    'record.ts',
    'registration.ts',
    'secrets.ts',
    'self_registered_redirects.ts',
  ],
  config: ['index.ts', 'defaults.ts', 'file.ts', 'options.ts', 'schema.ts'],
  dpop: ['nonce.ts', 'nonce_secret.ts', 'proof.ts', 'proof_key.ts', 'request.ts', 'resource.ts'],
  endpoints: [
    'authorize.ts',
    'device_authorization.ts',
    'discovery.ts',
    'interaction.ts',
    'introspection.ts',
    'logout.ts',
    'par.ts',
    'registration.ts',
    'revocation.ts',
    'token.ts',
    'userinfo.ts',
    'verify.ts',
  ],
  events: ['index.ts', 'logger.ts', 'types.ts'],
  grants: [
    'authorization_code.ts',
    'client_credentials.ts',
    'device_code.ts',
    'issue.ts',
    'refresh_token.ts',
    'token_exchange.ts',
    'token_exchange_options.ts',
    'types.ts',
  ],
  interaction: [
    'cookies.ts',
    'device.ts',
    'device_pages.ts',
    'device_user_code.ts',
    'flow.ts',
    'host.ts',
    'password.ts',
    'types.ts',
  ],
  keys: ['algorithms.ts', 'keyring.ts'],
  logout: ['backchannel.ts', 'options.ts'],
  ops: ['demo_client.ts', 'health.ts', 'health_options.ts', 'landing.ts', 'metrics.ts'],
  pages: ['index.ts', 'consent.ts', 'theme.ts'],
  protocol: ['authorization_response.ts', 'claims_request.ts', 'profile.ts', 'resource_indicators.ts', 'scopes.ts'],
  resource_server: ['index.ts'],
  security: ['networks.ts', 'request_meta.ts', 'secrets.ts', 'throttle.ts'],
  service: ['create_context.ts'],
  storage: [
    'types.ts',
    'memory.ts',
    'postgres.ts',
    'postgres_worker.ts',
    'pglite.ts',
    'sqlite.ts',
    'd1.ts',
    'redis.ts',
    'request_scope.ts',
    'sql/dialect.ts',
    'sql/migrate.ts',
    'sql/store.ts',
  ],
  tokens: [
    'access_token.ts',
    'compact_jws.ts',
    'id_token.ts',
    'id_token_hint.ts',
    'opaque.ts',
    'pkce.ts',
    'user_code.ts',
    'verified_cache.ts',
  ],
  worker: ['index.ts', 'store.ts'],
}

interface Edge {
  from: string
  to: string
  typeOnly: boolean
}

function tsFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => join(folder, name).split('\\').join('/'))
}

/** Whether an import or export declaration brings in types only. */
function typeOnly(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) return node.isTypeOnly
  const clause = node.importClause
  if (!clause) return false
  if (clause.isTypeOnly) return true
  const bindings = clause.namedBindings
  return (
    !clause.name &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.every((e) => e.isTypeOnly)
  )
}

/** Every relative import between the walked files. */
function edges(): Edge[] {
  const files = ['src', 'adapters', 'bin'].flatMap(tsFiles)
  const known = new Set(files)
  const found: Edge[] = []
  for (const from of files) {
    const source = ts.createSourceFile(from, readFileSync(join(ROOT, from), 'utf8'), ts.ScriptTarget.Latest, false)
    const add = (specifier: string, only: boolean): void => {
      if (!specifier.startsWith('.')) return
      const base = relative(ROOT, resolve(ROOT, dirname(from), specifier))
        .split('\\')
        .join('/')
      const to = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, `${base}/index.ts`].find((c) => known.has(c))
      if (to) found.push({ from, to, typeOnly: only })
    }
    const visit = (node: ts.Node): void => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
        if (ts.isStringLiteral(node.moduleSpecifier)) add(node.moduleSpecifier.text, typeOnly(node))
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteralLike(node.arguments[0])
      ) {
        add(node.arguments[0].text, false)
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return found
}

/** A src/ file's unit: `folder/` or the top-level file's name; undefined outside src/. */
function unitOf(file: string): string | undefined {
  const parts = file.split('/')
  if (parts[0] !== 'src') return undefined
  return parts.length > 2 ? `${parts[1]}/` : parts[1]
}

const layerOf = (file: string): number => LAYERS.findIndex((layer) => layer.includes(unitOf(file) ?? ''))

describe('#32 layers and folder entries of src/', () => {
  const all = edges()

  it('#32 walks the imports (a walk that found none would pass on anything)', () => {
    expect(all.length).toBeGreaterThan(800)
    expect(all.some((edge) => edge.typeOnly)).toBe(true)
  })

  it('#32 places every src/ file in a layer', () => {
    const files = tsFiles('src')
    expect(files.filter((file) => layerOf(file) < 0)).toEqual([])
  })

  it('#32 value imports run downward, but for the named few', () => {
    const upward = all
      .filter((edge) => !edge.typeOnly && edge.from.startsWith('src/') && layerOf(edge.to) < layerOf(edge.from))
      .map((edge) => `${edge.from} -> ${edge.to}`)
    const unnamed = [...new Set(upward)].filter((edge) => !(edge in UPWARD))
    expect(unnamed, `upward imports not named in UPWARD (and docs/architecture.md):\n${unnamed.join('\n')}`).toEqual([])
    const stale = Object.keys(UPWARD).filter((edge) => !upward.includes(edge))
    expect(stale, 'named upward imports that no longer exist').toEqual([])
  })

  it('#32 a folder is imported only through its entries', () => {
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory())
    expect(folders.map((e) => e.name).sort()).toEqual(Object.keys(ENTRIES).sort())
    const reaching = all
      .filter((edge) => {
        const unit = unitOf(edge.to)
        if (!unit?.endsWith('/') || unitOf(edge.from) === unit) return false
        const inner = edge.to.slice(`src/${unit}`.length)
        return !ENTRIES[unit.slice(0, -1)]?.includes(inner)
      })
      .map((edge) => `${edge.from} -> ${edge.to}`)
    expect([...new Set(reaching)], 'imports of another folder’s own files').toEqual([])
    const missing = Object.entries(ENTRIES).flatMap(([folder, files]) =>
      files.filter((file) => !all.some((edge) => edge.to === `src/${folder}/${file}`)).map((f) => `${folder}/${f}`),
    )
    expect(
      missing.filter((entry) => entry !== 'resource_server/index.ts'),
      'entries nothing imports',
    ).toEqual([])
  })
})
