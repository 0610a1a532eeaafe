/**
 * #28 item 3: the Worker's handlers (src/worker/index.ts, behind gatehouse-oidc/adapters/workers) and the
 * store a Worker's `env` chooses (src/worker/store.ts), in Node with a stand-in `ctx`; the same
 * handlers run on workerd in the runtime matrix (`workers` rows, through `npm run start:workers`).
 */
import { describe, expect, it, vi } from 'vitest'
import { type GatehouseEvent, createMemoryStore, createTokenService } from '../../../src/index.ts'
import { createWorkerHandlers } from '../../../src/worker/index.ts'
import { hashIterations } from '../../../src/security/secrets.ts'
import { chooseWorkerStore, describeWorkerStore, openWorkerStore } from '../../../src/worker/store.ts'

const ISSUER = 'https://auth.example.com'
const ctx = { waitUntil: () => {} }
const CLIENT = {
  clientId: 'svc',
  clientSecret: 'svc-secret',
  permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
}

function tokenRequest(headers: Record<string, string> = {}): Request {
  return new Request(`${ISSUER}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa('svc:svc-secret')}`,
      'content-type': 'application/x-www-form-urlencoded',
      ...headers,
    },
    body: 'grant_type=client_credentials&scope=api1',
  })
}

describe('#28 item 3 the Worker handlers', () => {
  it('#28 item 3 build the service once per isolate from env (concurrent first requests share it), with setup before the first answer', async () => {
    const configure = vi.fn((env: { ISSUER: string }) => ({ issuer: env.ISSUER, secretHashIterations: 1000 }))
    const setup = vi.fn(async (service: { clients: { ensure(client: typeof CLIENT): Promise<unknown> } }) => {
      await service.clients.ensure(CLIENT)
    })
    const worker = createWorkerHandlers(configure, { setup })
    const env = { ISSUER }
    const answers = await Promise.all([1, 2, 3].map(() => worker.fetch(tokenRequest(), env, ctx)))
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200])
    expect((await worker.fetch(tokenRequest(), env, ctx)).status).toBe(200)
    expect(configure).toHaveBeenCalledTimes(1)
    expect(setup).toHaveBeenCalledTimes(1)
  })

  it('#28 item 3 new secrets are hashed within the platform PBKDF2 limit (100,000) unless the Worker says otherwise', async () => {
    const iterationsOf = async (options: Record<string, unknown>): Promise<number | undefined> => {
      let stored: string | undefined
      const worker = createWorkerHandlers(() => ({ issuer: ISSUER, ...options }), {
        async setup(service) {
          await service.clients.ensure(CLIENT)
          stored = (await service.store.clients.get(CLIENT.clientId))?.secrets?.[0]?.hash
        },
      })
      expect((await worker.fetch(tokenRequest(), {}, ctx)).status).toBe(200)
      return stored === undefined ? undefined : hashIterations(stored)
    }
    expect(await iterationsOf({})).toBe(100_000)
    expect(await iterationsOf({ secretHashIterations: 1000 })).toBe(1000)
    expect(await iterationsOf({ secretHashMaxIterations: 600_000 })).toBe(600_000)
  })

  it('#28 item 3 the client address comes from the address option (CF-Connecting-IP), as the adapter passes it', async () => {
    const events: GatehouseEvent[] = []
    const worker = createWorkerHandlers(
      () => ({
        issuer: ISSUER,
        secretHashIterations: 1000,
        onEvent: (event: GatehouseEvent) => void events.push(event),
      }),
      {
        setup: async (service) => void (await service.clients.ensure(CLIENT)),
        address: (request) => request.headers.get('cf-connecting-ip') ?? undefined,
      },
    )
    const response = await worker.fetch(tokenRequest({ 'cf-connecting-ip': '203.0.113.7' }), {}, ctx)
    expect(response.status).toBe(200)
    expect(events.find((event) => event.type === 'token.issued')).toMatchObject({ address: '203.0.113.7' })
  })

  it('#28 item 3 a build that fails answers 503 temporarily_unavailable (no stack), and the next request builds again', async () => {
    let attempts = 0
    const onError = vi.fn()
    const worker = createWorkerHandlers(
      () => {
        attempts++
        if (attempts === 1) throw new TypeError('store unreachable')
        return { issuer: ISSUER }
      },
      { onError },
    )
    const failed = await worker.fetch(new Request(`${ISSUER}/.well-known/openid-configuration`), {}, ctx)
    expect(failed.status).toBe(503)
    const body = await failed.text()
    expect(JSON.parse(body)).toMatchObject({ error: 'temporarily_unavailable' })
    expect(body).not.toContain('store unreachable')
    expect(onError).toHaveBeenCalledWith('the service could not start', expect.any(TypeError))
    const served = await worker.fetch(new Request(`${ISSUER}/.well-known/openid-configuration`), {}, ctx)
    expect(served.status).toBe(200)
    expect(attempts).toBe(2)
  })

  it('#28 item 3 scheduled prunes the store: prune() where the store has it, else the memory store’s sweep()', async () => {
    const prune = vi.fn(async () => 3)
    const withPrune = Object.assign(createMemoryStore(), { prune })
    await createWorkerHandlers(() => ({ issuer: ISSUER, store: withPrune })).scheduled({}, {}, ctx)
    expect(prune).toHaveBeenCalledTimes(1)

    const memory = createMemoryStore()
    const sweep = vi.spyOn(memory, 'sweep')
    await createWorkerHandlers(() => ({ issuer: ISSUER, store: memory })).scheduled({}, {}, ctx)
    expect(sweep).toHaveBeenCalledTimes(1)
  })
})

