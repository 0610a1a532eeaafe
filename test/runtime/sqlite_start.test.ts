/**
 * `GATEHOUSE_STORE=sqlite` for the standalone server (#28 item 2): `npm start` (on Node 22: Node 20
 * has no node:sqlite and says so in one line), `npm run start:bun` and `npm run start:deno`, one
 * after the other on one GATEHOUSE_DATA_DIR: the file gatehouse.db is created there and migrated at
 * start, `--demo` seeds the demo clients into it, and clients and signing keys survive each restart,
 * whichever runtime restarts it.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { node22Binary } from '../storage/sqlite_node22.ts'
import { ROOT, type Running, freePort, launch, waitUntilServing } from './server.ts'

const node22 = node22Binary()
const running: Running[] = []
const dirs: string[] = []

afterEach(async () => {
  for (const server of running.splice(0)) await server.stop(15_000).catch(() => undefined)
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

async function start(script: string[], env: Record<string, string>): Promise<{ server: Running; base: string }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const server = launch(['npm', 'run', ...script], { HOST: '127.0.0.1', PORT: String(port), ISSUER: base, ...env })
  running.push(server)
  await waitUntilServing(server, `${base}/.well-known/openid-configuration`, 60_000)
  return { server, base }
}

/** A client_credentials token of the demo client, and the kid that signed it. */
async function token(base: string): Promise<{ status: number; kid?: string }> {
  const response = await fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa('demo-service:demo-service-secret')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=api1',
  })
  const body = (await response.json()) as { access_token?: string }
  const header = body.access_token?.split('.')[0]
  const kid = header
    ? (JSON.parse(atob(header.replace(/-/g, '+').replace(/_/g, '/'))) as { kid: string }).kid
    : undefined
  return { status: response.status, ...(kid ? { kid } : {}) }
}

async function kids(base: string): Promise<string[]> {
  const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }
  return jwks.keys.map((key) => key.kid)
}

describe('#28 item 2 GATEHOUSE_STORE=sqlite', () => {
  it.runIf(node22)(
    '#28 item 2 npm start (Node 22), start:bun and start:deno share one gatehouse.db in turn: demo clients and keys survive restarts',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-start-'))
      dirs.push(dir)
      const dataDir = join(dir, 'data')
      const env = {
        GATEHOUSE_STORE: 'sqlite',
        GATEHOUSE_DATA_DIR: dataDir,
        PATH: `${dirname(node22 as string)}:${process.env.PATH}`,
      }
      const first = await start(['start', '--', '--demo'], env)
      expect(first.server.output().stdout).toContain(`SQLite store in ${join(dataDir, 'gatehouse.db')}`)
      // #28: Node 22's "SQLite is an experimental feature" warning is not printed at every start.
      expect(first.server.output().stderr).not.toMatch(/ExperimentalWarning/)
      const issued = await token(first.base)
      expect(issued.status).toBe(200)
      await first.server.stop(15_000)
      running.splice(0)
      for (const script of ['start:bun', 'start:deno']) {
        // No --demo: the clients are the ones stored by the first start, and so are the keys.
        const next = await start([script], env)
        expect(await token(next.base), script).toMatchObject({ status: 200 })
        expect(await kids(next.base), script).toContain(issued.kid)
        await next.server.stop(15_000)
        running.splice(0)
      }
    },
    240_000,
  )

  it.runIf(node22)(
    '#28 item 2 gatehouse migrate creates and migrates gatehouse.db; clients list refuses a missing file; gatehouse serve uses it',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-cli-'))
      dirs.push(dir)
      const dataDir = join(dir, 'data')
      const env: Record<string, string | undefined> = {
        ...process.env,
        NO_COLOR: '1',
        GATEHOUSE_STORE: 'sqlite',
        GATEHOUSE_DATA_DIR: dataDir,
      }
      for (const name of ['DATABASE_URL', 'REDIS_URL', 'GATEHOUSE_CONFIG']) delete env[name]
      const gatehouse = (args: string[]) =>
        spawnSync(node22 as string, ['--import', 'tsx', 'bin/cli.ts', ...args], {
          cwd: ROOT,
          env,
          encoding: 'utf8',
          timeout: 60_000,
        })
      const missing = gatehouse(['clients', 'list'])
      expect(missing.status, missing.stderr).toBe(1)
      expect(missing.stderr).toMatch(/does not exist: run "gatehouse migrate"/)
      expect(existsSync(dataDir)).toBe(false)
      const migrated = gatehouse(['migrate'])
      expect(migrated.status, migrated.stderr).toBe(0)
      expect(migrated.stdout).toContain(
        `SQLite store in ${join(dataDir, 'gatehouse.db')}: applied migration(s) 1, 2, 3`,
      )
      const listed = gatehouse(['clients', 'list'])
      expect(listed.status, listed.stderr).toBe(0)
      expect(listed.stderr).toMatch(/No clients\./)
      const port = await freePort()
      const base = `http://127.0.0.1:${port}`
      const server = launch([node22 as string, '--import', 'tsx', 'bin/cli.ts', 'serve', '--demo'], {
        GATEHOUSE_STORE: 'sqlite',
        GATEHOUSE_DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: String(port),
        ISSUER: base,
      })
      running.push(server)
      await waitUntilServing(server, `${base}/.well-known/openid-configuration`, 60_000)
      expect((await token(base)).status).toBe(200)
    },
    120_000,
  )

  it.runIf(Number(process.versions.node.split('.')[0]) < 22)(
    '#28 item 2 npm start on Node 20 refuses GATEHOUSE_STORE=sqlite in one line naming the requirement',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-start-'))
      dirs.push(dir)
      const port = await freePort()
      const server = launch(['npm', 'start'], {
        HOST: '127.0.0.1',
        PORT: String(port),
        GATEHOUSE_STORE: 'sqlite',
        GATEHOUSE_DATA_DIR: join(dir, 'data'),
      })
      running.push(server)
      const exit = await server.exited
      expect(exit.code).toBe(1)
      expect(server.output().stderr).toContain(
        `gatehouse-oidc/storage/sqlite needs node:sqlite (Node ≥ 22.5), Bun or Deno; this is Node ${process.versions.node}`,
      )
    },
    60_000,
  )
})
