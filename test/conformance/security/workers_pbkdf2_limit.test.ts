/**
 * #28 item 3: PBKDF2 within the platform's limit. Cloudflare's production runtime refuses PBKDF2
 * above 100,000 iterations (local workerd does not), so these tests run with a double of
 * `crypto.subtle.deriveBits` that refuses the same way: new hashes stay at or below the limit, a
 * stored hash above it is a failed authentication (never a 500) with its own audit reason and a
 * log line, a hash within it verifies, and a verified hash with another count is rehashed.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  type GatehouseEvent,
  type Store,
  WORKERS_PBKDF2_LIMIT,
  createMemoryStore,
  hashSecret,
} from '../../../src/index.ts'
import { hashIterations as setupIterations } from '../../../bin/setup.ts'
import { parseConfigFile } from '../../../src/config/file.ts'
import { hashIterations } from '../../../src/security/secrets.ts'
import { createUserDirectory } from '../../../src/accounts/users.ts'
import { ISSUER, basic, form, makeService } from '../../helpers/service.ts'

const SECRET = 'a-client-secret-of-some-length'
const PERMISSIONS = ['ept:token', 'gt:client_credentials', 'scp:api1']

/** Hashes made before the limit is enforced (as another platform, or an older default, made them). */
let old600k: string
let hash100k: string
let hash1k: string
let userOld600k: string

/** Every PBKDF2 iteration count the code asked the platform for, while the double is installed. */
let requested: number[] = []

/** A `crypto.subtle` that refuses PBKDF2 above 100,000 iterations as Cloudflare's runtime does. */
function enforceWorkersLimit(): void {
  const subtle = crypto.subtle
  const deriveBits = subtle.deriveBits.bind(subtle)
  vi.spyOn(subtle, 'deriveBits').mockImplementation(async (algorithm, key, length) => {
    const iterations = (algorithm as Pbkdf2Params).iterations
    if ((algorithm as Pbkdf2Params).name === 'PBKDF2') {
      requested.push(iterations)
      if (iterations > 100_000) {
        throw new DOMException(
          'Pbkdf2 failed: iteration counts above 100000 are not supported (requested 600000).',
          'NotSupportedError',
        )
      }
    }
    return deriveBits(algorithm, key, length)
  })
}

/** A service configured as a Worker would be, with the limit enforced, collecting events and warnings. */
async function workersService(options: Parameters<typeof makeService>[0] = {}) {
  const events: GatehouseEvent[] = []
  const warnings: { message: string; detail?: Record<string, unknown> }[] = []
  const store = createMemoryStore()
  const { service } = await makeService({
    store,
    secretHashIterations: WORKERS_PBKDF2_LIMIT,
    secretHashMaxIterations: WORKERS_PBKDF2_LIMIT,
    onEvent: (event) => void events.push(event),
    logger: { warn: (message, detail) => void warnings.push({ message, detail }), error() {} },
    ...options,
  })
  return { service, store, events, warnings }
}

function tokenRequest(clientId: string, secret: string): Request {
  return form(
    `${ISSUER}/connect/token`,
    { grant_type: 'client_credentials', scope: 'api1' },
    { authorization: basic(clientId, secret) },
  )
}

beforeEach(async () => {
  vi.restoreAllMocks()
  old600k ??= await hashSecret(SECRET, 600_000)
  hash100k ??= await hashSecret(SECRET, 100_000)
  hash1k ??= await hashSecret(SECRET, 1000)
  userOld600k ??= await hashSecret('alice-password', 600_000)
  requested = []
  enforceWorkersLimit()
})

afterEach(() => {
  vi.restoreAllMocks()
})