describe('#28 item 3 the waitUntil option', () => {
  it('#28 item 3 an async onEvent hook’s work is handed to waitUntil (Workers would cancel it after the response)', async () => {
    let finish: () => void = () => {}
    const hookDone = new Promise<void>((resolve) => {
      finish = resolve
    })
    const handed: Promise<unknown>[] = []
    const service = createTokenService({
      issuer: ISSUER,
      secretHashIterations: 1000,
      onEvent: (event) => (event.type === 'token.issued' ? hookDone : undefined),
      waitUntil: (promise) => void handed.push(promise),
    })
    await service.clients.ensure(CLIENT)
    expect((await service.fetch(tokenRequest())).status).toBe(200)
    expect(handed).toHaveLength(1)
    let settled = false
    void handed[0]?.then(() => {
      settled = true
    })
    await Promise.resolve()
    expect(settled).toBe(false) // still the hook's work, not a copy already done
    finish()
    await handed[0]
    expect(settled).toBe(true)
  })

  it('#28 item 3 waitUntil must be a function', () => {
    expect(() => createTokenService({ issuer: ISSUER, waitUntil: 'soon' as never })).toThrow(/waitUntil/)
  })
})

describe('#28 item 3 the store a Worker’s env chooses', () => {
  it('#28 item 3 memory by default; d1 needs its binding; DATABASE_URL is PostgreSQL; others are refused', () => {
    expect(chooseWorkerStore({})).toEqual({ type: 'memory' })
    expect(chooseWorkerStore({ GATEHOUSE_STORE: 'memory', DATABASE_URL: 'postgres://db/x' })).toEqual({
      type: 'memory',
    })
    expect(() => chooseWorkerStore({ GATEHOUSE_STORE: 'd1' })).toThrow(
      'GATEHOUSE_STORE=d1 needs a D1 binding named DB (wrangler: [[d1_databases]] binding = "DB")',
    )
    const database = {}
    expect(chooseWorkerStore({ GATEHOUSE_STORE: 'd1', DB: database })).toEqual({ type: 'd1', binding: 'DB', database })
    expect(chooseWorkerStore({ GATEHOUSE_STORE: 'd1', GATEHOUSE_D1_BINDING: 'AUTH', AUTH: database })).toMatchObject({
      binding: 'AUTH',
    })
    const postgres = chooseWorkerStore({ DATABASE_URL: 'postgres://user:pw@db.example:6543/auth' })
    expect(postgres).toEqual({
      type: 'postgres',
      url: 'postgres://user:pw@db.example:6543/auth',
      source: 'DATABASE_URL',
    })
    expect(describeWorkerStore(postgres)).toBe(
      'PostgreSQL store at db.example:6543/auth (schema public, a client per request)',
    ) // no credentials
    expect(() => chooseWorkerStore({ GATEHOUSE_STORE: 'postgres' })).toThrow(
      'GATEHOUSE_STORE=postgres needs a Hyperdrive binding (HYPERDRIVE) or DATABASE_URL',
    )
    expect(() => chooseWorkerStore({ GATEHOUSE_STORE: 'redis' })).toThrow(
      'GATEHOUSE_STORE must be memory, d1 or postgres on Workers, got "redis"',
    )
  })

  it('#28 item 3 memory opens as the service default; a D1 choice whose binding is not one fails, never memory', async () => {
    expect(await openWorkerStore({ type: 'memory' })).toBeUndefined()
    await expect(openWorkerStore({ type: 'd1', binding: 'DB', database: {} })).rejects.toThrow(
      'database must be a D1 binding (env.DB)',
    )
  })

  it('#28 item 4 PostgreSQL from a Hyperdrive binding (HYPERDRIVE or GATEHOUSE_HYPERDRIVE_BINDING) before DATABASE_URL, with GATEHOUSE_PG_SCHEMA', async () => {
    const hyperdrive = { connectionString: 'postgres://user:pw@hyperdrive.local:5432/auth' }
    const chosen = chooseWorkerStore({
      HYPERDRIVE: hyperdrive,
      DATABASE_URL: 'postgres://db/x',
      GATEHOUSE_PG_SCHEMA: 'gh',
    })
    expect(chosen).toEqual({
      type: 'postgres',
      url: hyperdrive.connectionString,
      schema: 'gh',
      source: 'Hyperdrive binding HYPERDRIVE',
    })
    expect(describeWorkerStore(chosen)).toBe(
      'PostgreSQL store through Hyperdrive binding HYPERDRIVE (schema gh, a client per request)',
    )
    expect(
      chooseWorkerStore({ GATEHOUSE_STORE: 'postgres', GATEHOUSE_HYPERDRIVE_BINDING: 'AUTH_DB', AUTH_DB: hyperdrive }),
    ).toMatchObject({ url: hyperdrive.connectionString, source: 'Hyperdrive binding AUTH_DB' })
    expect(() => chooseWorkerStore({ GATEHOUSE_HYPERDRIVE_BINDING: 'AUTH_DB' })).toThrow(
      'GATEHOUSE_HYPERDRIVE_BINDING=AUTH_DB needs a Hyperdrive binding of that name',
    )
    // adapters/workers.ts brings no PostgreSQL driver (it needs nodejs_compat): the message names the module that does.
    await expect(openWorkerStore({ type: 'postgres', url: 'postgres://db/x', source: 'DATABASE_URL' })).rejects.toThrow(
      'DATABASE_URL: PostgreSQL from a Worker needs createWorker and workerStore from gatehouse-oidc/adapters/workers-postgres',
    )
  })
})
