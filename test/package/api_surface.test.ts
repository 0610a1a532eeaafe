/**
 * The public API surface (#18): every name each package subpath exports, values and types, read
 * by the TypeScript compiler from the entry files `package.json` maps, against the committed report
 * test/package/api_surface.txt. A change to the surface fails here and shows in review as a diff
 * of that file; after a deliberate change, `UPDATE_API_SURFACE=1 npx vitest run test/package/api_surface.test.ts`
 * rewrites it (and the CHANGELOG says what changed).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../runtime/server.ts'

const REPORT = join(ROOT, 'test/package/api_surface.txt')
const MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string
  exports: Record<string, string | { types: string; default: string }>
}

/** The source file behind a subpath: dist/<path>.js was built from <path>.ts. */
function sourceOf(target: { default: string }): string {
  return join(ROOT, target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'))
}

function surface(): string {
  const entries = Object.entries(MANIFEST.exports).filter(
    (entry): entry is [string, { types: string; default: string }] => typeof entry[1] !== 'string',
  )
  const files = entries.map(([, target]) => sourceOf(target))
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    skipLibCheck: true,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
  })
  const checker = program.getTypeChecker()
  const lines: string[] = []
  for (const [subpath, target] of entries) {
    const file = program.getSourceFile(sourceOf(target))
    const symbol = file && checker.getSymbolAtLocation(file)
    if (!symbol) throw new Error(`cannot read ${subpath}`)
    const names = checker.getExportsOfModule(symbol).map((exported) => {
      const resolved = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
      const kind = resolved.flags & ts.SymbolFlags.Value ? 'value' : 'type'
      return `${kind} ${exported.getName()}`
    })
    lines.push(`${MANIFEST.name}${subpath === '.' ? '' : subpath.slice(1)}`, ...names.sort().map((name) => `  ${name}`))
  }
  return `${lines.join('\n')}\n`
}

describe('#18 the public API surface', () => {
  it('#18 every subpath exports exactly what test/package/api_surface.txt lists', () => {
    const actual = surface()
    if (process.env.UPDATE_API_SURFACE === '1') writeFileSync(REPORT, actual)
    expect(actual).toBe(readFileSync(REPORT, 'utf8'))
  }, 60_000)
  it('#18 deno.json (JSR) and package.json (npm) carry the same version', () => {
    const deno = JSON.parse(readFileSync(join(ROOT, 'deno.json'), 'utf8')) as { name: string; version: string }
    const npm = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    expect(deno.name).toBe('@gatehouse-oidc/gatehouse-oidc')
    expect(deno.version).toBe(npm.version)
  })
})
