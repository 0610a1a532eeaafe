/**
 * Cold-start measurement (scenario `cold_start`), one process per cell launched by bench/run.ts on
 * core 1 like bench/load.ts. For each of N starts it spawns the server command (pinned to core 0
 * by the command it is given), then polls it with one client_credentials request at a time: a
 * refused connection is retried after POLL_MS, a request that connected is awaited, and the clock
 * stops at the end of the first 200 response. Time is taken from just before spawn(): it includes
 * exec of the runtime, loading and compiling the code, connecting to the store, loading or
 * generating the keys, listening, and the whole first request (client secret verification
 * included). Before the N measured starts, one unmeasured start warms the OS file cache, and
 * an optional PRIME command prepares the store (PostgreSQL: schema, client, signing keys).
 *
 * Input: COLD_SPEC (JSON, `ColdSpec`). Output: `RESULT {json}` (`ColdResult`).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { createInterface } from 'node:readline'

export interface ColdSpec {
  command: string[]
  env: Record<string, string>
  /** Run once before the measured starts (e.g. to create the PostgreSQL schema and keys). */
  prime?: { command: string[]; env: Record<string, string> }
  cwd: string
  starts: number
  path: string
  /** Basic authorization header and form body of the client_credentials request. */
  authorization: string
  body: string
}

export interface ColdStart {
  /** spawn() → end of the first 200 response, ms. */
  total: number
  /** spawn() → the READY line read from the server's stdout, ms (it listens from about then). */
  ready: number
  /** Connection attempts refused before the server listened. */
  refused: number
  /** In-process marks of the server, ms since its own start (performance.now()). */
  marks: Record<string, number>
}

export interface ColdResult {
  starts: ColdStart[]
  failures: string[]
}

const spec = JSON.parse(process.env.COLD_SPEC ?? '') as ColdSpec
const POLL_MS = 2

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

/** One client_credentials request: its status, or the socket error's code. */
function attempt(port: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: spec.path,
        agent: false,
        headers: {
          authorization: spec.authorization,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(spec.body),
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    req.end(spec.body)
  })
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
  await exited
  clearTimeout(timer)
}

function run(command: string[], env: Record<string, string>): ChildProcess {
  const [file, ...args] = command as [string, ...string[]]
  return spawn(file, args, { cwd: spec.cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
}

async function prime(): Promise<void> {
  if (!spec.prime) return
  const child = run(spec.prime.command, spec.prime.env)
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0 || !output.includes('PRIMED')) throw new Error(`prime failed (${code}): ${output.slice(-600)}`)
}

async function once(): Promise<ColdStart> {
  const port = await freePort()
  const started = performance.now()
  const child = run(spec.command, { ...spec.env, PORT: String(port), HOST: '127.0.0.1' })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000)
  })
  let ready = Number.NaN
  let marks: Record<string, number> = {}
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    if (!line.startsWith('READY')) return
    ready = performance.now() - started
    marks = (JSON.parse(line.slice(5)) as { marks?: Record<string, number> }).marks ?? {}
  })
  let exited = false
  child.once('exit', () => {
    exited = true
  })
  let refused = 0
  try {
    for (;;) {
      if (exited) throw new Error(`server exited before answering: ${stderr.trim().split('\n').slice(-5).join(' | ')}`)
      if (performance.now() - started > 60_000) throw new Error('no 200 within 60 s')
      const outcome = await attempt(port)
      if (outcome === 200) break
      if (outcome === 'ECONNREFUSED' || outcome === 'ECONNRESET') {
        refused++
        await new Promise((resolve) => setTimeout(resolve, POLL_MS))
        continue
      }
      throw new Error(`first answer was ${outcome}, not 200`)
    }
    const total = performance.now() - started
    // The READY line may still be in the pipe when the response arrives.
    for (let i = 0; i < 100 && Number.isNaN(ready); i++) await new Promise((resolve) => setTimeout(resolve, 5))
    return { total, ready, refused, marks }
  } finally {
    await stop(child)
  }
}

const result: ColdResult = { starts: [], failures: [] }
try {
  await prime()
  await once() // warms the OS file cache; not counted
  for (let i = 0; i < spec.starts; i++) {
    try {
      result.starts.push(await once())
    } catch (err) {
      result.failures.push((err as Error).message)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
} catch (err) {
  result.failures.push((err as Error).message)
}
console.log(`RESULT ${JSON.stringify(result)}`)
