/**
 * The shape of the code (#22): imports run one way (no module imports, directly or through others,
 * a module that imports it back) and no file grows past 400 lines. Walks every `.ts` file of src/,
 * bin/ and adapters/ and follows their relative imports: `import`, `import type`, `export … from`
 * and literal `import('./…')` (a lazy import is still a dependency).
 * #32: no function in src/ or adapters/ has more than 80 lines of its own.
 *
 * test/unit/ mirrors src/ (#32): the unit test of src/P/X.ts is test/unit/P/X.test.ts, a second file
 * of tests on it test/unit/P/X.<topic>.test.ts, and the tests of a folder src/P/ as a whole (with or
 * without an index.ts) test/unit/P/index.test.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const FOLDERS = ['src', 'bin', 'adapters']
const MAX_LINES = 400
const MAX_OWN_LINES = 80
/** Unit tests of something outside src/ (test/unit/ paths), which so have no src/ file of their name. */
const UNIT_TESTS_OUTSIDE_SRC = new Set([
  'structure.test.ts', // the shape of src/, bin/ and adapters/ (this file)
  'structure.layers.test.ts', // the layers and folder entries of src/
  'global_setup.test.ts', // test/global_setup.ts
])

/** Every `.ts` file below `folder`, as a path relative to the repository root. */
function tsFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(folder, name).split('\\').join('/'))
    .sort()
}

/** The module specifiers of a file's static imports, re-exports and literal dynamic imports. */
function specifiers(source: ts.SourceFile): string[] {
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** Resolves a relative specifier to a walked file, or undefined (a package, or a file outside the walk). */
function resolveImport(from: string, specifier: string, known: Set<string>): string | undefined {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined
  const base = relative(ROOT, resolve(ROOT, dirname(from), specifier))
    .split('\\')
    .join('/')
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, `${base}/index.ts`]
  return candidates.find((candidate) => known.has(candidate))
}

interface Module {
  lines: number
  imports: string[]
}

function readModules(): Map<string, Module> {
  const files = FOLDERS.flatMap(tsFiles)
  const known = new Set(files)
  const modules = new Map<string, Module>()
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8')
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS)
    const imports = specifiers(source)
      .map((specifier) => resolveImport(file, specifier, known))
      .filter((target): target is string => target !== undefined)
    const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length
    modules.set(file, { lines, imports: [...new Set(imports)] })
  }
  return modules
}

/**
 * The import circles, one per strongly connected component (Tarjan), each as a path
 * `a.ts -> b.ts -> a.ts` through that component.
 */
function circles(modules: Map<string, Module>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  let counter = 0
  const connect = (file: string): void => {
    index.set(file, counter)
    low.set(file, counter)
    counter += 1
    stack.push(file)
    onStack.add(file)
    for (const next of modules.get(file)?.imports ?? []) {
      if (!index.has(next)) {
        connect(next)
        low.set(file, Math.min(low.get(file) ?? 0, low.get(next) ?? 0))
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(next) ?? 0))
      }
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    let member: string | undefined
    do {
      member = stack.pop()
      if (member === undefined) break
      onStack.delete(member)
      component.push(member)
    } while (member !== file)
    const selfImport = modules.get(file)?.imports.includes(file) ?? false
    if (component.length > 1 || selfImport) components.push(component)
  }
  for (const file of modules.keys()) if (!index.has(file)) connect(file)
  return components.map((component) => cyclePath(component, modules))
}

/** A path from the component's first file (alphabetically) back to itself, staying inside the component. */
function cyclePath(component: string[], modules: Map<string, Module>): string[] {
  const members = new Set(component)
  const start = [...component].sort()[0] as string
  const previous = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift() as string
    for (const next of modules.get(file)?.imports ?? []) {
      if (!members.has(next)) continue
      if (next === start) {
        const path = [file]
        for (let step = previous.get(file); step !== undefined; step = previous.get(step)) path.unshift(step)
        return [...path, start]
      }
      if (!previous.has(next) && next !== start) {
        previous.set(next, file)
        queue.push(next)
      }
    }
  }
  return [start, start]
}

interface FunctionSize {
  where: string
  name: string
  own: number
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isGetAccessor(node) ||
    ts.isSetAccessor(node) ||
    ts.isConstructorDeclaration(node)
  )
}

/** A function's name: its own, else the variable or property it is assigned to, else `<anonymous>`. */
function functionName(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source)
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) {
    return parent.name.getText(source)
  }
  return ts.isConstructorDeclaration(node) ? 'constructor' : '<anonymous>'
}

/**
 * Own lines of every function, arrow, method and accessor of a file: the lines its body spans
 * minus the lines the bodies of the functions nested in it span (each of those counts on its own).
 */
