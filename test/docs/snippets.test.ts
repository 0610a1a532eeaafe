/**
 * #27 item 13: every TypeScript and JavaScript snippet in README.md and docs/*.md runs as written.
 *
 * Each fenced ```ts / ```js block (also `typescript`, `javascript`, `mjs`) is written to a file of
 * its own in a temporary directory, its `gatehouse-oidc` and `gatehouse-oidc/…` imports (package.json name) pointed at this
 * checkout's sources (the package's `exports` map, `dist/…/x.js` → `…/x.ts`), every other import
 * resolved from the repository's node_modules. Then:
 *
 * - all of them but the fragments are type-checked together by tsc (strict; `.js` blocks with
 *   `checkJs`);
 * - a block without a marker is a complete program: it runs (Node with tsx) and exits 0;
 * - `<!-- snippet: server NAME -->` before the fence: it runs on a free port (`PORT`), and the
 *   check of that NAME below talks to it (discovery, a token, …), then it is stopped;
 * - `<!-- snippet: client NAME -->` (#40 item 5): a program outside the server's process, run
 *   against a started `npm start` (the demo seed) over HTTP with `ISSUER` set; the check of that
 *   NAME below plays the user's part (a browser) and reads what it printed;
 * - `<!-- snippet: typecheck (why) -->`: complete, but needs what a test cannot have (a database,
 *   another host): type-checked only;
 * - `<!-- snippet: fragment -->`: deliberately not standalone (a config entry, a continuation of
 *   the block before). The count per file is pinned below, so a new fragment is a visible choice.
 */
import { execFile } from 'node:child_process'
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Browser, type Page } from '../helpers/browser.ts'
import { SignInProvider, connectWithSignIn, whoami } from '../helpers/mcp.ts'
import { ROOT, type Running, freePort, launch, waitUntilServing } from '../runtime/server.ts'

const run = promisify(execFile)

type Kind = 'run' | 'server' | 'client' | 'typecheck' | 'fragment'

interface Snippet {
  /** `README.md` or `docs/x.md`. */
  file: string
  /** Line of the opening fence (1-based). */
  line: number
  kind: Kind
  /** The server or client check's name (`server NAME`, `client NAME`). */
  name: string
  ext: 'ts' | 'mjs'
  code: string
}

const LANGUAGES: Record<string, Snippet['ext']> = {
  ts: 'ts',
  typescript: 'ts',
  js: 'mjs',
  javascript: 'mjs',
  mjs: 'mjs',
}
const MARKER = /^<!--\s*snippet:\s*(\S+)\s*(.*?)\s*-->$/

