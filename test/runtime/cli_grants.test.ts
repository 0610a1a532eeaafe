/**
 * #42 item 2: `gatehouse grants list --sub SUB`, `grants revoke ID` and `grants revoke-all` as an
 * operator runs them (the package's bin from the sources, a real process) on a PostgreSQL schema of
 * its own (DATABASE_URL): grants a server recorded are listed and revoked; a revoked grant's family
 * is marked revoked for every server on the store. With the in-memory store, the commands say why
 * they cannot work.
 */
import { spawn } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { createPostgresStore } from '../../src/storage/postgres.ts'
import type { GrantRecord } from '../../src/storage/types.ts'
import { ROOT } from './server.ts'

const BIN = [join(ROOT, 'node_modules/.bin/tsx'), join(ROOT, 'bin/cli.ts')]
const url = process.env.DATABASE_URL
const schema = `gh_cli_grants_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`

interface Result {
  code: number | null
  stdout: string
  stderr: string
}

function gatehouse(args: string[], env: Record<string, string>): Promise<Result> {
  const inherited = { ...process.env }
  for (const name of Object.keys(inherited)) {
    if (name === 'DATABASE_URL' || name === 'REDIS_URL' || name.startsWith('GATEHOUSE_')) delete inherited[name]
  }
  const [file, ...rest] = [...BIN, ...args] as [string, ...string[]]
  return new Promise((resolve, reject) => {
    const child = spawn(file, rest, { cwd: tmpdir(), env: { ...inherited, NO_COLOR: '1', ...env }, stdio: 'pipe' })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

function grant(id: string, sub: string, clientId: string, createdAt: number): GrantRecord {
  return {
    id,
    clientId,
    sub,
    scope: 'openid api1 offline_access',
    resources: ['https://api.example.test/'],
    kind: 'authorization_code',
    authTime: createdAt,
    createdAt,
    expiresAt: createdAt + 3600,
  }
}

describe('#42 item 2 gatehouse grants', () => {
  afterAll(async () => {
    if (!url) return
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await sql.end()
  })

  it.runIf(url)(
    '#42 item 2: grants list --sub shows the grants; grants revoke ID revokes one (its family marked); revoke-all --client the rest of that client',
    async () => {
      const env = { GATEHOUSE_STORE: 'postgres', DATABASE_URL: url as string, GATEHOUSE_PG_SCHEMA: schema }
      expect((await gatehouse(['migrate'], env)).code).toBe(0)
      const store = createPostgresStore({ url: url as string, schema })
      const now = Math.floor(Date.now() / 1000)
      try {
        await store.grants.put(grant('g-one', 'alice', 'web', now - 20))
        await store.grants.put(grant('g-two', 'alice', 'agent', now - 10))
        await store.grants.put(grant('g-three', 'alice', 'agent', now))
        await store.grants.put(grant('g-bob', 'bob', 'web', now))

        const listed = await gatehouse(['grants', 'list', '--sub', 'alice'], env)
        expect(listed.code, listed.stderr).toBe(0)
        expect(listed.stdout).toMatch(/^ID\s+CLIENT\s+SCOPES\s+RESOURCES/m)
        // The clients are not registered in this store: the grants show them as deleted.
        expect(listed.stdout).toMatch(
          /^g-one\s+web \(deleted\)\s+openid api1 offline_access\s+https:\/\/api\.example\.test\//m,
        )
        expect(listed.stdout).not.toContain('g-bob')
        const json = JSON.parse((await gatehouse(['grants', 'list', '--sub', 'alice', '--json'], env)).stdout)
        expect(json.map((g: { id: string }) => g.id)).toEqual(['g-three', 'g-two', 'g-one'])

        const revoked = await gatehouse(['grants', 'revoke', 'g-one'], env)
        expect(revoked.code, revoked.stderr).toBe(0)
        expect(revoked.stderr).toMatch(/Revoked grant "g-one"/)
        expect(await store.revocations.isFamilyRevoked('g-one')).toBe(true)
        expect(await store.grants.get('g-one', now)).toBeUndefined()
        const again = await gatehouse(['grants', 'revoke', 'g-one'], env)
        expect(again.code).toBe(1)
        expect(again.stderr).toMatch(/grant "g-one" does not exist/)

        const all = await gatehouse(['grants', 'revoke-all', '--sub', 'alice', '--client', 'agent'], env)
        expect(all.code, all.stderr).toBe(0)
        expect(all.stderr).toMatch(/Revoked 2 grants of "alice"/)
        expect(await store.revocations.isFamilyRevoked('g-three')).toBe(true)
        expect(await store.revocations.isFamilyRevoked('g-bob')).toBe(false)
        const empty = await gatehouse(['grants', 'list', '--sub', 'alice'], env)
        expect(empty.stderr).toMatch(/No grants for "alice"/)
        expect((await gatehouse(['grants', 'list'], env)).code).toBe(2)
      } finally {
        await store.close()
      }
    },
    120_000,
  )

  it('#42 item 2: with the in-memory store the grants commands say the grants live in the server process', async () => {
    const result = await gatehouse(['grants', 'list', '--sub', 'alice'], {})
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/grants live only inside a running server process/)
    expect(result.stderr).not.toMatch(/\n\s+at /)
  }, 30_000)
})
