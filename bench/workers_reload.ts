/**
 * Cold start of a new workerd under a running Miniflare (scenario `cold_start`, cell
 * `cold-workers-d1-reload`, #28 item 8): what a Worker isolate costs to its first token once the
 * launcher's own start (Node, tsx, esbuild) is out of the way. The Worker of `npm run start:workers`
 * (bin/serve_workers_entry.ts, bundled with the options of bin/serve_workers.ts) runs in one
 * Miniflare on a local D1 in a folder of the run; each start is `miniflare.setOptions()` with a new
 * binding value, which makes Miniflare stop workerd and start a new workerd process (Miniflare has
 * no way to replace only the isolate), so it measures: workerd's process start, compiling the
 * bundle, and the isolate's first request, which builds the service from `env` (D1 opened and its
 * migrations checked, the clients of the configuration file synced, the signing keys read from D1),
 * verifies the client's secret (PBKDF2, 100,000 iterations) and signs the token.
 *
 * Timed from just before setOptions() to the end of the first 200 client_credentials response
 * (`total`); `ready` is when setOptions() resolved (workerd listening). One unmeasured start first
 * migrates the D1 and creates the keys. Launched by bench/run.ts on core 1 like cold_start.ts;
 * with `pinCore`, workerd runs on that core (core 0, as the servers do) through a wrapper script
 * named by MINIFLARE_WORKERD_PATH, which Miniflare runs instead of workerd.
 *
 * Input: RELOAD_SPEC (JSON, `ReloadSpec`). Output: `RESULT {json}` (cold_start.ts's `ColdResult`).
 */
import { chmodSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bundleWorker, createMiniflare, miniflareOptions } from '../bin/workerd.ts'
import type { ColdResult, ColdStart } from './cold_start.ts'

export interface ReloadSpec {
  starts: number
  /** The configuration file's text (the client, its secret's stored hash). */
  config: string
  /** The local D1's folder. */
  dataDir: string
  /** Basic authorization header and form body of the client_credentials request. */
  authorization: string
  body: string
  /** Pin workerd to this core (`taskset`), through a wrapper named by MINIFLARE_WORKERD_PATH. */
  pinCore?: number
}

const spec = JSON.parse(process.env.RELOAD_SPEC ?? '') as ReloadSpec
const root = fileURLToPath(new URL('..', import.meta.url))

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

// start:workers' bundle, compatibility date and flags (bin/workerd.ts).
const script = await bundleWorker(join(root, 'bin/serve_workers_entry.ts'))

if (spec.pinCore !== undefined) {
  // The workerd package's main module exports the binary's path.
  const workerd = createRequire(import.meta.url)('workerd') as string | { default: string }
  const binary = typeof workerd === 'string' ? workerd : workerd.default
  const wrapper = join(spec.dataDir, 'workerd-pinned.sh')
  writeFileSync(wrapper, `#!/bin/sh\nexec taskset -c ${spec.pinCore} ${JSON.stringify(binary)} "$@"\n`)
  chmodSync(wrapper, 0o755)
  process.env.MINIFLARE_WORKERD_PATH = wrapper
}

const port = await freePort()
const issuer = `http://127.0.0.1:${port}`
const options = (generation: number) =>
  miniflareOptions({
    host: '127.0.0.1',
    port,
    name: 'gatehouse',
    script,
    bindings: {
      ISSUER: issuer,
      GATEHOUSE_STORE: 'd1',
      GATEHOUSE_STORE_DESCRIPTION: `local D1 store in ${spec.dataDir}`,
      LOG_FORMAT: 'text',
      METRICS: 'false',
      GATEHOUSE_CONFIG_TEXT: spec.config,
      GATEHOUSE_CONFIG_PATH: 'gatehouse.json',
      // A new value, a new configuration: Miniflare starts a new workerd.
      BENCH_GENERATION: String(generation),
    },
    d1: true,
    persist: spec.dataDir,
  })

/** client_credentials until the first 200; returns the attempts refused before it. */
async function firstToken(started: number): Promise<number> {
  let refused = 0
  for (;;) {
    if (performance.now() - started > 60_000) throw new Error('no 200 within 60 s')
    const outcome = await fetch(`${issuer}/connect/token`, {
      method: 'POST',
      headers: { authorization: spec.authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: spec.body,
    }).then(
      async (response) => {
        await response.arrayBuffer()
        return response.status
      },
      () => 0,
    )
    if (outcome === 200) return refused
    if (outcome !== 0) throw new Error(`first answer was ${outcome}, not 200`)
    refused++
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

const result: ColdResult = { starts: [], failures: [] }
const miniflare = await createMiniflare(await options(0))
try {
  await miniflare.ready
  await firstToken(performance.now()) // migrates the D1, stores the keys; not counted
  for (let i = 1; i <= spec.starts; i++) {
    try {
      const started = performance.now()
      await miniflare.setOptions(await options(i))
      const ready = performance.now() - started
      const refused = await firstToken(started)
      const start: ColdStart = { total: performance.now() - started, ready, refused, marks: {} }
      result.starts.push(start)
    } catch (err) {
      result.failures.push((err as Error).message)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
} catch (err) {
  result.failures.push((err as Error).message)
} finally {
  await miniflare.dispose().catch(() => {})
}
console.log(`RESULT ${JSON.stringify(result)}`)