describe('#28 item 3: PBKDF2 on a platform that refuses more than 100,000 iterations', () => {
  it('#28 item 3: WORKERS_PBKDF2_LIMIT is 100,000', () => {
    expect(WORKERS_PBKDF2_LIMIT).toBe(100_000)
  })

  it('#28 item 3: new client secrets and user passwords hash at no more than 100,000 iterations', async () => {
    const { service } = await workersService()
    await service.clients.ensure({ clientId: 'plain', clientSecret: SECRET, permissions: PERMISSIONS })
    const added = await service.clients.addSecret('plain')
    const stored = await service.clients.find('plain')
    expect(stored?.secrets).toHaveLength(2)
    const response = await service.fetch(tokenRequest('plain', added.secret))
    expect(response.status).toBe(200)
    expect(requested.length).toBeGreaterThan(0)
    expect(Math.max(...requested)).toBeLessThanOrEqual(100_000)
  })

  it('#28 item 3: secretHashMaxIterations alone caps the default 600,000 for new hashes', async () => {
    const { service } = await workersService({ secretHashIterations: undefined })
    await service.clients.ensure({ clientId: 'capped', clientSecret: SECRET, permissions: PERMISSIONS })
    expect((await service.fetch(tokenRequest('capped', SECRET))).status).toBe(200)
    expect(Math.max(...requested)).toBe(100_000)
  })

  it('#28 item 3: the configuration file takes secretHashMaxIterations, and the CLI hashes within it', () => {
    const file = parseConfigFile(JSON.stringify({ secretHashMaxIterations: 100_000 }))
    expect(file.secretHashMaxIterations).toBe(100_000)
    const config = { configPath: 'x.json', configText: '{}', file, store: { type: 'memory' as const } }
    expect(setupIterations(config)).toBe(100_000)
  })

  it('#28 item 3: a stored 600,000-iteration hash is a failed authentication (401), never a 500', async () => {
    const { service, events, warnings } = await workersService()
    await service.clients.ensure({ clientId: 'old', clientSecret: old600k, permissions: PERMISSIONS })
    const response = await service.fetch(tokenRequest('old', SECRET))
    expect(response.status).toBe(401)
    const body = (await response.json()) as Record<string, unknown>
    expect(body.error).toBe('invalid_client')
    expect(JSON.stringify(body)).not.toMatch(/pbkdf2|iteration|600000/i)
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'client.authentication_failed',
        clientId: 'old',
        reason: 'secret_hash_unverifiable',
      }),
    )
    const warning = warnings.find((entry) => entry.message.includes('PBKDF2'))
    expect(warning?.detail).toMatchObject({ clientId: 'old', iterations: 600_000, maxIterations: 100_000 })
    expect(JSON.stringify(warnings)).not.toContain(SECRET)
    // Not even attempted: the limit is known before the platform is asked.
    expect(requested.filter((count) => count > 100_000)).toEqual([])
    // The hash is left as it was (it could not be verified, so it cannot be rehashed).
    expect((await service.clients.find('old'))?.secrets).toHaveLength(1)
  })

  it('#28 item 3: without secretHashMaxIterations, the platform refusing a 600,000 hash is still a 401', async () => {
    const { service, events } = await workersService({ secretHashMaxIterations: undefined })
    await service.clients.ensure({ clientId: 'old', clientSecret: old600k, permissions: PERMISSIONS })
    const response = await service.fetch(tokenRequest('old', SECRET))
    expect(response.status).toBe(401)
    expect(requested).toContain(600_000)
    expect(events).toContainEqual(expect.objectContaining({ reason: 'secret_hash_unverifiable' }))
  })

  it('#28 item 3: a wrong secret against a 600,000 hash is the same 401', async () => {
    const { service } = await workersService()
    await service.clients.ensure({ clientId: 'old', clientSecret: old600k, permissions: PERMISSIONS })
    const right = await service.fetch(tokenRequest('old', SECRET))
    const wrong = await service.fetch(tokenRequest('old', `${SECRET}x`))
    expect(wrong.status).toBe(right.status)
    expect(await wrong.json()).toEqual(await right.json())
  })

  it('#28 item 3: a 100,000-iteration hash verifies and is left as it is', async () => {
    const { service } = await workersService()
    await service.clients.ensure({ clientId: 'current', clientSecret: hash100k, permissions: PERMISSIONS })
    const before = await service.clients.find('current')
    expect((await service.fetch(tokenRequest('current', SECRET))).status).toBe(200)
    expect(await service.clients.find('current')).toEqual(before)
  })

  it('#28 item 3: a verified hash with an older (lower) count is rehashed at the configured count, keeping its id', async () => {
    const { service, store } = await workersService({ secretCacheTtl: 0 })
    await service.clients.ensure({ clientId: 'older', clientSecret: hash1k, permissions: PERMISSIONS })
    const [before] = (await service.clients.find('older'))?.secrets ?? []
    expect((await service.fetch(tokenRequest('older', SECRET))).status).toBe(200)
    const [after] = (await service.clients.find('older'))?.secrets ?? []
    expect(after?.id).toBe(before?.id)
    expect(after?.createdAt).toBe(before?.createdAt)
    const record = await storedSecret(store, 'older')
    expect(hashIterations(record)).toBe(100_000)
    // The rehashed secret still verifies, and a wrong one still does not.
    requested = []
    expect((await service.fetch(tokenRequest('older', SECRET))).status).toBe(200)
    expect(requested).toEqual([100_000])
    expect((await service.fetch(tokenRequest('older', 'wrong-secret-of-some-length'))).status).toBe(401)
  })

  it('#28 item 3: a verified hash with a higher count (where allowed) is rehashed down to the configured count', async () => {
    vi.restoreAllMocks() // a platform without the limit, configured for 100,000 (e.g. moving to Workers)
    const { service, store } = await workersService({ secretHashMaxIterations: undefined, secretCacheTtl: 0 })
    await service.clients.ensure({ clientId: 'higher', clientSecret: old600k, permissions: PERMISSIONS })
    expect((await service.fetch(tokenRequest('higher', SECRET))).status).toBe(200)
    expect(hashIterations(await storedSecret(store, 'higher'))).toBe(100_000)
  })

  it('#28 item 3: sync with the plain secret migrates a client whose hash is above the limit', async () => {
    const { service, store } = await workersService()
    await service.clients.ensure({ clientId: 'old', clientSecret: old600k, permissions: PERMISSIONS })
    const { status } = await service.clients.sync({ clientId: 'old', clientSecret: SECRET, permissions: PERMISSIONS })
    expect(status).toBe('updated')
    expect(hashIterations(await storedSecret(store, 'old'))).toBe(100_000)
    expect((await service.fetch(tokenRequest('old', SECRET))).status).toBe(200)
  })

  it('#28 item 3: a built-in user with a 600,000 password hash cannot sign in, is logged at load, and never throws', async () => {
    const warnings: { message: string; detail?: Record<string, unknown> }[] = []
    const users = createUserDirectory(
      [{ sub: 'user-1', username: 'alice', password: userOld600k }],
      { iterations: 100_000, maxIterations: 100_000 },
      { warn: (message, detail) => void warnings.push({ message, detail }), error() {} },
    )
    await users.ready
    expect(warnings).toEqual([
      expect.objectContaining({ detail: { sub: 'user-1', iterations: 600_000, maxIterations: 100_000 } }),
    ])
    await expect(users.authenticate('alice', 'alice-password')).resolves.toBeUndefined()
    expect(requested.filter((count) => count > 100_000)).toEqual([])
  })
})

/** The stored hash of the client's only secret. */
async function storedSecret(store: Store, clientId: string): Promise<string> {
  return (await store.clients.get(clientId))?.secrets[0]?.hash ?? ''
}
