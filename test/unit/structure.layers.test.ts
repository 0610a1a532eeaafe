/**
 * The layers of src/ and the faces of its folders (#32), as docs/architecture.md draws them:
 * - every import, value or type, runs downward through LAYERS (a module imports from its own
 *   layer or below), with no exception;
 * - a folder is entered through its `index.ts`, which only re-exports; no file outside the folder
 *   (src/, adapters/, bin/) imports any other of its files. The one exception is named in
 *   OWN_ENTRIES: a storage driver's store, a package subpath of its own.
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
  ['service/', 'handler.ts', 'routes.ts', 'cors.ts'],
  ['endpoints/', 'ops/'],
  ['grants/', 'interaction/', 'logout/'],
  ['protocol/', 'client_auth/'],
  ['context.ts'],
  ['dpop/', 'tokens/'],
  ['config/'],
  ['clients/', 'accounts/', 'defaults.ts'],
  ['keys/', 'pages/', 'security/'],
  ['storage/', 'http.ts'],
  ['crypto/', 'events/', 'errors.ts', 'schema_issues.ts', 'optional_import.ts'],
]

/**
 * Files besides `index.ts` that the rest may import, and why: each driver's store is a package
 * subpath (`gatehouse-oidc/storage/postgres`, …), imported only where that driver is chosen (bin/'s
 * lazy `import()`, the Workers entry), so that the optional drivers stay optional.
 */
const OWN_ENTRIES: Readonly<Record<string, readonly string[]>> = {
  storage: ['postgres.ts', 'postgres_worker.ts', 'pglite.ts', 'sqlite.ts', 'd1.ts', 'redis.ts'],
}

/** The folders whose `index.ts` is a package entry with code of its own (package.json `exports`). */
const CODE_ENTRIES: ReadonlySet<string> = new Set(['resource_server', 'worker'])

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

  it('#32 every import, value or type, runs downward', () => {
    const upward = all
      .filter((edge) => edge.from.startsWith('src/') && layerOf(edge.to) < layerOf(edge.from))
      .map((edge) => `${edge.from} -> ${edge.to}${edge.typeOnly ? ' (type)' : ''}`)
    expect([...new Set(upward)], 'imports from a higher layer').toEqual([])
  })

  it('#32 a folder is imported only through its index.ts', () => {
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory())
    expect(folders.length).toBeGreaterThan(15)
    expect(Object.keys(OWN_ENTRIES).filter((f) => !folders.some((e) => e.name === f))).toEqual([])
    const reaching = all
      .filter((edge) => {
        const unit = unitOf(edge.to)
        if (!unit?.endsWith('/') || unitOf(edge.from) === unit) return false
        const inner = edge.to.slice(`src/${unit}`.length)
        return inner !== 'index.ts' && !OWN_ENTRIES[unit.slice(0, -1)]?.includes(inner)
      })
      .map((edge) => `${edge.from} -> ${edge.to}`)
    expect([...new Set(reaching)], 'imports of another folder’s own files').toEqual([])
    const unused = Object.entries(OWN_ENTRIES).flatMap(([folder, files]) =>
      files.filter((file) => !all.some((edge) => edge.to === `src/${folder}/${file}`)).map((f) => `${folder}/${f}`),
    )
    expect(unused, 'named entries nothing imports').toEqual([])
  })

  it('#32 every folder has an index.ts, and it only re-exports (but for the package entries named)', () => {
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory())
    const faces = folders.map((e) => `src/${e.name}/index.ts`)
    const missing = faces.filter((face) => !tsFiles('src').includes(face))
    expect(missing, 'folders without an index.ts').toEqual([])
    const withCode = folders
      .filter((e) => !CODE_ENTRIES.has(e.name))
      .filter((e) => {
        const file = `src/${e.name}/index.ts`
        const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest)
        return source.statements.some((node) => !(ts.isExportDeclaration(node) && node.moduleSpecifier))
      })
      .map((e) => e.name)
    expect(withCode, 'index.ts files with statements other than `export … from`').toEqual([])
    for (const name of CODE_ENTRIES) expect(folders.map((e) => e.name)).toContain(name)
  })
})
