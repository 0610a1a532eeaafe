/**
 * Graceful shutdown on Node, Bun and Deno: SIGTERM while a burst of token requests is in flight
 * (their bodies only half sent: the server has them and waits for the rest) loses none of them
 * (every one answers 200 with a token), and the process prints that it stopped and exits 0.
 * A busy port is one line naming PORT on each runtime.
 */
import { createServer } from 'node:net'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CONFIG, ROOT, freePort, launch, waitUntilServing, writeConfig } from './server.ts'

const bin = (name: string) => join(ROOT, 'node_modules/.bin', name)

const runtimes = [
  { name: 'node', command: [bin('tsx'), 'bin/serve_node.ts'] },
  { name: 'bun', command: [bin('bun'), 'run', 'bin/serve_bun.ts'] },
  { name: 'deno', command: [bin('deno'), 'run', '--allow-net', '--allow-env', '--allow-read', 'bin/serve_deno.ts'] },
]

const BURST = 12

const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** Lines without npm's and Deno's own noise. */
function lines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('npm warn'))
}

/** Resolves once the server has printed that it is stopping. */
async function waitForStopping(server: ReturnType<typeof launch>): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (server.output().stdout.includes('SIGTERM: stopping')) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`the server did not start stopping:\n${server.output().stdout}\n${server.output().stderr}`)
}

describe.each(runtimes)('$name', ({ name, command }) => {
  it('SIGTERM under load: every request in flight is answered, then "Gatehouse stopped" and exit 0', async () => {
    const file = writeConfig(CONFIG)
    cleanups.push(file.remove)
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const server = launch([...command, '--config', file.path], { HOST: '127.0.0.1', PORT: String(port), ISSUER: base })
    cleanups.push(async () => void (await server.stop().catch(() => undefined)))
    await waitUntilServing(server, `${base}/readyz`, 60_000)

    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const encoder = new TextEncoder()
    const answers: (number | string)[] = []
    const burst = Array.from({ length: BURST }, () => {
      // The first half of the form now, the rest once the server has been told to stop.
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(encoder.encode('grant_type=client_credentials'))
          await released
          controller.enqueue(encoder.encode('&scope=api1'))
          controller.close()
        },
      })
      return fetch(`${base}/connect/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${btoa('rt-service:rt-service-secret')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body,
        duplex: 'half',
      } as RequestInit).then(
        async (response) => {
          const result = (await response.json()) as { access_token?: unknown }
          answers.push(typeof result.access_token === 'string' ? response.status : JSON.stringify(result))
        },
        (err: Error) => void answers.push(`${err.message}: ${String(err.cause)}`),
      )
    })
    // Let the burst reach the server, stop it (the whole process group, as a terminal would), and
    // only then send the rest of the bodies.
    await new Promise((r) => setTimeout(r, 1000))
    if (server.child.pid !== undefined) process.kill(-server.child.pid, 'SIGTERM')
    await waitForStopping(server)
    release()
    await Promise.all(burst)
    const exit = await server.stop(20_000)

    expect(answers, name).toEqual(Array(BURST).fill(200))
    expect(exit, server.output().stderr).toEqual({ code: 0, signal: null })
    const out = lines(server.output().stdout)
    expect(out.at(-2)).toBe('SIGTERM: stopping; requests in flight get up to 10 s')
    expect(out.at(-1)).toBe('Gatehouse stopped')
    // No new connections after the stop.
    await expect(fetch(`${base}/healthz`)).rejects.toThrow()
  })

  it('a busy port is one line naming PORT, exit 1', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
    const port = (blocker.address() as { port: number }).port
    const file = writeConfig(CONFIG)
    cleanups.push(file.remove)
    const server = launch([...command, '--config', file.path], { HOST: '127.0.0.1', PORT: String(port) })
    cleanups.push(async () => void (await server.stop().catch(() => undefined)))
    const exit = await Promise.race([
      server.exited,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(server.output().stderr)), 30_000)),
    ])
    expect(exit.code).toBe(1)
    expect(lines(server.output().stderr)).toEqual([`gatehouse: port ${port} is in use; set PORT to another port`])
  })
})
