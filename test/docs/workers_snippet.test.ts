/**
 * #40 items 3 and 4: docs/workers.md's Worker, with the `wrangler.toml` and `.dev.vars` the page
 * documents, under `wrangler dev` (wrangler and workerd from examples/cloudflare-worker's
 * node_modules, Gatehouse from the packed tarball installed there; Node 22.12+).
 *
 * - without `SERVICE_SECRET` in `.dev.vars`: 503, and the log names SERVICE_SECRET and .dev.vars;
 * - with it: discovery names the `.dev.vars` ISSUER, and the secret gets a token;
 * - a new `SERVICE_SECRET` and a restart on the same local D1: the new secret works, the old one
 *   is `invalid_client` (the page's `clients.sync`; `ensure` kept the first secret forever).
 *
 * Runs when examples/cloudflare-worker/node_modules exists or GATEHOUSE_TEST_CLOUDFLARE_EXAMPLE=1,
 * as test/examples/cloudflare_worker.test.ts does (CI installs the example first).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { node22Binary } from '../storage/sqlite_node22.ts'
import { ROOT, type Running, freePort, launch, node22 } from '../runtime/server.ts'

const APP = join(ROOT, 'examples/cloudflare-worker')
const enabled = process.env.GATEHOUSE_TEST_CLOUDFLARE_EXAMPLE === '1' || existsSync(join(APP, 'node_modules'))
const SKIPPED = 'skipped: examples/cloudflare-worker is not installed (npm run pack:example, then npm ci there)'
if (!enabled) console.info(`test/docs/workers_snippet.test.ts ${SKIPPED}`)

/** The blocks of docs/workers.md the page tells a reader to save: the Worker, wrangler.toml, .dev.vars. */
function pageFiles(): { worker: string; toml: string; devVars: string } {
  const text = readFileSync(join(ROOT, 'docs/workers.md'), 'utf8')
  const blocks = [...text.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], code: m[2] as string }))
  const worker = blocks.find((b) => b.lang === 'ts' && b.code.startsWith('// src/worker/index.ts'))
  const toml = blocks.find((b) => b.lang === 'toml' && b.code.includes('main = "src/worker/index.ts"'))
  const devVars = blocks.find((b) => b.lang === 'ini' && b.code.startsWith('# .dev.vars'))
  if (!worker || !toml || !devVars)
    throw new Error('docs/workers.md: the Worker, wrangler.toml or .dev.vars block is gone')
  return { worker: worker.code, toml: toml.code, devVars: devVars.code }
}

describe.skipIf(!enabled)('#40 items 3, 4: docs/workers.md under wrangler dev, with its .dev.vars', () => {
  const files = pageFiles()
  let dir = ''
  let node = ''
  let port = 0
  let base = ''
  let running: Running | undefined

  /** The page's .dev.vars for this port (as the page says: ISSUER names wrangler dev's port). */
  function devVars(secret: string | undefined): string {
    const lines = files.devVars.replace('http://localhost:8787', base).split('\n')
    return lines
      .filter((line) => secret !== undefined || !line.startsWith('SERVICE_SECRET='))
      .map((line) => (secret !== undefined && line.startsWith('SERVICE_SECRET=') ? `SERVICE_SECRET=${secret}` : line))
      .join('\n')
  }

  async function start(secret: string | undefined): Promise<Running> {
    writeFileSync(join(dir, '.dev.vars'), devVars(secret))
    const inspector = await freePort()
    const wrangler = join(APP, 'node_modules/wrangler/bin/wrangler.js')
    const args = ['dev', '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector)]
    running = launch(
      [node, wrangler, ...args, '--persist-to', join(dir, 'state'), '--show-interactive-dev-session=false'],
      { PATH: `${dirname(node)}:${process.env.PATH ?? ''}`, CI: '1', WRANGLER_SEND_METRICS: 'false' },
      dir,
    )
    // Any answer will do (without the secret every answer is a 503): wrangler dev is listening.
    const deadline = Date.now() + 60_000
    for (;;) {
      const answered = await fetch(`${base}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2000) })
        .then(async (response) => {
          await response.body?.cancel()
          return true
        })
        .catch(() => false)
      if (answered) return running
      if (Date.now() > deadline) throw new Error(`wrangler dev did not answer:\n${JSON.stringify(running.output())}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }

  async function stop(): Promise<void> {
    await running?.stop(15_000)
    running = undefined
  }

  function token(secret: string): Promise<Response> {
    return fetch(`${base}/connect/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${btoa(`reporting-job:${secret}`)}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials&scope=api1',
    })
  }

  beforeAll(async () => {
    node = node22Binary() ?? (await node22())
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-workers-page-'))
    mkdirSync(join(dir, 'src/worker'), { recursive: true })
    writeFileSync(join(dir, 'src/worker/index.ts'), files.worker)
    writeFileSync(join(dir, 'wrangler.toml'), files.toml)
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'workers-page', private: true, type: 'module' }))
    symlinkSync(join(APP, 'node_modules'), join(dir, 'node_modules'), 'dir')
    port = await freePort()
    base = `http://127.0.0.1:${port}`
  }, 60_000)

  afterEach(stop, 30_000)
  afterAll(async () => {
    await stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 30_000)

  it('#40 item 3: without SERVICE_SECRET in .dev.vars every request is 503, and the log names SERVICE_SECRET and .dev.vars', async () => {
    const server = await start(undefined)
    const response = await fetch(`${base}/.well-known/openid-configuration`)
    expect(response.status).toBe(503)
    expect(((await response.json()) as { error: string }).error).toBe('temporarily_unavailable')
    // wrangler relays the Worker's log after the response: wait for it (up to 10 s).
    const message = 'the secret SERVICE_SECRET is not set: wrangler secret put SERVICE_SECRET (locally: .dev.vars)'
    const logged = (): string => `${server.output().stdout}${server.output().stderr}`
    for (const end = Date.now() + 10_000; !logged().includes(message) && Date.now() < end; ) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(logged()).toContain(message)
    await stop()
  }, 90_000)

  it('#40 item 3: with the page’s .dev.vars, discovery names its ISSUER and SERVICE_SECRET gets a token', async () => {
    await start('first-secret-of-the-page-test')
    const discovery = (await (await fetch(`${base}/.well-known/openid-configuration`)).json()) as { issuer: string }
    expect(discovery.issuer).toBe(base)
    const response = await token('first-secret-of-the-page-test')
    expect(response.status, await response.clone().text()).toBe(200)
    await stop()
  }, 90_000)

  it('#40 item 4: a new SERVICE_SECRET replaces the old one after a restart on the same D1 (clients.sync)', async () => {
    await start('second-secret-of-the-page-test')
    const fresh = await token('second-secret-of-the-page-test')
    expect(fresh.status, await fresh.clone().text()).toBe(200)
    const old = await token('first-secret-of-the-page-test')
    expect(old.status).toBe(401)
    expect(((await old.json()) as { error: string }).error).toBe('invalid_client')
    await stop()
  }, 90_000)
})
