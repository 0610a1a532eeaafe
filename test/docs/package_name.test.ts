/**
 * #40 item 1: the package's name, as README.md, docs/*.md and examples/ spell it, is package.json's.
 *
 * The registry's `gatehouse` is another project: a page that has a newcomer install or import that
 * bare name sends them to someone else's software. Every import specifier, subpath,
 * install command, `npm:` / `jsr:` specifier and example dependency that names Gatehouse's package
 * must name package.json's `name` (and, for a subpath, one of its `exports`); the JSR name in
 * deno.json follows it (`@NAME/NAME`).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../runtime/server.ts'

const MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string
  exports: Record<string, unknown>
}
const NAME = MANIFEST.name
const JSR = (JSON.parse(readFileSync(join(ROOT, 'deno.json'), 'utf8')) as { name: string }).name
const SUBPATHS = new Set(Object.keys(MANIFEST.exports).map((subpath) => `${NAME}${subpath.slice(1)}`))

/** README.md, docs/*.md and every text file of examples/ (not node_modules, lock files, tarballs). */
function files(): string[] {
  const found = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
    f.endsWith('.md'),
  )
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir))) {
      const path = `${dir}/${entry}`
      if (['node_modules', '.next', '.wrangler', 'package-lock.json'].includes(entry)) continue
      if (statSync(join(ROOT, path)).isDirectory()) walk(path)
      else if (/\.(md|ts|tsx|mjs|js|json|jsonc|toml|example)$/.test(entry)) found.push(path)
    }
  }
  walk('examples')
  return found
}

/** A name that looks like this package's (`gatehouse`, `gatehouse-x`, `@gatehouse/x`), with its subpath. */
const LOOKS_OURS = /^@?gatehouse[\w.-]*(\/[\w./-]*)?$/

interface Use {
  where: string
  what: string
  spec: string
}

function uses(file: string): Use[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const found: Use[] = []
  const at = (index: number): string => `${file}:${text.slice(0, index).split('\n').length}`
  const patterns: [string, RegExp][] = [
    ['import', /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g],
    ['subpath', /(?<![\w@./:-])(@?gatehouse[\w.-]*\/(?:adapters|storage|resource-server|client)\b[\w/-]*)/g],
    ['install', /\b(?:npm|pnpm|yarn|bun|deno) (?:install|add|i)(?: -\S+)* ((?!jsr:|npm:)[@\w][\w@./-]*)/g],
    ['npm:', /\bnpm:(@?[\w.-]+(?:\/[\w./-]*)?)/g],
    ['dependency', /"([^"]+)":\s*"file:gatehouse\.tgz"/g],
  ]
  for (const [what, pattern] of patterns) {
    for (const match of text.matchAll(pattern)) {
      const spec = (match[1] as string).replace(/@[\^~\d][\w.^~-]*$/, '')
      if (LOOKS_OURS.test(spec) || what === 'dependency') found.push({ where: at(match.index), what, spec })
    }
  }
  for (const match of text.matchAll(/\bjsr:(@[\w-]+\/[\w-]+)/g)) {
    found.push({ where: at(match.index), what: 'jsr:', spec: match[1] as string })
  }
  return found
}

describe('#40 item 1: the docs and examples name the package as package.json does', () => {
  const all = files().flatMap(uses)

  it('#40 item 1: the JSR name follows the npm name', () => {
    expect(JSR).toBe(`@${NAME}/${NAME}`)
  })

  it('#40 item 1: README, docs and examples use the package (the check sees them)', () => {
    // Pinned lower bounds: the scan finds the imports it is meant to check.
    expect(all.filter((u) => u.what === 'import').length).toBeGreaterThan(20)
    const dependencies = all.filter((u) => u.what === 'dependency' && u.where.includes('package.json'))
    expect(dependencies.map((u) => u.where.split(':')[0])).toEqual([
      'examples/cloudflare-worker/package.json',
      'examples/mcp-server/package.json',
      'examples/nextjs/package.json',
    ])
  })

  it('#40 item 1: every import path, subpath, install command and dependency is package.json name (or its exports)', () => {
    const wrong = all
      .filter(({ what, spec }) => {
        if (what === 'jsr:') return spec !== JSR
        if (what === 'install' || what === 'dependency') return spec !== NAME
        return !SUBPATHS.has(spec) && !(spec === `${NAME}/package.json`)
      })
      .map(({ where, what, spec }) => `${where} (${what}) ${spec}`)
    expect(wrong).toEqual([])
  })
})