function functionSizes(file: string): FunctionSize[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line
  const sizes: FunctionSize[] = []
  const visit = (node: ts.Node, enclosing: FunctionSize | undefined): void => {
    if (isFunction(node) && node.body) {
      const span = lineOf(node.body.getEnd()) - lineOf(node.body.getStart(source)) + 1
      const size = {
        where: `${file}:${lineOf(node.getStart(source)) + 1}`,
        name: functionName(node, source),
        own: span,
      }
      if (enclosing) enclosing.own -= span
      sizes.push(size)
      ts.forEachChild(node, (child) => visit(child, size))
      return
    }
    ts.forEachChild(node, (child) => visit(child, enclosing))
  }
  visit(source, undefined)
  return sizes
}

describe('#22 module structure of src/, bin/ and adapters/', () => {
  const modules = readModules()

  it('#22 walks the three folders', () => {
    for (const folder of FOLDERS) expect([...modules.keys()].some((file) => file.startsWith(`${folder}/`))).toBe(true)
  })

  it('#22 has no import circle', () => {
    const found = circles(modules).map((path) => path.join(' -> '))
    expect(found, `import circles:\n${found.join('\n')}`).toEqual([])
  })

  it(`#22 has no file over ${MAX_LINES} lines`, () => {
    const oversized = [...modules]
      .filter(([, module]) => module.lines > MAX_LINES)
      .map(([file, module]) => `${file}: ${module.lines} lines`)
    expect(oversized, `files over ${MAX_LINES} lines:\n${oversized.join('\n')}`).toEqual([])
  })

  it(`#32 has no function in src/ or adapters/ with more than ${MAX_OWN_LINES} lines of its own`, () => {
    const files = [...modules.keys()].filter((file) => file.startsWith('src/') || file.startsWith('adapters/'))
    const sizes = files.flatMap(functionSizes)
    // The walk finds the functions (a measure that found none would pass on anything).
    expect(sizes.length).toBeGreaterThan(500)
    const long = sizes
      .filter((size) => size.own > MAX_OWN_LINES)
      .map((size) => `${size.where} ${size.name}: ${size.own} own lines`)
    expect(long, `functions over ${MAX_OWN_LINES} own lines:\n${long.join('\n')}`).toEqual([])
  })
})

/**
 * The src/ path a unit test's path names (test/unit/P/X[.topic].test.ts → src/P/X.ts or the folder
 * src/P/X/; test/unit/P/index[.topic].test.ts → the folder src/P/), or undefined if there is none.
 */
function testedSource(testPath: string): string | undefined {
  const folder = dirname(testPath)
  const stem = (testPath.split('/').pop() as string).split('.')[0] as string
  const base = folder === '.' ? join(ROOT, 'src', stem) : join(ROOT, 'src', folder, stem)
  const candidates = [`${base}.ts`, base]
  if (stem === 'index') candidates.push(dirname(base))
  return candidates.find((candidate) => existsSync(candidate))
}

describe('#32 test/unit/ mirrors src/', () => {
  const tests = readdirSync(join(ROOT, 'test/unit'), { recursive: true, encoding: 'utf8' })
    .map((name) => name.split('\\').join('/'))
    .filter((name) => name.endsWith('.test.ts'))
    .sort()

  it('#32 every unit test is named by the path of the src/ file or folder it tests', () => {
    expect(tests.length).toBeGreaterThan(30)
    const orphans = tests.filter((test) => !UNIT_TESTS_OUTSIDE_SRC.has(test) && testedSource(test) === undefined)
    expect(orphans, `unit tests without a src/ file or folder of their path:\n${orphans.join('\n')}`).toEqual([])
  })

  it('#32 the path rule finds a file, a second file of tests, a folder, and refuses an unknown name', () => {
    expect(testedSource('clients/cache.test.ts')).toBe(join(ROOT, 'src/clients/cache.ts'))
    expect(testedSource('dpop/proof.nonce.test.ts')).toBe(join(ROOT, 'src/dpop/proof.ts'))
    expect(testedSource('dpop/index.test.ts')).toBe(join(ROOT, 'src/dpop/index.ts'))
    expect(testedSource('dpop.test.ts')).toBe(join(ROOT, 'src/dpop'))
    expect(testedSource('http.test.ts')).toBe(join(ROOT, 'src/http.ts'))
    expect(testedSource('clients_sync.test.ts')).toBeUndefined()
    expect(testedSource('dpop/binding.test.ts')).toBeUndefined()
  })

  it('#32 the exceptions are still there (a stale exception is removed)', () => {
    for (const test of UNIT_TESTS_OUTSIDE_SRC) expect(tests).toContain(test)
  })
})