/** The fenced ts/js blocks of one markdown file, with the marker before each. */
function extract(file: string): Snippet[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n')
  const snippets: Snippet[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] as string)
    if (!open) continue
    const close = lines.findIndex((line, j) => j > i && /^```\s*$/.test(line))
    if (close < 0) throw new Error(`${file}:${i + 1}: unclosed code fence`)
    const ext = LANGUAGES[(open[1] as string).toLowerCase()]
    if (ext !== undefined) {
      let before = i - 1
      while (before >= 0 && (lines[before] as string).trim() === '') before--
      const marker = MARKER.exec((lines[before] ?? '').trim())
      const kind = (marker?.[1] ?? 'run') as Kind
      if (!['run', 'server', 'client', 'typecheck', 'fragment'].includes(kind) || (kind === 'run' && marker)) {
        throw new Error(`${file}:${before + 1}: unknown snippet marker ${marker?.[0]}`)
      }
      const code = lines.slice(i + 1, close).join('\n')
      const name = kind === 'server' || kind === 'client' ? (marker?.[2] ?? '') : ''
      snippets.push({ file, line: i + 1, kind, name, ext, code })
    }
    i = close
  }
  // A marker must sit right before a ts/js fence: one anywhere else marks nothing.
  lines.forEach((line, index) => {
    if (!MARKER.test(line.trim())) return
    let after = index + 1
    while (after < lines.length && (lines[after] as string).trim() === '') after++
    if (!snippets.some((s) => s.line === after + 1))
      throw new Error(`${file}:${index + 1}: a marker before no ts/js block`)
  })
  return snippets
}

const FILES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]
const SNIPPETS = FILES.flatMap(extract)
const label = (s: Snippet) => `${s.file}:${s.line}`

/** The package name and its subpaths → this checkout's source files, from the package's exports map. */
const MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string
  exports: Record<string, string | { default: string }>
}
const SOURCES: Record<string, string> = (() => {
  const map: Record<string, string> = {}
  for (const [subpath, target] of Object.entries(MANIFEST.exports)) {
    const file = typeof target === 'string' ? target : target.default
    if (!file.startsWith('./dist/')) continue
    map[`${MANIFEST.name}${subpath.slice(1)}`] = join(ROOT, file.slice('./dist/'.length).replace(/\.js$/, '.ts'))
  }
  return map
})()
/** The package's own specifiers (`gatehouse-oidc`, `gatehouse-oidc/…`); test/docs/package_name.test.ts keeps them right. */
const OWN = new RegExp(`(\\bfrom\\s*|\\bimport\\s*\\(?\\s*)(['"])(${MANIFEST.name}(?:/[^'"]*)?)\\2`, 'g')

function rewriteImports(snippet: Snippet): string {
  return snippet.code.replace(OWN, (_whole, lead, quote, spec) => {
    const source = SOURCES[spec as string]
    if (source === undefined) throw new Error(`${label(snippet)}: '${spec}' is not an export of the package`)
    return `${lead}${quote}${source}${quote}`
  })
}

/** The temporary package the snippets live in: ESM, the repository's node_modules. */
const DIR = mkdtempSync(join(tmpdir(), 'gatehouse-snippets-'))
symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(DIR, 'node_modules'), 'dir')
writeFileSync(join(DIR, 'package.json'), JSON.stringify({ name: 'snippets', private: true, type: 'module' }))
mkdirSync(join(DIR, 'src'))
const fileOf = new Map<Snippet, string>()
for (const snippet of SNIPPETS) {
  if (snippet.kind === 'fragment') continue
  const path = join(DIR, 'src', `${snippet.file.replace(/[/.]/g, '_')}_${snippet.line}.${snippet.ext}`)
  writeFileSync(path, `${rewriteImports(snippet)}\n`)
  fileOf.set(snippet, path)
}
writeFileSync(
  join(DIR, 'tsconfig.json'),
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'ESNext',
      moduleResolution: 'bundler',
      lib: ['ES2023', 'DOM', 'DOM.Iterable'],
      types: ['node'],
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      allowJs: true,
      checkJs: true,
      skipLibCheck: true,
    },
    include: ['src'],
  }),
)
afterAll(() => rmSync(DIR, { recursive: true, force: true }))

/** Runs a snippet with Node and tsx (which also loads the checkout's .ts sources). */
function command(snippet: Snippet): string[] {
  return [process.execPath, '--import', 'tsx', fileOf.get(snippet) as string]
}

