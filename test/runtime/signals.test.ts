/**
 * #27 item 13: a supervisor or container runtime signals the PID it started. SIGTERM to `npm start`
 * (npm's own PID, not its process group) must reach the server: the port closes and no process of
 * the tree is left behind. `npx gatehouse serve` from an installed package: test/package/pack.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type Running, freePort, launch, stopsOnSignalToLeader, waitUntilServing } from './server.ts'

const running: Running[] = []

afterEach(async () => {
  for (const server of running.splice(0)) await server.stop().catch(() => undefined)
})

describe('#27 item 13 signals reach the server', () => {
  it('#27 item 13 SIGTERM to npm start (npm’s PID alone) stops the server: the port closes, nothing is left running', async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const server = launch(['npm', 'start'], { HOST: '127.0.0.1', PORT: String(port), ISSUER: base })
    running.push(server)
    await waitUntilServing(server, `${base}/healthz`, 40_000)
    await stopsOnSignalToLeader(server, `${base}/healthz`)
    expect(server.output().stdout).toContain('Gatehouse stopped')
  }, 60_000)
})
