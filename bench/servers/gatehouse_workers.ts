/**
 * Bench server (#28 item 8, #31): Gatehouse on workerd with its local D1 (`gatehouse-workers-d1`)
 * or its in-memory store (`gatehouse-workers`, STORE=memory), as shipped: this process
 * launches `npm run start:workers` (bin/serve_workers.ts, Miniflare, under the Node 22+ that runs
 * this file) with a configuration file holding the bench clients (`benchClients()`, as the Node
 * servers register them in process) and one user, waits until it answers `/healthz`, and prints
 * `READY {json}` like the other bench servers.
 *
 * The work is done by workerd, a child of the Miniflare launcher: READY carries workerd's pid as
 * `pid` (bench/run.ts reads its peak RSS and CPU time) and every process of the server as `pids`
 * (this one, the launcher, workerd and the launcher's other children, e.g. esbuild's service:
 * run.ts counts their CPU time as the server's). `taskset` on this process pins them all: a
 * child inherits its parent's CPU affinity.
 *
 * Codes (CODES, CODES_FILE): start:workers has no host sign-in hook, so this process signs the
 * user in over HTTP through the built-in sign-in page once, then asks the authorization endpoint
 * for the codes with that session (`createCodes()`, as in process on Node).
 *
 * Environment: PORT, HOST, GATEHOUSE_DATA_DIR (a fresh folder per process: bench/run.ts makes it;
 * the configuration file and the local D1 live in it), STORE (`d1`, the default, or `memory`:
 * start:workers' GATEHOUSE_STORE, one isolate), CODES, CODES_FILE, ACCESS_TOKEN_ALG, ID_TOKEN_ALG.
 * DATABASE_URL and REDIS_URL are not passed on.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SIGNIN_PASSWORD, USER_SUB, WEB_CLIENT } from '../fixtures.ts'
import { signInForm } from '../signin_form.ts'
import { benchClients, codeRequest, createCodes } from './gatehouse_setup.ts'
import { descendants } from './process_tree.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const env = (name: string): string | undefined => process.env[name] || undefined
const port = Number(env('PORT') ?? '3000')
const host = env('HOST') ?? '127.0.0.1'
const issuer = `http://${host}:${port}`
const dataDir = env('GATEHOUSE_DATA_DIR')
if (!dataDir) throw new Error('gatehouse_workers.ts needs GATEHOUSE_DATA_DIR (a fresh folder)')
const USERNAME = 'bench-user'
const store = env('STORE') ?? 'd1'
if (store !== 'd1' && store !== 'memory')
  throw new Error(`gatehouse_workers.ts: STORE must be d1 or memory, got ${store}`)

/** The configuration file of `start:workers`: the bench clients and the user codes are issued for. */
const configPath = join(dataDir, 'gatehouse.json')
await writeFile(
  configPath,
  JSON.stringify({
    clients: benchClients(env),
    users: [{ sub: USER_SUB, username: USERNAME, password: SIGNIN_PASSWORD }],
    ...(env('ACCESS_TOKEN_ALG') ? { accessTokenSigningAlg: env('ACCESS_TOKEN_ALG') } : {}),
  }),
)

const inherited = { ...process.env }
for (const name of ['DATABASE_URL', 'REDIS_URL', 'GATEHOUSE_STORE', 'GATEHOUSE_CONFIG']) delete inherited[name]
const launcher: ChildProcess = spawn(
  process.execPath,
  ['--import', 'tsx', join(root, 'bin/serve_workers.ts'), '--config', configPath],
  {
    cwd: root,
    env: { ...inherited, GATEHOUSE_STORE: store, ISSUER: issuer, PORT: String(port), HOST: host },
    stdio: ['ignore', 'inherit', 'inherit'],
  },
)
let exited = false
launcher.once('exit', (code, signal) => {
  exited = true
  if (!stopping) {
    process.stderr.write(`start:workers exited (${signal ?? code})\n`)
    process.exit(1)
  }
})
let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    stopping = true
    if (exited) process.exit(0)
    launcher.once('exit', () => process.exit(0))
    launcher.kill('SIGTERM')
  })
}

// Ready when the Worker answers (start:workers itself makes the isolate's first request).
const started = Date.now()
for (;;) {
  if (Date.now() - started > 120_000) throw new Error('start:workers did not answer /healthz within 120 s')
  const status = await fetch(`${issuer}/healthz`).then(
    (response) => response.status,
    () => 0,
  )
  if (status === 200) break
  await new Promise((resolve) => setTimeout(resolve, 100))
}
const processes = descendants(launcher.pid as number)
const workerd = processes.find((p) => p.name === 'workerd')
if (!workerd) throw new Error(`no workerd process under the launcher (${JSON.stringify(processes)})`)

/** Signs the user in through the built-in sign-in page; returns the session cookie. */
async function signIn(): Promise<string> {
  const jar = new Map<string, string>()
  const go = async (url: URL, init: RequestInit = {}): Promise<Response> => {
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { accept: 'text/html', ...(cookie ? { cookie } : {}), ...(init.headers as Record<string, string>) },
    })
    for (const header of response.headers.getSetCookie()) {
      const pair = header.split(';')[0] ?? ''
      const at = pair.indexOf('=')
      if (at > 0) jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim())
    }
    return response
  }
  let url = codeRequest(`${issuer}/connect/authorize`)
  let response = await go(url)
  let signedIn = false
  for (let hops = 0; hops < 12; hops++) {
    const location = response.headers.get('location')
    if (location) {
      url = new URL(location, url)
      if (url.href.startsWith(WEB_CLIENT.redirectUri)) break
      response = await go(url)
      continue
    }
    if (response.status !== 200 || signedIn) break
    const form = signInForm(await response.text(), USERNAME, SIGNIN_PASSWORD)
    url = new URL(form.action, url)
    const body = new URLSearchParams(form.fields).toString()
    response = await go(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    signedIn = true
  }
  if (!url.searchParams.get('code')) throw new Error(`sign-in gave no code: ${response.status} ${url.href}`)
  return [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
}

const count = Number(env('CODES') ?? '0')
const codesFile = env('CODES_FILE')
let codeSeconds: number | undefined
if (count > 0 && codesFile) {
  const began = performance.now()
  const cookie = await signIn()
  const codes = await createCodes((request) => fetch(request), `${issuer}/connect/authorize`, count, {
    cookie,
    parallel: 4,
  })
  await writeFile(codesFile, codes.join('\n'))
  codeSeconds = (performance.now() - began) / 1000
}
const pids = [process.pid, launcher.pid as number, ...descendants(launcher.pid as number).map((p) => p.pid)]
console.log(
  `READY ${JSON.stringify({ pid: workerd.pid, pids, runtime: `workerd (Miniflare, node ${process.version})`, ...(codeSeconds ? { codeSeconds } : {}) })}`,
)