/** What each `server NAME` snippet must serve, given its base URL; and the environment it needs. */
const SERVERS: Record<string, { env?: Record<string, string>; check: (base: string, port: number) => Promise<void> }> =
  {
    /** README's embedding: discovery names the issuer it is reached at; the job gets a token. */
    embedding: {
      env: { REPORTING_JOB_SECRET: 'snippet-test-secret' },
      async check(base) {
        const discovery = (await (await fetch(`${base}/.well-known/openid-configuration`)).json()) as Record<
          string,
          string
        >
        expect(discovery.issuer).toBe(base)
        expect(discovery.token_endpoint).toBe(`${base}/connect/token`)
        const response = await fetch(discovery.token_endpoint as string, {
          method: 'POST',
          headers: {
            authorization: `Basic ${btoa('reporting-job:snippet-test-secret')}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: 'grant_type=client_credentials&scope=api1',
        })
        const body = (await response.json()) as Record<string, unknown>
        expect(response.status, JSON.stringify(body)).toBe(200)
        expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 })
        expect(body.access_token).toBeTypeOf('string')
      },
    },
    /** docs/mcp.md: the 401 names the metadata, and an MCP SDK client signs in and calls the tool. */
    mcp: {
      async check(base) {
        const challenge = await fetch(`${base}/mcp`, { method: 'POST' })
        expect(challenge.status).toBe(401)
        expect(challenge.headers.get('www-authenticate')).toContain(
          `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
        )
        const provider = new SignInProvider({ redirectUrl: 'http://127.0.0.1:9/snippet-callback' })
        const { client, transport } = await connectWithSignIn(`${base}/mcp`, provider)
        try {
          const caller = await whoami(client)
          expect(caller.sub).toBe('u-1')
          expect(caller.scopes).toContain('mcp:tools')
        } finally {
          await transport.close()
        }
      },
    },
  }

/** What the client snippets share: the user's access token the device CLI printed, for the agent. */
const handed: { subjectToken?: string } = {}

/** Waits until a running snippet printed a line matching `pattern` on stderr. */
async function printed(running: Running, pattern: RegExp, timeoutMs = 20_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const match = pattern.exec(running.output().stderr)
    if (match) return match
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${running.output().stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Each `client NAME` snippet, in the order the page runs them: its environment and what it must do. */
const CLIENTS: Record<string, (running: () => Running, base: string) => Promise<void>> = {
  /** docs/agents.md: the device flow from a CLI; the test is alice at the printed link. */
  'device-cli': async (start, base) => {
    const running = start()
    const [, link] = await printed(running, /Open (\S+) and sign in/)
    expect(link?.startsWith(`${base}/connect/verify?user_code=`)).toBe(true)
    const browser = new Browser((request) => fetch(request))
    const codeForm = (await browser.navigate(link as string)).page as Page
    const userCode = new URL(link as string).searchParams.get('user_code') as string
    const signIn = (await browser.submit(codeForm, { user_code: userCode })).page as Page
    expect(signIn.html, signIn.html).toContain('name="password"')
    const confirm = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
    expect(confirm.html, confirm.html).toContain('value="approve"')
    expect(((await browser.submit(confirm, { decision: 'approve' })).page as Page).status).toBe(200)
    const exit = await running.exited
    expect(exit, running.output().stderr).toEqual({ code: 0, signal: null })
    expect(running.output().stderr).toContain('Signed in as demo-user-1 (openid offline_access api1)')
    handed.subjectToken = running.output().stdout.trim()
    expect(handed.subjectToken).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/)
  },
  /** docs/agents.md: the agent exchanges alice's token (from the CLI) as demo-agent. */
  'exchange-agent': async (start) => {
    const running = start()
    const exit = await running.exited
    expect(exit, running.output().stderr).toEqual({ code: 0, signal: null })
    expect(running.output().stdout).toContain("demo-user-1 api1 { sub: 'demo-agent' }")
  },
}

describe('#27 item 13: the snippets of README.md and docs/ run as written', () => {
  it('#27 item 13: every ts/js block is a program, a server, type-checked only, or a marked fragment', () => {
    const counts: Record<string, Partial<Record<Kind, number>>> = {}
    for (const s of SNIPPETS) {
      const perFile = counts[s.file] ?? {}
      perFile[s.kind] = (perFile[s.kind] ?? 0) + 1
      counts[s.file] = perFile
    }
    // Pinned: a new fragment (or a block that stops running) changes this on purpose.
    expect(counts).toEqual({
      'README.md': { server: 1 },
      'docs/embedding.md': { fragment: 2 }, // #40 item 2: the adapters and the sign-in hook, moved from the README
      'docs/agents.md': { run: 3, client: 2 }, // #29: token exchange, device authorization; #41: CIBA; #40 item 5: against npm start
      'docs/clients.md': { fragment: 1 },
      'docs/grants.md': { run: 1, fragment: 1 }, // #42: the host's grant API; the grantsPage option
      'docs/high-security.md': { fragment: 2 },
      'docs/logout.md': { typecheck: 1 }, // #30: a relying party's back-channel logout endpoint
      'docs/mcp.md': { server: 1, run: 2 }, // #45: enterprise-managed authorization, both roles
      'docs/protocol.md': { run: 1 }, // #41: rich authorization requests, the service's types and hooks
      'docs/resource-servers.md': { run: 1, fragment: 1, typecheck: 2 },
      'docs/storage-and-deployment.md': { typecheck: 2, run: 1, fragment: 1 }, // #28: the SQLite store (Node ≥ 22.5)
      'docs/workers.md': { fragment: 2 }, // the Worker runs under wrangler dev in test/docs/workers_snippet.test.ts (#40 item 3)
    })
    const servers = SNIPPETS.filter((s) => s.kind === 'server').map((s) => s.name)
    expect(servers.sort()).toEqual(Object.keys(SERVERS).sort())
    const clients = SNIPPETS.filter((s) => s.kind === 'client').map((s) => s.name)
    expect(clients).toEqual(Object.keys(CLIENTS))
  })

  it('#27 item 13: every block but the fragments type-checks against this checkout (tsc, strict)', async () => {
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const result = await run(process.execPath, [tsc, '-p', join(DIR, 'tsconfig.json')], { cwd: DIR }).then(
      () => '',
      (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
    )
    // Name the markdown line for each error, not the temporary file.
    const named = result.replace(/src\/([\w]+?)_md_(\d+)\.(?:ts|mjs)/g, (_, file: string, line: string) => {
      return `${file.replace(/^docs_/, 'docs/')}.md (block at line ${line})`
    })
    expect(named).toBe('')
  }, 180_000)

  it.each(SNIPPETS.filter((s) => s.kind === 'run').map((s) => [label(s), s] as const))(
    '#27 item 13: %s runs and exits 0',
    async (_, snippet) => {
      const running = launch(command(snippet), {})
      const timer = setTimeout(() => void running.stop(), 30_000)
      const exit = await running.exited
      clearTimeout(timer)
      expect(exit, running.output().stderr).toEqual({ code: 0, signal: null })
    },
    45_000,
  )

  it.each(SNIPPETS.filter((s) => s.kind === 'server').map((s) => [`${label(s)} (${s.name})`, s] as const))(
    '#27 item 13: %s serves',
    async (_, snippet) => {
      const server = SERVERS[snippet.name]
      if (server === undefined) throw new Error(`no check for the server snippet ${snippet.name}`)
      const port = await freePort()
      const base = `http://localhost:${port}`
      const running = launch(command(snippet), { PORT: String(port), ...server.env })
      try {
        await waitUntilServing(running, `${base}/.well-known/openid-configuration`, 30_000)
        await server.check(base, port)
      } finally {
        await running.stop()
      }
    },
    60_000,
  )

  describe('#40 item 5: the client snippets, against npm start over HTTP', () => {
    let server: Running | undefined
    let base = ''
    beforeAll(async () => {
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      server = launch(['npm', 'start', '--'], { HOST: '127.0.0.1', PORT: String(port), ISSUER: base })
      await waitUntilServing(server, `${base}/.well-known/openid-configuration`, 30_000)
    }, 45_000)
    afterAll(async () => {
      await server?.stop()
    })

    it.each(SNIPPETS.filter((s) => s.kind === 'client').map((s) => [`${label(s)} (${s.name})`, s] as const))(
      '#40 item 5: %s runs against npm start',
      async (_, snippet) => {
        const check = CLIENTS[snippet.name]
        if (check === undefined) throw new Error(`no check for the client snippet ${snippet.name}`)
        const env = { ISSUER: base, ...(handed.subjectToken ? { SUBJECT_TOKEN: handed.subjectToken } : {}) }
        let running: Running | undefined
        try {
          await check(() => {
            running = launch(command(snippet), env)
            return running
          }, base)
        } finally {
          await running?.stop().catch(() => undefined)
        }
      },
      60_000,
    )
  })

  it('#27 item 13: the embedding snippet without REPORTING_JOB_SECRET stops, saying what to set', async () => {
    const snippet = SNIPPETS.find((s) => s.name === 'embedding') as Snippet
    const running = launch(command(snippet), { PORT: String(await freePort()) })
    const timer = setTimeout(() => void running.stop(), 30_000)
    const exit = await running.exited
    clearTimeout(timer)
    expect(exit.code).not.toBe(0)
    expect(running.output().stderr).toContain('set REPORTING_JOB_SECRET')
  }, 45_000)
})
