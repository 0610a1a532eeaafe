/**
 * #28 items 4 and 6: the storage contract on PostgreSQL inside workerd (run by
 * vitest.workerd.config.ts through @cloudflare/vitest-pool-workers; test/storage/workerd.test.ts
 * runs that under Node 22 and checks the result). The store is the Workers one
 * (src/storage/postgres_worker.ts): postgres.js over workerd's TCP sockets (nodejs_compat), its
 * connections in a RequestScope, here one per test as a request's. Needs DATABASE_URL (the
 * machine's PostgreSQL); each run uses its own schema, dropped at the end.
 */
import { env } from 'cloudflare:workers'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { workerdSocket } from '../../adapters/workerd_socket.ts'
import { StoreUnavailableError } from '../../src/errors.ts'
import { createWorkerPostgresStore } from '../../src/storage/postgres_worker.ts'
import { RequestScope } from '../../src/storage/request_scope.ts'
import { chooseWorkerStore, openWorkerStore } from '../../src/worker/store.ts'
import { codeRecord, describeStorageContract } from '../storage/contract.ts'
import { TABLES, runSchema } from '../storage/sql_helpers.ts'

const url = typeof env.DATABASE_URL === 'string' && env.DATABASE_URL !== '' ? env.DATABASE_URL : undefined

describe.runIf(url)('PostgreSQL store inside workerd', () => {
  const admin = postgres(
    url as string,
    { max: 1, onnotice: () => {}, socket: workerdSocket } as postgres.Options<Record<string, never>>,
  )
  const schema = runSchema('workerd')
  const scopes: RequestScope[] = []
  const store = (scope: RequestScope | undefined, options: { now?: () => number; url?: string } = {}) =>
    createWorkerPostgresStore({ url: url as string, schema, scope: () => scope, socket: workerdSocket, ...options })
  /** The URL with an application_name of this run, to count its connections among other tests'. */
  const named = new URL(url as string)
  named.searchParams.set('application_name', schema)
  const connections = async (): Promise<number> => {
    const [row] = await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`, [
      schema,
    ])
    return Number(row?.n)
  }
  /**
   * The count once it reaches `expected`, polled for up to 2 s: a closed connection's backend leaves
   * pg_stat_activity a moment after the client's Terminate (seen on a loaded machine).
   */
  const connectionsSettled = async (expected: number): Promise<number> => {
    const end = Date.now() + 2000
    let n = await connections()
    while (n !== expected && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      n = await connections()
    }
    return n
  }

  beforeAll(async () => {
    const scope = new RequestScope()
    const migrating = store(scope)
    expect(await migrating.migrate()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(await migrating.migrate()).toEqual([]) // idempotent
    await scope.close()
  })

  afterAll(async () => {
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })

  describeStorageContract({
    name: 'postgres in workerd',
    async create({ now }) {
      await admin.unsafe(`TRUNCATE ${TABLES.map((t) => `"${schema}".${t}`).join(', ')}`)
      // One scope per test, as a Worker has one per request.
      const scope = new RequestScope()
      scopes.push(scope)
      return store(scope, { now })
    },
    async cleanup() {
      await Promise.all(scopes.splice(0).map((scope) => scope.close()))
    },
  })

  it('#28 item 4 each scope (request) has its own connections, made on its first query and closed with it', async () => {
    const before = await connections()
    const [a, b] = [new RequestScope(), new RequestScope()]
    const [storeA, storeB] = [store(a, { url: named.href }), store(b, { url: named.href })]
    expect(a.open).toBe(0) // nothing until the first query
    const code = codeRecord(Math.floor(Date.now() / 1000))
    await storeA.codes.insert(code)
    expect((await storeB.codes.get(code.id))?.id).toBe(code.id) // the same database
    expect([a.open, b.open]).toEqual([1, 1])
    expect(await connections()).toBe(before + 2)
    await Promise.all([a.close(), b.close()])
    expect([a.open, b.open]).toEqual([0, 0])
    expect(await connectionsSettled(before)).toBe(before)
  })

  it('#28 item 4 outside a scope the store refuses with a TypeError (a connection must not serve two requests)', async () => {
    await expect(store(undefined).clients.get('x')).rejects.toThrow(
      /the PostgreSQL Worker store was used outside a Worker event/,
    )
  })

  it('#28 item 4 an unreachable server is a StoreUnavailableError, fast', async () => {
    const scope = new RequestScope()
    const down = createWorkerPostgresStore({
      url: 'postgres://postgres@127.0.0.1:1/test',
      scope: () => scope,
      socket: workerdSocket,
      connectTimeout: 2,
    })
    const started = Date.now()
    await expect(down.connect()).rejects.toThrow(/cannot connect to PostgreSQL at 127\.0\.0\.1:1/)
    await expect(down.clients.get('x')).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(Date.now() - started).toBeLessThan(3000)
    await scope.close()
  })
})

describe.runIf(url)('PostgreSQL store inside workerd through a local Hyperdrive binding', () => {
  it('#28 item 4 workerStore’s choice reads env.HYPERDRIVE.connectionString, and the store works through it (migrated on open)', async () => {
    const hyperdrive = env.HYPERDRIVE as { connectionString: string }
    const schema = runSchema('hyperdrive')
    const choice = chooseWorkerStore({ ...env, GATEHOUSE_PG_SCHEMA: schema })
    expect(choice).toMatchObject({ type: 'postgres', source: 'Hyperdrive binding HYPERDRIVE', schema })
    expect((choice as { url: string }).url).toBe(hyperdrive.connectionString)
    const scope = new RequestScope()
    const store = await openWorkerStore(choice, {
      postgres: (chosen) =>
        createWorkerPostgresStore({
          url: chosen.url,
          ...(chosen.schema ? { schema: chosen.schema } : {}),
          scope: () => scope,
          socket: workerdSocket,
        }),
    })
    const now = Math.floor(Date.now() / 1000)
    const code = codeRecord(now)
    await store?.codes.insert(code)
    expect((await store?.codes.consume(code.id, now))?.status).toBe('ok')
    expect((await store?.codes.consume(code.id, now))?.status).toBe('replayed')
    const admin = postgres(
      url as string,
      { max: 1, onnotice: () => {}, socket: workerdSocket } as postgres.Options<Record<string, never>>,
    )
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
    await scope.close()
  })
})

describe.skipIf(url)('PostgreSQL store inside workerd', () => {
  it.skip('needs DATABASE_URL (the machine’s PostgreSQL): skipped', () => {})
})
