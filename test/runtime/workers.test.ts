/**
 * #28 items 5 and 6: `npm run start:workers`, the standalone server on workerd (Miniflare), as
 * `npm start` is: the demo seed without a file, SIGTERM to npm's PID stopping everything (no
 * workerd left behind), two at once (no inspector port by default), and the store choices that do
 * not exist on Workers yet (D1, PostgreSQL) failing with one clear line. The flows themselves run
 * in the runtime matrix (runtimes.test.ts, fapi2_runtimes.test.ts, mcp_runtimes.test.ts: `workers`).
 */
import { dirname } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type Running, freePort, launch, node22, stopsOnSignalToLeader, waitUntilServing } from './server.ts'

const running: Running[] = []

afterEach(async () => {
  for (const server of running.splice(0)) await server.stop().catch(() => undefined)
})

/** `npm run start:workers` with Node 22+ first on PATH (Miniflare's requirement). */
async function startWorkers(env: Record<string, string>, args: string[] = []): Promise<Running> {
  const path = `${dirname(await node22())}:${process.env.PATH ?? ''}`
  const server = launch(['npm', 'run', 'start:workers', ...(args.length ? ['--', ...args] : [])], {
    PATH: path,
    ...env,
  })
  running.push(server)
  return server
}

async function clientCredentials(base: string, id: string, secret: string): Promise<Response> {
  return fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa(`${id}:${secret}`)}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=api1',
  })
}

describe('#28 npm run start:workers', () => {
  it('#28 item 5 serves the demo seed without --config, two at once; SIGTERM to npm’s PID leaves no workerd running', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    const a = await startWorkers({ HOST: '127.0.0.1', PORT: String(portA) })
    const b = await startWorkers({ HOST: '127.0.0.1', PORT: String(portB) })
    const [baseA, baseB] = [`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`]
    await waitUntilServing(a, `${baseA}/healthz`, 60_000)
    await waitUntilServing(b, `${baseB}/healthz`, 60_000)
    for (const base of [baseA, baseB]) {
      const response = await clientCredentials(base, 'demo-service', 'demo-service-secret')
      expect(response.status, await response.clone().text()).toBe(200)
      expect(await response.json()).toMatchObject({ token_type: 'Bearer' })
      const landing = await fetch(`${base}/`)
      expect(landing.status).toBe(200)
      expect(await landing.text()).toContain('/demo')
    }
    expect(a.output().stdout).toMatch(
      /Gatehouse \(workerd\) listening on http:\/\/127\.0\.0\.1:\d+, issuer http:\/\/localhost:/,
    )
    await stopsOnSignalToLeader(a, `${baseA}/healthz`)
    expect(a.output().stdout).toContain('Gatehouse stopped')
    // The other instance is untouched.
    expect((await clientCredentials(baseB, 'demo-service', 'demo-service-secret')).status).toBe(200)
    await stopsOnSignalToLeader(b, `${baseB}/healthz`)
  }, 120_000)

  it.each([
    [
      { GATEHOUSE_STORE: 'd1' },
      /GATEHOUSE_STORE=d1: the D1 store \(gatehouse\/storage\/d1\) is not in this version yet/,
    ],
    [
      { DATABASE_URL: 'postgres://127.0.0.1:5432/test' },
      /DATABASE_URL: the PostgreSQL store does not run inside Workers/,
    ],
    [{ GATEHOUSE_STORE: 'redis' }, /GATEHOUSE_STORE must be memory or d1 for start:workers, got "redis"/],
  ])(
    '#28 item 5 a store Workers do not have yet fails with one line and status 1 (%o)',
    async (env, message) => {
      const server = await startWorkers({ HOST: '127.0.0.1', PORT: String(await freePort()), ...env })
      const exit = await server.exited
      expect(exit.code).toBe(1)
      expect(server.output().stderr).toMatch(message)
      expect(server.output().stderr).not.toMatch(/\n\s+at /) // no stack trace
    },
    60_000,
  )
})
