/**
 * #17.3: with a persistent store, `npm start -- --config FILE` makes the store's clients what the
 * file says at every start (PostgreSQL, a fresh schema): a changed secret, permission or redirect
 * URI takes effect, a rotated-out secret stops working, a client left out of the file stays unless
 * `"pruneClients": true`, and the start prints one line per client.
 */
import postgres from 'postgres'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { runSchema } from '../storage/sql_helpers.ts'
import { CONFIG, freePort, launch, waitUntilServing, writeConfig } from './server.ts'

const url = process.env.DATABASE_URL
const schema = runSchema('sync')

const JOB = {
  clientId: 'sync-job',
  clientSecret: 'sync-job-secret-1',
  permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
}
const WEB = {
  clientId: 'sync-web',
  clientSecret: 'sync-web-secret',
  permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
  redirectUris: ['https://rp.example.test/one'],
}

describe.runIf(url)('#17.3 npm start --config on PostgreSQL: the file is the source of truth', () => {
  const removals: (() => void)[] = []
  afterEach(() => {
    for (const remove of removals.splice(0)) remove()
  })
  afterAll(async () => {
    const admin = postgres(url as string, { max: 1, onnotice: () => {} })
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })

  type Api = {
    lines: string[]
    token(id: string, secret: string, scope?: string): Promise<{ status: number; error?: unknown }>
    authorize(redirectUri: string): Promise<number>
  }

  /** Starts with `clients` (and extra keys), runs `check` against it, and stops it. */
  async function startWith(clients: unknown[], extra: Record<string, unknown>, check: (api: Api) => Promise<void>) {
    const file = writeConfig({ ...CONFIG, clients, ...extra })
    removals.push(file.remove)
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    const server = launch(['npm', 'start', '--', '--config', file.path], {
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: issuer,
      DATABASE_URL: url as string,
      GATEHOUSE_PG_SCHEMA: schema,
    })
    try {
      await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`, 60_000)
      const lines = server
        .output()
        .stdout.split('\n')
        .filter((line) => line.startsWith('client '))
      await check({
        lines,
        async token(id, secret, scope = 'api1') {
          const response = await fetch(`${issuer}/connect/token`, {
            method: 'POST',
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              authorization: `Basic ${btoa(`${id}:${secret}`)}`,
            },
            body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
          })
          return { status: response.status, error: ((await response.json()) as { error?: unknown }).error }
        },
        async authorize(redirectUri) {
          const query = new URLSearchParams({
            response_type: 'code',
            client_id: 'sync-web',
            redirect_uri: redirectUri,
            scope: 'openid',
          })
          const response = await fetch(`${issuer}/connect/authorize?${query}`, { redirect: 'manual' })
          await response.body?.cancel()
          return response.status
        },
      })
    } finally {
      await server.stop()
    }
  }

  const JOB2 = { ...JOB, clientSecret: 'sync-job-secret-2', permissions: ['ept:token', 'gt:client_credentials'] }
  const WEB2 = { ...WEB, redirectUris: ['https://rp.example.test/two'] }

  it('#17.3 later starts update, keep or prune the stored clients as the file says, one line per client', async () => {
    await startWith([JOB, WEB], {}, async ({ lines, token }) => {
      expect(lines).toEqual(['client sync-job: created', 'client sync-web: created'])
      expect((await token('sync-job', 'sync-job-secret-1')).status).toBe(200)
    })
    await startWith([JOB, WEB], {}, async ({ lines }) => {
      expect(lines).toEqual(['client sync-job: unchanged', 'client sync-web: unchanged'])
    })
    // A new secret and a removed scope permission for the job, another redirect URI for the web app.
    await startWith([JOB2, WEB2], {}, async ({ lines, token, authorize }) => {
      expect(lines).toEqual(['client sync-job: updated', 'client sync-web: updated'])
      expect(await token('sync-job', 'sync-job-secret-1')).toEqual({ status: 401, error: 'invalid_client' })
      expect(await token('sync-job', 'sync-job-secret-2')).toEqual({ status: 400, error: 'invalid_scope' })
      expect(await authorize('https://rp.example.test/one')).toBe(400)
      expect([302, 303]).toContain(await authorize('https://rp.example.test/two'))
    })
    // The web app left out of the file: kept (it may have come from the API), and said so.
    await startWith([JOB2], {}, async ({ lines, authorize }) => {
      expect(lines[0]).toBe('client sync-job: unchanged')
      expect(lines[1]).toMatch(/^client sync-web: kept \(not in the configuration file/)
      expect([302, 303]).toContain(await authorize('https://rp.example.test/two'))
    })
    await startWith([JOB2], { pruneClients: true }, async ({ lines, authorize }) => {
      expect(lines[1]).toMatch(/^client sync-web: removed/)
      expect(await authorize('https://rp.example.test/two')).toBe(400)
    })
  }, 240_000)
})
