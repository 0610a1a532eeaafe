/**
 * Bench server `ceiling-workers` (#31): the ceiling on workerd. This process (Node ≥ 22, as
 * bench/run.ts runs gatehouse_workers.ts) bundles ceiling_workers_entry.ts with esbuild the way
 * bin/serve_workers.ts bundles Gatehouse's Worker, runs it on workerd through Miniflare with the
 * same compatibility date and flags (`nodejs_compat`), one isolate, and prints `READY {json}`.
 *
 * As in gatehouse_workers.ts, READY carries workerd's pid as `pid` (bench/run.ts reads its peak
 * RSS) and every process of the server as `pids` (this one, workerd and Miniflare's other
 * children: run.ts counts their CPU time as the server's); `taskset` on this process pins them all.
 *
 * Codes (CODES, CODES_FILE): made in the Worker, as the other ceilings make them in process
 * (ceiling_core.ts `createCodes`), fetched once from its bench-only `POST /bench/codes` and
 * written to CODES_FILE before READY.
 *
 * Environment: PORT, HOST, SIGNER (ceiling_signers.ts; default webcrypto), CODES, CODES_FILE.
 */
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { bundleWorker, createMiniflare, miniflareOptions } from '../../bin/workerd.ts'
import { descendants } from './process_tree.ts'

const env = (name: string): string | undefined => process.env[name] || undefined
const port = Number(env('PORT') ?? '3000')
const host = env('HOST') ?? '127.0.0.1'
const signer = env('SIGNER') ?? 'webcrypto'
const ENTRY = fileURLToPath(new URL('./ceiling_workers_entry.ts', import.meta.url))
const miniflare = await createMiniflare(
  await miniflareOptions({
    host,
    port,
    name: 'ceiling',
    script: await bundleWorker(ENTRY),
    bindings: { ISSUER: `http://${host}:${port}`, SIGNER: signer },
  }),
)
// This process disposes of workerd and exits 0 on SIGTERM/SIGINT, as bin/serve_workers.ts does.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    void miniflare.dispose().finally(() => process.exit(0))
  })
}
const url = await miniflare.ready

// The first request makes the ceiling (keys, kids); the codes, when asked for, come from it.
const count = Number(env('CODES') ?? '0')
const codesFile = env('CODES_FILE')
const made = await fetch(new URL(`/bench/codes?count=${count > 0 && codesFile ? count : 0}`, url), { method: 'POST' })
if (made.status !== 200) throw new Error(`the ceiling Worker did not start: ${made.status} ${await made.text()}`)
const codes = await made.text()
if (count > 0 && codesFile) await writeFile(codesFile, codes)

const processes = descendants(process.pid)
const workerd = processes.find((p) => p.name === 'workerd')
if (!workerd) throw new Error(`no workerd process under this one (${JSON.stringify(processes)})`)
const pids = [process.pid, ...processes.map((p) => p.pid)]
console.log(
  `READY ${JSON.stringify({ pid: workerd.pid, pids, runtime: `workerd (Miniflare, node ${process.version})`, signer })}`,
)
