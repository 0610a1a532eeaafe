/**
 * The storage contract every adapter must pass (memory today; PostgreSQL and Redis later).
 * No `.test` suffix: it runs only through an adapter's own `*.test.ts` file:
 *
 *   describeStorageContract({ name: 'memory', create: ({ now }) => createMemoryStore({ now }) })
 *
 * The suite owns the clock. `create` receives `now` (epoch seconds) and the adapter must use it
 * wherever it decides expiry on its own (sessions, interactions, revocations); `consume`, `rotate`,
 * `pushedRequests.take` and `replays.use` also get `now` as an argument. The clock starts at the real current time, so an adapter
 * relying on native TTLs still treats fresh records as live; tests it cannot honour (because they
 * move the clock) are listed in `skip` with a reason.
 *
 * Records are built by the small factories below so that adding a field to a record type means
 * changing one place.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type AddedSecret, type ClientRegistry, createClientRegistry } from '../../src/clients/index.ts'
import {
  type ClientRecord,
  type CodeRecord,
  DEVICE_CODE_RETENTION,
  type DeviceCodeRecord,
  type GrantRecord,
  type InteractionRecord,
  type KeyRecord,
  type PushedRequestRecord,
  type RefreshTokenRecord,
  type SessionRecord,
  type Store,
} from '../../src/storage/types.ts'
import { generateUserCode } from '../../src/tokens/user_code.ts'
import { describeCibaContract } from './contract_ciba.ts'
import { describeGrantsContract } from './contract_grants.ts'
import { describeRedeemContract } from './contract_redeem.ts'

export interface StorageContractOptions {
  /** Shown in the describe block. */
  name: string
  /** A fresh, empty store using `now` as its clock. */
  create(env: { now: () => number }): Store | Promise<Store>
  /** Runs after each test, after `store.close()`: drop tables, flush keys, … */
  cleanup?(store: Store): void | Promise<void>
  /** Tests this adapter cannot pass, by exact name, each with the reason. */
  skip?: Array<{ reason: string; tests: string[] }>
  /** The adapter has `codes.redeem` and `refreshTokens.rotateUnlessRevoked` (#44 item 1). */
  redeem?: boolean
  /** The issue item the adapter's redemption tests are named after (default `#44 item 1`). */
  redeemItem?: string
}

let sequence = 0
/** A unique id, so that adapters sharing a database between tests never collide. */
export function uniqueId(prefix: string): string {
  sequence += 1
  return `${prefix}-${Date.now().toString(36)}-${sequence}-${Math.random().toString(36).slice(2, 8)}`
}

export function clientRecord(overrides: Partial<ClientRecord> = {}): ClientRecord {
  return {
    clientId: uniqueId('client'),
    secrets: [{ hash: 'pbkdf2-sha256$1000$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaA', createdAt: 1_700_000_000 }],
    displayName: 'A client',
    permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
    redirectUris: ['https://rp.example.test/cb'],
    postLogoutRedirectUris: [],
    consentType: 'implicit',
    allowPlainPkce: false,
    requirePkce: false,
    lifetimes: { accessToken: 600 },
    createdAt: 1_700_000_000,
    updatedAt: 1_700_000_000,
    ...overrides,
  }
}

export function codeRecord(now: number, overrides: Partial<CodeRecord> = {}): CodeRecord {
  return {
    id: uniqueId('code'),
    familyId: uniqueId('family'),
    clientId: 'web',
    redirectUri: 'https://rp.example.test/cb',
    scope: 'openid profile',
    sub: 'user-1',
    sid: 'sid-1',
    authTime: now - 10,
    amr: ['pwd'],
    nonce: 'n-0S6_WzA2Mj',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    codeChallengeMethod: 'S256',
    issuedAt: now,
    expiresAt: now + 300,
    ...overrides,
  }
}

export function refreshRecord(now: number, overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord {
  return {
    id: uniqueId('rt'),
    familyId: uniqueId('family'),
    clientId: 'web',
    sub: 'user-1',
    scope: 'openid offline_access',
    sid: 'sid-1',
    authTime: now - 10,
    issuedAt: now,
    expiresAt: now + 3600,
    familyExpiresAt: now + 86_400,
    ...overrides,
  }
}

export function sessionRecord(now: number, overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: uniqueId('session'),
    sid: uniqueId('sid'),
    sub: 'user-1',
    authTime: now,
    amr: ['pwd'],
    clients: ['web'],
    consents: { web: ['openid', 'profile'] },
    expiresAt: now + 3600,
    ...overrides,
  }
}

export function interactionRecord(now: number, overrides: Partial<InteractionRecord> = {}): InteractionRecord {
  return {
    id: uniqueId('interaction'),
    kind: 'authorization',
    browserId: 'browser-hash',
    csrf: 'csrf-token',
    request: { clientId: 'web', scope: 'openid', redirectUri: 'https://rp.example.test/cb', nested: { a: [1, 2] } },
    expiresAt: now + 900,
    ...overrides,
  }
}

export function pushedRequestRecord(now: number, overrides: Partial<PushedRequestRecord> = {}): PushedRequestRecord {
  return {
    id: uniqueId('par'),
    clientId: 'web',
    params: [
      ['response_type', 'code'],
      ['client_id', 'web'],
      ['redirect_uri', 'https://rp.example.test/cb'],
      ['scope', 'openid profile'],
      ['resource', 'https://api.example.test/'],
      ['resource', 'https://mcp.example.test/mcp'],
      ['code_challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
      ['code_challenge_method', 'S256'],
    ],
    expiresAt: now + 60,
    ...overrides,
  }
}

export function deviceCodeRecord(now: number, overrides: Partial<DeviceCodeRecord> = {}): DeviceCodeRecord {
  return {
    id: uniqueId('device'),
    userCode: generateUserCode(),
    familyId: uniqueId('family'),
    clientId: 'tv',
    scope: 'openid profile offline_access',
    resources: ['https://api.example.test/'],
    interval: 5,
    status: 'pending',
    issuedAt: now,
    expiresAt: now + 600,
    ...overrides,
  }
}

export function grantRecord(now: number, overrides: Partial<GrantRecord> = {}): GrantRecord {
  return {
    id: uniqueId('family'),
    clientId: 'web',
    sub: 'user-1',
    scope: 'openid profile offline_access',
    resources: ['https://api.example.test/', 'https://mcp.example.test/mcp'],
    claims: { userinfo: ['email'], id_token: ['name'] },
    sid: 'sid-1',
    sessionId: 'session-hash',
    kind: 'authorization_code',
    authTime: now - 10,
    createdAt: now,
    expiresAt: now + 86_400,
    ...overrides,
  }
}

export function keyRecord(now: number, overrides: Partial<KeyRecord> = {}): KeyRecord {
  const kid = overrides.kid ?? uniqueId('kid')
  return {
    kid,
    alg: 'ES256',
    privateJwk: { kty: 'EC', crv: 'P-256', x: 'x-value', y: 'y-value', d: 'd-value', kid, alg: 'ES256', use: 'sig' },
    publicJwk: { kty: 'EC', crv: 'P-256', x: 'x-value', y: 'y-value', kid, alg: 'ES256', use: 'sig' },
    createdAt: now,
    activatesAt: now,
    ...overrides,
  }
}

/** The value, or a test failure naming what was missing. */
export function defined<T>(value: T | undefined, what = 'value'): T {
  if (value === undefined) throw new Error(`expected ${what} to be defined`)
  return value
}

function statuses(results: Array<{ status: string }>) {
  return {
    ok: results.filter((r) => r.status === 'ok').length,
    replayed: results.filter((r) => r.status === 'replayed').length,
    missing: results.filter((r) => r.status === 'missing').length,
  }
}

/** Registers the storage contract suite for one adapter. */
export function describeStorageContract(options: StorageContractOptions): void {
  const skipped = new Map<string, string>()
  for (const entry of options.skip ?? []) for (const test of entry.tests) skipped.set(test, entry.reason)

  describe(`storage contract: ${options.name}`, () => {
    let store: Store
    let now: number
    const clock = () => now
    const advance = (seconds: number) => {
      now += seconds
    }

    beforeEach(async () => {
      now = Math.floor(Date.now() / 1000)
      store = await options.create({ now: clock })
    })

    afterEach(async () => {
      await store.close?.()
      await options.cleanup?.(store)
    })

    /** `it`, unless the adapter lists the test in `skip`. */
    function test(name: string, fn: () => Promise<void>) {
      const reason = skipped.get(name)
      if (reason !== undefined) it.skip(`${name} (skipped: ${reason})`, fn)
      else it(name, fn)
    }

    describe('clients', () => {
      test('get of an unknown id is undefined', async () => {
        expect(await store.clients.get(uniqueId('nobody'))).toBeUndefined()
      })

      test('insert then get returns an equal record', async () => {
        const record = clientRecord()
        expect(await store.clients.insert(record)).toBe(true)
        expect(await store.clients.get(record.clientId)).toEqual(record)
      })

      test('insert is insert-if-absent: a second insert of the id returns false and changes nothing', async () => {
        const record = clientRecord()
        await store.clients.insert(record)
        expect(await store.clients.insert({ ...record, displayName: 'Intruder', permissions: [] })).toBe(false)
        expect(await store.clients.get(record.clientId)).toEqual(record)
      })

      test('insert-if-absent is atomic: of 8 concurrent inserts of one id exactly one wins', async () => {
        const clientId = uniqueId('client')
        const candidates = Array.from({ length: 8 }, (_, i) =>
          clientRecord({ clientId, displayName: `candidate ${i}` }),
        )
        const results = await Promise.all(candidates.map((r) => store.clients.insert(r)))
        expect(results.filter(Boolean)).toHaveLength(1)
        const winner = candidates[results.indexOf(true)]
        expect(await store.clients.get(clientId)).toEqual(winner)
      })

      test('update replaces an existing record and returns true', async () => {
        const record = clientRecord()
        await store.clients.insert(record)
        const changed = {
          ...record,
          displayName: 'Renamed',
          permissions: ['ept:token'],
          secrets: [],
          updatedAt: record.updatedAt + 5,
        }
        expect(await store.clients.update(changed)).toBe(true)
        expect(await store.clients.get(record.clientId)).toEqual(changed)
      })

      test('#17.11 update with expected: of two concurrent compare-and-sets from one record exactly one wins', async () => {
        const record = clientRecord()
        await store.clients.insert(record)
        const expected = defined(await store.clients.get(record.clientId), 'the client')
        const a = { ...expected, displayName: 'A', updatedAt: expected.updatedAt + 1 }
        const b = { ...expected, displayName: 'B', updatedAt: expected.updatedAt + 1 }
        const results = await Promise.all([store.clients.update(a, expected), store.clients.update(b, expected)])
        expect(results.filter(Boolean)).toHaveLength(1)
        expect(await store.clients.get(record.clientId)).toEqual(results[0] ? a : b)
        // a stale expected record never overwrites
        expect(await store.clients.update({ ...expected, displayName: 'C' }, expected)).toBe(false)
        expect((await store.clients.get(record.clientId))?.displayName).toBe(results[0] ? 'A' : 'B')
      })

      test('#17.11 concurrent addSecret and retireSecret from two registries (instances) lose no secret', async () => {
        const registries = [0, 1].map(() => createClientRegistry({ store, now: clock, iterations: 1, cacheTtl: 0 }))
        const [one, two] = registries as [ClientRegistry, ClientRegistry]
        const clientId = uniqueId('rotating')
        await one.ensure({ clientId, clientSecret: 'first-secret-0123456789', permissions: ['ept:token'] })
        const added = await Promise.all([
          ...Array.from({ length: 4 }, () => one.addSecret(clientId)),
          ...Array.from({ length: 4 }, () => two.addSecret(clientId)),
        ])
        const info = defined(await two.find(clientId), 'the client')
        expect(info.secrets).toHaveLength(9)
        for (const secret of added) expect(info.secrets.map((s) => s.id)).toContain(secret.id)
        // retiring two different secrets at once from both instances: both retirements stick
        const [x, y] = added as [AddedSecret, AddedSecret]
        await Promise.all([one.retireSecret(clientId, x.id), two.retireSecret(clientId, y.id)])
        const after = defined(await one.find(clientId), 'the client')
        expect(after.secrets.find((s) => s.id === x.id)?.expiresAt).toBe(now)
        expect(after.secrets.find((s) => s.id === y.id)?.expiresAt).toBe(now)
        expect(after.secrets).toHaveLength(9)
      })

      test('update of an unknown id returns false and creates nothing', async () => {
        const record = clientRecord()
        expect(await store.clients.update(record)).toBe(false)
        expect(await store.clients.get(record.clientId)).toBeUndefined()
      })

      test('delete returns whether the client existed', async () => {
        const record = clientRecord()
        await store.clients.insert(record)
        expect(await store.clients.delete(record.clientId)).toBe(true)
        expect(await store.clients.get(record.clientId)).toBeUndefined()
        expect(await store.clients.delete(record.clientId)).toBe(false)
      })

      test('list returns every client and no deleted one', async () => {
        const [a, b, c] = [clientRecord(), clientRecord(), clientRecord({ secrets: [], permissions: [] })]
        for (const record of [a, b, c]) await store.clients.insert(record)
        await store.clients.delete(b.clientId)
        const listed = await store.clients.list()
        const byId = new Map(listed.map((r) => [r.clientId, r]))
        expect(byId.get(a.clientId)).toEqual(a)
        expect(byId.get(c.clientId)).toEqual(c)
        expect(byId.has(b.clientId)).toBe(false)
      })

      test('records are copies: mutating what was inserted or returned does not change the store', async () => {
        const record = clientRecord()
        const expected = structuredClone(record)
        await store.clients.insert(record)
        record.permissions.push('ept:introspection')
        record.displayName = 'mutated'
        const got = defined(await store.clients.get(record.clientId), 'the client')
        expect(got).toEqual(expected)
        got.secrets.length = 0
        got.lifetimes.accessToken = 1
        expect(await store.clients.get(record.clientId)).toEqual(expected)
      })
    })

    describe('codes', () => {
      test('#17.2 get reads a code without consuming it, with consumedAt once consumed; unknown or expired is undefined', async () => {
        expect(await store.codes.get(uniqueId('code'))).toBeUndefined()
        const record = codeRecord(now, { expiresAt: now + 60 })
        await store.codes.insert(record)
        expect(await store.codes.get(record.id)).toEqual(record)
        expect(await store.codes.get(record.id)).toEqual(record)
        expect((await store.codes.consume(record.id, now)).status).toBe('ok')
        expect(await store.codes.get(record.id)).toEqual({ ...record, consumedAt: now })
        advance(60)
        expect(await store.codes.get(record.id)).toBeUndefined()
      })

      test('#19 a code round-trips its resources (RFC 8707) through get and consume', async () => {
        const resources = ['https://mcp.example.com/mcp', 'https://calendar.example.com/']
        const record = codeRecord(now, { resources })
        await store.codes.insert(record)
        expect((await store.codes.get(record.id))?.resources).toEqual(resources)
        const consumed = await store.codes.consume(record.id, now)
        expect(consumed.status === 'ok' && consumed.record.resources).toEqual(resources)
      })

      test('consume of an unknown code is missing', async () => {
        expect(await store.codes.consume(uniqueId('code'), now)).toEqual({ status: 'missing' })
      })

      test('consume returns ok with the record the first time, then replayed with the family', async () => {
        const record = codeRecord(now)
        await store.codes.insert(record)
        const first = await store.codes.consume(record.id, now)
        expect(first.status).toBe('ok')
        if (first.status !== 'ok') return
        expect(first.record).toMatchObject(record)
        advance(5)
        const second = await store.codes.consume(record.id, now)
        expect(second.status).toBe('replayed')
        if (second.status !== 'replayed') return
        expect(second.record).toMatchObject({ ...record, consumedAt: expect.any(Number) })
        expect(second.record.familyId).toBe(record.familyId)
      })

      for (const callers of [8, 100]) {
        test(`consume: exactly one of ${callers} concurrent callers wins, the rest see replayed`, async () => {
          const record = codeRecord(now)
          await store.codes.insert(record)
          const results = await Promise.all(Array.from({ length: callers }, () => store.codes.consume(record.id, now)))
          expect(statuses(results)).toEqual({ ok: 1, replayed: callers - 1, missing: 0 })
          for (const result of results) {
            if (result.status !== 'missing') expect(result.record.familyId).toBe(record.familyId)
          }
        })
      }

      test('a consumed code keeps a tombstone (replayed) until expiresAt, then is missing', async () => {
        const record = codeRecord(now, { expiresAt: now + 60 })
        await store.codes.insert(record)
        expect((await store.codes.consume(record.id, now)).status).toBe('ok')
        advance(59)
        expect((await store.codes.consume(record.id, now)).status).toBe('replayed')
        advance(1)
        expect(await store.codes.consume(record.id, now)).toEqual({ status: 'missing' })
      })

      test('an expired code is missing, never ok', async () => {
        const record = codeRecord(now, { expiresAt: now + 60 })
        await store.codes.insert(record)
        advance(60)
        expect(await store.codes.consume(record.id, now)).toEqual({ status: 'missing' })
        advance(1000)
        expect(await store.codes.consume(record.id, now)).toEqual({ status: 'missing' })
      })

      test('the now argument decides expiry too', async () => {
        const record = codeRecord(now, { expiresAt: now + 60 })
        await store.codes.insert(record)
        expect(await store.codes.consume(record.id, now + 60)).toEqual({ status: 'missing' })
      })

      test('consuming one code does not touch another', async () => {
        const a = codeRecord(now)
        const b = codeRecord(now, { familyId: a.familyId })
        await store.codes.insert(a)
        await store.codes.insert(b)
        expect((await store.codes.consume(a.id, now)).status).toBe('ok')
        expect((await store.codes.consume(b.id, now)).status).toBe('ok')
      })

      test("#20 concurrent consumers at different times: the losers report the winner's consumedAt", async () => {
        const record = codeRecord(now)
        await store.codes.insert(record)
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.codes.consume(record.id, now + i)))
        expect(statuses(results)).toEqual({ ok: 1, replayed: 19, missing: 0 })
        const winner = results.findIndex((r) => r.status === 'ok')
        expect(results[winner]).toEqual({ status: 'ok', record: { ...record, consumedAt: now + winner } })
        for (const result of results)
          if (result.status === 'replayed') expect(result.record.consumedAt).toBe(now + winner)
        expect(await store.codes.get(record.id)).toEqual({ ...record, consumedAt: now + winner })
      })
    })

    describe('refresh tokens', () => {
      test('insert then get returns an equal record; unknown ids are undefined', async () => {
        const record = refreshRecord(now)
        await store.refreshTokens.insert(record)
        expect(await store.refreshTokens.get(record.id)).toEqual(record)
        expect(await store.refreshTokens.get(uniqueId('rt'))).toBeUndefined()
      })

      test('#19 a refresh token round-trips its resources (RFC 8707) through insert, get and rotate', async () => {
        const resources = ['https://mcp.example.com/mcp', 'https://calendar.example.com/']
        const current = refreshRecord(now, { resources })
        await store.refreshTokens.insert(current)
        expect((await store.refreshTokens.get(current.id))?.resources).toEqual(resources)
        const next = refreshRecord(now, { familyId: current.familyId, resources })
        const rotated = await store.refreshTokens.rotate(current.id, next, now)
        expect(rotated.status === 'ok' && rotated.record.resources).toEqual(resources)
        expect((await store.refreshTokens.get(next.id))?.resources).toEqual(resources)
      })

      test('get of an expired generation is undefined', async () => {
        const record = refreshRecord(now, { expiresAt: now + 10 })
        await store.refreshTokens.insert(record)
        advance(10)
        expect(await store.refreshTokens.get(record.id)).toBeUndefined()
      })

      test('rotate marks the generation consumed and inserts the next one', async () => {
        const current = refreshRecord(now)
        const next = refreshRecord(now, { familyId: current.familyId })
        await store.refreshTokens.insert(current)
        const result = await store.refreshTokens.rotate(current.id, next, now)
        expect(result.status).toBe('ok')
        if (result.status !== 'ok') return
        expect(result.record).toMatchObject(current)
        expect(await store.refreshTokens.get(next.id)).toEqual(next)
        expect((await store.refreshTokens.get(current.id))?.consumedAt).toBe(now)
      })

      test('rotate after replay: replayed with the family, and the would-be next generation is not inserted', async () => {
        const current = refreshRecord(now)
        const next = refreshRecord(now, { familyId: current.familyId })
        const stolen = refreshRecord(now, { familyId: current.familyId })
        await store.refreshTokens.insert(current)
        expect((await store.refreshTokens.rotate(current.id, next, now)).status).toBe('ok')
        advance(5)
        const replay = await store.refreshTokens.rotate(current.id, stolen, now)
        expect(replay.status).toBe('replayed')
        if (replay.status !== 'replayed') return
        expect(replay.record.familyId).toBe(current.familyId)
        expect(await store.refreshTokens.get(stolen.id)).toBeUndefined()
        // The legitimate next generation is untouched.
        expect(await store.refreshTokens.get(next.id)).toEqual(next)
      })

      test('rotate of an unknown or expired generation is missing and inserts nothing', async () => {
        const ghostNext = refreshRecord(now)
        expect(await store.refreshTokens.rotate(uniqueId('rt'), ghostNext, now)).toEqual({ status: 'missing' })
        expect(await store.refreshTokens.get(ghostNext.id)).toBeUndefined()

        const current = refreshRecord(now, { expiresAt: now + 30 })
        const next = refreshRecord(now, { familyId: current.familyId })
        await store.refreshTokens.insert(current)
        advance(30)
        expect(await store.refreshTokens.rotate(current.id, next, now)).toEqual({ status: 'missing' })
        expect(await store.refreshTokens.get(next.id)).toBeUndefined()
      })

      test('the now argument decides expiry of rotate too', async () => {
        const current = refreshRecord(now, { expiresAt: now + 30 })
        const next = refreshRecord(now, { familyId: current.familyId })
        await store.refreshTokens.insert(current)
        expect(await store.refreshTokens.rotate(current.id, next, now + 30)).toEqual({ status: 'missing' })
        expect(await store.refreshTokens.get(next.id)).toBeUndefined()
      })

      for (const callers of [8, 100]) {
        test(`rotate is atomic: exactly one of ${callers} concurrent rotations wins and only its next generation exists`, async () => {
          const current = refreshRecord(now)
          await store.refreshTokens.insert(current)
          const nexts = Array.from({ length: callers }, () => refreshRecord(now, { familyId: current.familyId }))
          const results = await Promise.all(nexts.map((next) => store.refreshTokens.rotate(current.id, next, now)))
          expect(statuses(results)).toEqual({ ok: 1, replayed: callers - 1, missing: 0 })
          const winner = defined(nexts[results.findIndex((r) => r.status === 'ok')], 'the winner')
          const present = await Promise.all(nexts.map((next) => store.refreshTokens.get(next.id)))
          expect(present.filter((r) => r !== undefined)).toEqual([winner])
        })
      }

      test('a chain of generations rotates; replaying an old generation is detected', async () => {
        const gen1 = refreshRecord(now)
        const gen2 = refreshRecord(now, { familyId: gen1.familyId })
        const gen3 = refreshRecord(now, { familyId: gen1.familyId })
        await store.refreshTokens.insert(gen1)
        expect((await store.refreshTokens.rotate(gen1.id, gen2, now)).status).toBe('ok')
        advance(1)
        expect((await store.refreshTokens.rotate(gen2.id, gen3, now)).status).toBe('ok')
        advance(1)
        const replay = await store.refreshTokens.rotate(gen1.id, refreshRecord(now, { familyId: gen1.familyId }), now)
        expect(replay).toMatchObject({ status: 'replayed', record: { familyId: gen1.familyId } })
        expect(await store.refreshTokens.get(gen3.id)).toEqual(gen3)
      })

      test("#20 rotate returns the record with consumedAt; a replay returns it with the first rotation's consumedAt", async () => {
        const current = refreshRecord(now)
        await store.refreshTokens.insert(current)
        const next = refreshRecord(now, { familyId: current.familyId })
        expect(await store.refreshTokens.rotate(current.id, next, now)).toEqual({
          status: 'ok',
          record: { ...current, consumedAt: now },
        })
        advance(7)
        const stolen = refreshRecord(now, { familyId: current.familyId })
        expect(await store.refreshTokens.rotate(current.id, stolen, now)).toEqual({
          status: 'replayed',
          record: { ...current, consumedAt: now - 7 },
        })
        expect(await store.refreshTokens.get(stolen.id)).toBeUndefined()
      })

      test('#20 a consumed generation whose expiry passed is missing, and rotating it inserts nothing', async () => {
        const current = refreshRecord(now, { expiresAt: now + 30 })
        await store.refreshTokens.insert(current)
        expect((await store.refreshTokens.rotate(current.id, refreshRecord(now), now)).status).toBe('ok')
        advance(30)
        const next = refreshRecord(now, { familyId: current.familyId })
        expect(await store.refreshTokens.rotate(current.id, next, now)).toEqual({ status: 'missing' })
        expect(await store.refreshTokens.get(next.id)).toBeUndefined()
      })

      test("#20 concurrent rotations at different times: one ok, the losers report the winner's consumedAt", async () => {
        const current = refreshRecord(now)
        await store.refreshTokens.insert(current)
        const nexts = Array.from({ length: 20 }, () => refreshRecord(now, { familyId: current.familyId }))
        const results = await Promise.all(nexts.map((next, i) => store.refreshTokens.rotate(current.id, next, now + i)))
        expect(statuses(results)).toEqual({ ok: 1, replayed: 19, missing: 0 })
        const winner = results.findIndex((r) => r.status === 'ok')
        for (const result of results)
          if (result.status !== 'missing') expect(result.record.consumedAt).toBe(now + winner)
        const present = await Promise.all(nexts.map((next) => store.refreshTokens.get(next.id)))
        expect(present.filter((r) => r !== undefined)).toEqual([nexts[winner]])
      })

      test('#20 concurrent rotations of different generations all succeed, each inserting its next', async () => {
        const currents = Array.from({ length: 20 }, () => refreshRecord(now))
        await Promise.all(currents.map((record) => store.refreshTokens.insert(record)))
        const nexts = currents.map((record) => refreshRecord(now, { familyId: record.familyId }))
        const results = await Promise.all(
          currents.map((record, i) => store.refreshTokens.rotate(record.id, defined(nexts[i], 'next'), now)),
        )
        expect(statuses(results)).toEqual({ ok: 20, replayed: 0, missing: 0 })
        expect(await Promise.all(nexts.map((next) => store.refreshTokens.get(next.id)))).toEqual(nexts)
      })
    })

    describe('revocations', () => {
      test('revokeFamily revokes that family only', async () => {
        const family = uniqueId('family')
        const other = uniqueId('family')
        expect(await store.revocations.isFamilyRevoked(family)).toBe(false)
        await store.revocations.revokeFamily(family, now + 3600)
        expect(await store.revocations.isFamilyRevoked(family)).toBe(true)
        expect(await store.revocations.isFamilyRevoked(other)).toBe(false)
      })

      test('revokeFamily is idempotent, also under concurrency', async () => {
        const family = uniqueId('family')
        await store.revocations.revokeFamily(family, now + 3600)
        await store.revocations.revokeFamily(family, now + 3600)
        await Promise.all(Array.from({ length: 8 }, () => store.revocations.revokeFamily(family, now + 3600)))
        expect(await store.revocations.isFamilyRevoked(family)).toBe(true)
      })

      test('a second revokeFamily with an earlier until never shortens the revocation', async () => {
        const family = uniqueId('family')
        await store.revocations.revokeFamily(family, now + 3600)
        await store.revocations.revokeFamily(family, now + 10)
        advance(100)
        expect(await store.revocations.isFamilyRevoked(family)).toBe(true)
      })

      test('a family revocation lasts until `until`', async () => {
        const family = uniqueId('family')
        await store.revocations.revokeFamily(family, now + 100)
        advance(99)
        expect(await store.revocations.isFamilyRevoked(family)).toBe(true)
        advance(1)
        expect(await store.revocations.isFamilyRevoked(family)).toBe(false)
      })

      test('access token denylist: revoked until the token expiry, then forgotten', async () => {
        const jti = uniqueId('jti')
        expect(await store.revocations.isAccessTokenRevoked(jti)).toBe(false)
        await store.revocations.revokeAccessToken(jti, now + 600)
        expect(await store.revocations.isAccessTokenRevoked(jti)).toBe(true)
        expect(await store.revocations.isAccessTokenRevoked(uniqueId('jti'))).toBe(false)
        advance(599)
        expect(await store.revocations.isAccessTokenRevoked(jti)).toBe(true)
        advance(1)
        expect(await store.revocations.isAccessTokenRevoked(jti)).toBe(false)
      })

      test('many concurrent checks of access tokens and families each get their own answer', async () => {
        const jtis = Array.from({ length: 40 }, () => uniqueId('jti'))
        const families = Array.from({ length: 40 }, () => uniqueId('family'))
        await Promise.all(
          jtis.filter((_, i) => i % 3 === 0).map((jti) => store.revocations.revokeAccessToken(jti, now + 600)),
        )
        await Promise.all(
          families.filter((_, i) => i % 4 === 0).map((f) => store.revocations.revokeFamily(f, now + 600)),
        )
        // Each id asked twice, interleaved, all at once.
        const asked = [...jtis, ...jtis].map((jti) => store.revocations.isAccessTokenRevoked(jti))
        const askedFamilies = [...families, ...families].map((f) => store.revocations.isFamilyRevoked(f))
        expect(await Promise.all(asked)).toEqual([...jtis, ...jtis].map((_, i) => (i % 40) % 3 === 0))
        expect(await Promise.all(askedFamilies)).toEqual([...families, ...families].map((_, i) => (i % 40) % 4 === 0))
      })

      test('a check asked after a revocation completed sees it, even while other checks are in flight', async () => {
        const busy = Array.from({ length: 20 }, () => store.revocations.isAccessTokenRevoked(uniqueId('jti')))
        const jti = uniqueId('jti')
        await store.revocations.revokeAccessToken(jti, now + 600)
        const more = Array.from({ length: 20 }, () => store.revocations.isAccessTokenRevoked(uniqueId('jti')))
        expect(await store.revocations.isAccessTokenRevoked(jti)).toBe(true)
        expect(await Promise.all([...busy, ...more])).toEqual(Array(40).fill(false))
      })

      test('#20 an access token id and a family id that are equal strings are answered apart', async () => {
        const id = uniqueId('same')
        await store.revocations.revokeAccessToken(id, now + 600)
        const [asJti, asFamily] = await Promise.all([
          store.revocations.isAccessTokenRevoked(id),
          store.revocations.isFamilyRevoked(id),
        ])
        expect([asJti, asFamily]).toEqual([true, false])
        const other = uniqueId('same')
        await store.revocations.revokeFamily(other, now + 600)
        expect(
          await Promise.all([store.revocations.isAccessTokenRevoked(other), store.revocations.isFamilyRevoked(other)]),
        ).toEqual([false, true])
      })

      test('revoking an access token twice is harmless', async () => {
        const jti = uniqueId('jti')
        await store.revocations.revokeAccessToken(jti, now + 600)
        await store.revocations.revokeAccessToken(jti, now + 600)
        expect(await store.revocations.isAccessTokenRevoked(jti)).toBe(true)
      })
    })

    describe('sessions', () => {
      test('put, get and delete', async () => {
        const record = sessionRecord(now)
        await store.sessions.put(record)
        expect(await store.sessions.get(record.id)).toEqual(record)
        await store.sessions.delete(record.id)
        expect(await store.sessions.get(record.id)).toBeUndefined()
      })

      test('put replaces an existing session', async () => {
        const record = sessionRecord(now)
        await store.sessions.put(record)
        const changed = { ...record, clients: ['web', 'web2'], consents: { ...record.consents, web2: ['openid'] } }
        await store.sessions.put(changed)
        expect(await store.sessions.get(record.id)).toEqual(changed)
      })

      test('delete of an unknown session is harmless; get of one is undefined', async () => {
        await expect(store.sessions.delete(uniqueId('session'))).resolves.toBeUndefined()
        expect(await store.sessions.get(uniqueId('session'))).toBeUndefined()
      })

      test('#30 listBySub: the live sessions of one end-user, without ended, expired or re-assigned ones', async () => {
        const list = store.sessions.listBySub?.bind(store.sessions)
        if (!list) throw new Error('every built-in store lists sessions by sub')
        const sub = uniqueId('sub')
        const ids = async (who: string) => (await list(who)).map((record) => record.id).sort()
        const a = sessionRecord(now, { sub })
        const b = sessionRecord(now, { sub, expiresAt: now + 100 })
        const moved = sessionRecord(now, { sub })
        await Promise.all([a, b, moved, sessionRecord(now)].map((record) => store.sessions.put(record)))
        expect(await ids(sub)).toEqual([a.id, b.id, moved.id].sort())
        expect((await list(sub)).find((record) => record.id === a.id)).toEqual(a)
        await store.sessions.put({ ...moved, sub: uniqueId('other') })
        await store.sessions.delete(a.id)
        expect(await ids(sub)).toEqual([b.id])
        advance(100)
        expect(await ids(sub)).toEqual([])
        expect(await list(uniqueId('nobody'))).toEqual([])
      })

      test('an expired session is gone', async () => {
        const record = sessionRecord(now, { expiresAt: now + 100 })
        await store.sessions.put(record)
        advance(99)
        expect(await store.sessions.get(record.id)).toEqual(record)
        advance(1)
        expect(await store.sessions.get(record.id)).toBeUndefined()
      })
    })

    describe('grants', () => {
      test('#39 put then get returns an equal record; get of an unknown id is undefined', async () => {
        const record = grantRecord(now)
        await store.grants.put(record)
        expect(await store.grants.get(record.id, now)).toEqual(record)
        const device = grantRecord(now, { kind: 'device_code', clientId: 'tv', scope: 'openid' })
        for (const key of ['resources', 'claims', 'sid', 'sessionId'] as const) delete device[key]
        await store.grants.put(device)
        expect(await store.grants.get(device.id, now)).toEqual(device)
        expect(await store.grants.get(uniqueId('family'), now)).toBeUndefined()
      })

      test('#39 put replaces the record of an id', async () => {
        const record = grantRecord(now, { expiresAt: now + 600 })
        await store.grants.put(record)
        const changed = { ...record, scope: 'openid', resources: ['https://api.example.test/'], expiresAt: now + 7200 }
        await store.grants.put(changed)
        expect(await store.grants.get(record.id, now)).toEqual(changed)
        advance(600)
        expect(await store.grants.get(record.id, now)).toEqual(changed)
        expect(await store.grants.listBySub(record.sub, now)).toContainEqual(changed)
      })

      test('#39 an expired grant is missing from get and listBySub; the now argument decides', async () => {
        const sub = uniqueId('sub')
        const record = grantRecord(now, { sub, expiresAt: now + 100 })
        await store.grants.put(record)
        expect(await store.grants.get(record.id, now + 99)).toEqual(record)
        expect(await store.grants.get(record.id, now + 100)).toBeUndefined()
        expect(await store.grants.listBySub(sub, now + 100)).toEqual([])
        advance(99)
        expect(await store.grants.listBySub(sub, now)).toEqual([record])
        advance(1)
        expect(await store.grants.get(record.id, now)).toBeUndefined()
        expect(await store.grants.listBySub(sub, now)).toEqual([])
      })

      test("#39 listBySub: the unexpired grants of one end-user, without another's, deleted, expired or re-assigned ones", async () => {
        const sub = uniqueId('sub')
        const ids = async (who: string) => (await store.grants.listBySub(who, now)).map((record) => record.id).sort()
        const a = grantRecord(now, { sub })
        const b = grantRecord(now, { sub, kind: 'device_code', expiresAt: now + 100 })
        const short = grantRecord(now, { sub, expiresAt: now + 50 })
        const moved = grantRecord(now, { sub })
        const deleted = grantRecord(now, { sub })
        const other = grantRecord(now, { sub: uniqueId('other') })
        await Promise.all([a, b, short, moved, deleted, other].map((record) => store.grants.put(record)))
        expect(await ids(sub)).toEqual([a.id, b.id, short.id, moved.id, deleted.id].sort())
        expect((await store.grants.listBySub(sub, now)).find((record) => record.id === b.id)).toEqual(b)
        expect(await ids(other.sub)).toEqual([other.id])
        await store.grants.put({ ...moved, sub: other.sub })
        await store.grants.delete(deleted.id)
        expect(await ids(sub)).toEqual([a.id, b.id, short.id].sort())
        expect(await ids(other.sub)).toEqual([moved.id, other.id].sort())
        advance(50)
        expect(await ids(sub)).toEqual([a.id, b.id].sort())
        advance(50)
        expect(await ids(sub)).toEqual([a.id])
        expect(await store.grants.listBySub(uniqueId('nobody'), now)).toEqual([])
      })

      test('#39 a short grant put after a long one leaves the long one listed once the short one ended', async () => {
        const sub = uniqueId('sub')
        const long = grantRecord(now, { sub, expiresAt: now + 86_400 })
        const short = grantRecord(now, { sub, expiresAt: now + 60 })
        await store.grants.put(long)
        await store.grants.put(short)
        advance(61)
        expect(await store.grants.listBySub(sub, now)).toEqual([long])
      })

      test('#39 delete removes the grant; deleting an unknown id is harmless', async () => {
        const record = grantRecord(now)
        const kept = grantRecord(now, { sub: record.sub })
        await store.grants.put(record)
        await store.grants.put(kept)
        await store.grants.delete(record.id)
        expect(await store.grants.get(record.id, now)).toBeUndefined()
        expect(await store.grants.get(kept.id, now)).toEqual(kept)
        expect((await store.grants.listBySub(record.sub, now)).map((r) => r.id)).not.toContain(record.id)
        await expect(store.grants.delete(uniqueId('family'))).resolves.toBeUndefined()
      })
    })

    describeGrantsContract({ store: () => store, now: clock, advance, test })
    if (options.redeem) describeRedeemContract({ store: () => store, now: clock, test, item: options.redeemItem })

    describe('interactions', () => {
      test('put and get', async () => {
        const record = interactionRecord(now, { login: { sub: 'user-1', authTime: now, amr: ['pwd'] }, message: 'hi' })
        await store.interactions.put(record)
        expect(await store.interactions.get(record.id)).toEqual(record)
        expect(await store.interactions.get(record.id)).toEqual(record)
      })

      test('take returns it once and removes it', async () => {
        const record = interactionRecord(now)
        await store.interactions.put(record)
        expect(await store.interactions.take(record.id)).toEqual(record)
        expect(await store.interactions.take(record.id)).toBeUndefined()
        expect(await store.interactions.get(record.id)).toBeUndefined()
      })

      test('take is atomic: of 8 concurrent takes exactly one gets the record', async () => {
        const record = interactionRecord(now)
        await store.interactions.put(record)
        const results = await Promise.all(Array.from({ length: 8 }, () => store.interactions.take(record.id)))
        expect(results.filter((r) => r !== undefined)).toEqual([record])
      })

      test('put replaces an interaction (e.g. after sign-in, before consent)', async () => {
        const record = interactionRecord(now)
        await store.interactions.put(record)
        const changed = { ...record, login: { sub: 'user-1', authTime: now } }
        await store.interactions.put(changed)
        expect(await store.interactions.get(record.id)).toEqual(changed)
      })

      test('an expired interaction can be neither read nor taken', async () => {
        const record = interactionRecord(now, { expiresAt: now + 100 })
        await store.interactions.put(record)
        advance(100)
        expect(await store.interactions.get(record.id)).toBeUndefined()
        expect(await store.interactions.take(record.id)).toBeUndefined()
      })

      test('unknown ids are undefined', async () => {
        expect(await store.interactions.get(uniqueId('interaction'))).toBeUndefined()
        expect(await store.interactions.take(uniqueId('interaction'))).toBeUndefined()
      })
    })

    describe('attempts', () => {
      test('hit counts within a window and get reads the counter', async () => {
        const key = uniqueId('client:a|10.0.0.1')
        expect(await store.attempts.get(key, now)).toBeUndefined()
        expect(await store.attempts.hit(key, 60, now)).toEqual({ count: 1, resetAt: now + 60 })
        advance(10)
        expect(await store.attempts.hit(key, 60, now)).toEqual({ count: 2, resetAt: now + 50 })
        expect(await store.attempts.get(key, now)).toEqual({ count: 2, resetAt: now + 50 })
        expect(await store.attempts.get(uniqueId('other'), now)).toBeUndefined()
      })

      test('a hit after the window ended starts a new window at one', async () => {
        const key = uniqueId('user:alice')
        await store.attempts.hit(key, 60, now)
        await store.attempts.hit(key, 60, now)
        advance(60)
        expect(await store.attempts.get(key, now)).toBeUndefined()
        expect(await store.attempts.hit(key, 60, now)).toEqual({ count: 1, resetAt: now + 60 })
      })

      test('100 concurrent hits count to 100 (atomic increment)', async () => {
        const key = uniqueId('address:192.0.2.1')
        const results = await Promise.all(Array.from({ length: 100 }, () => store.attempts.hit(key, 300, now)))
        expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1))
        expect((await store.attempts.get(key, now))?.count).toBe(100)
      })

      test('#27 item 8 take counts only below the limit, and a new window starts again', async () => {
        const key = uniqueId('registration:all')
        const take = defined(store.attempts.take, 'attempts.take').bind(store.attempts)
        expect(await take(key, 2, 60, now)).toEqual({ taken: true, count: 1, resetAt: now + 60 })
        advance(10)
        expect(await take(key, 2, 60, now)).toEqual({ taken: true, count: 2, resetAt: now + 50 })
        expect(await take(key, 2, 60, now)).toEqual({ taken: false, count: 2, resetAt: now + 50 })
        expect(await store.attempts.get(key, now)).toEqual({ count: 2, resetAt: now + 50 })
        advance(50)
        expect(await take(key, 2, 60, now)).toEqual({ taken: true, count: 1, resetAt: now + 60 })
      })

      test('#27 item 8 40 concurrent takes against a limit of 20: exactly 20 taken (atomic count-and-reserve)', async () => {
        const key = uniqueId('registration-address:192.0.2.1')
        const take = defined(store.attempts.take, 'attempts.take').bind(store.attempts)
        const results = await Promise.all(Array.from({ length: 40 }, () => take(key, 20, 3600, now)))
        const taken = results.filter((r) => r.taken)
        expect(taken).toHaveLength(20)
        expect(taken.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
        for (const refused of results.filter((r) => !r.taken))
          expect(refused).toEqual({ taken: false, count: 20, resetAt: now + 3600 })
        expect((await store.attempts.get(key, now))?.count).toBe(20)
      })
    })

    describe('pushed requests', () => {
      test('#21 put then take returns the record, params in order with repeats; a second take is undefined', async () => {
        const record = pushedRequestRecord(now, { dpopJkt: 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs' })
        await store.pushedRequests.put(record)
        expect(await store.pushedRequests.take(record.id, now)).toEqual(record)
        expect(await store.pushedRequests.take(record.id, now)).toBeUndefined()
        const plain = pushedRequestRecord(now)
        await store.pushedRequests.put(plain)
        expect(await store.pushedRequests.take(plain.id, now)).toEqual(plain)
      })

      test('#21 take of an unknown id is undefined', async () => {
        expect(await store.pushedRequests.take(uniqueId('par'), now)).toBeUndefined()
      })

      test('#21 an expired pushed request is undefined, whether the clock or the now argument passed its expiry', async () => {
        const live = pushedRequestRecord(now, { expiresAt: now + 60 })
        const byArgument = pushedRequestRecord(now, { expiresAt: now + 60 })
        const byClock = pushedRequestRecord(now, { expiresAt: now + 60 })
        for (const record of [live, byArgument, byClock]) await store.pushedRequests.put(record)
        expect(await store.pushedRequests.take(live.id, now + 59)).toEqual(live)
        expect(await store.pushedRequests.take(byArgument.id, now + 60)).toBeUndefined()
        advance(60)
        expect(await store.pushedRequests.take(byClock.id, now)).toBeUndefined()
        expect(await store.pushedRequests.take(byArgument.id, now)).toBeUndefined()
      })

      test('#21 take is atomic: of 20 concurrent takes exactly one gets the record', async () => {
        const record = pushedRequestRecord(now)
        await store.pushedRequests.put(record)
        const results = await Promise.all(Array.from({ length: 20 }, () => store.pushedRequests.take(record.id, now)))
        expect(results.filter((r) => r !== undefined)).toEqual([record])
      })

      test("#27 item 9: take with a clientId takes only that client's request; another client's stays for its owner", async () => {
        const record = pushedRequestRecord(now, { clientId: 'owner' })
        await store.pushedRequests.put(record)
        const foreign = await Promise.all(
          Array.from({ length: 10 }, () => store.pushedRequests.take(record.id, now, 'someone-else')),
        )
        expect(foreign.filter((r) => r !== undefined)).toEqual([])
        const results = await Promise.all(
          Array.from({ length: 10 }, () => store.pushedRequests.take(record.id, now, 'owner')),
        )
        expect(results.filter((r) => r !== undefined)).toEqual([record])
        expect(await store.pushedRequests.take(record.id, now)).toBeUndefined()
        const expired = pushedRequestRecord(now, { clientId: 'owner', expiresAt: now + 60 })
        await store.pushedRequests.put(expired)
        expect(await store.pushedRequests.take(expired.id, now + 60, 'owner')).toBeUndefined()
      })

      test('#21 taking one pushed request leaves the others', async () => {
        const records = Array.from({ length: 5 }, () => pushedRequestRecord(now))
        await Promise.all(records.map((record) => store.pushedRequests.put(record)))
        const [first, ...rest] = records as [PushedRequestRecord, ...PushedRequestRecord[]]
        expect(await store.pushedRequests.take(first.id, now)).toEqual(first)
        expect(await Promise.all(rest.map((record) => store.pushedRequests.take(record.id, now)))).toEqual(rest)
      })
    })

    describe('device codes', () => {
      const login = { sub: 'user-1', authTime: 1_700_000_000, acr: 'urn:gatehouse:acr:pwd', amr: ['pwd'] }

      test('#29 deviceCodes insert, get and findByUserCode return the record; unknown ids and codes are undefined', async () => {
        const record = deviceCodeRecord(now)
        expect(await store.deviceCodes.insert(record, now)).toBe(true)
        expect(await store.deviceCodes.get(record.id)).toEqual(record)
        expect(await store.deviceCodes.findByUserCode(record.userCode, now)).toEqual(record)
        expect(await store.deviceCodes.get(uniqueId('device'))).toBeUndefined()
        expect(await store.deviceCodes.findByUserCode(generateUserCode(), now)).toBeUndefined()
        const plain = deviceCodeRecord(now, { resources: undefined })
        delete plain.resources
        expect(await store.deviceCodes.insert(plain, now)).toBe(true)
        expect(await store.deviceCodes.get(plain.id)).toEqual(plain)
      })

      test('#29 deviceCodes findByUserCode finds only an unexpired record; get keeps an expired one until its retention ends', async () => {
        const record = deviceCodeRecord(now, { expiresAt: now + 600 })
        await store.deviceCodes.insert(record, now)
        expect(await store.deviceCodes.findByUserCode(record.userCode, now + 599)).toEqual(record)
        expect(await store.deviceCodes.findByUserCode(record.userCode, now + 600)).toBeUndefined()
        advance(600)
        expect(await store.deviceCodes.findByUserCode(record.userCode, now)).toBeUndefined()
        expect(await store.deviceCodes.get(record.id)).toEqual(record)
        advance(DEVICE_CODE_RETENTION - 1)
        expect(await store.deviceCodes.get(record.id)).toEqual(record)
        advance(1)
        expect(await store.deviceCodes.get(record.id)).toBeUndefined()
      })

      test("#29 deviceCodes insert refuses a user code a live record holds (false); an expired holder's code is reused", async () => {
        const first = deviceCodeRecord(now, { expiresAt: now + 600 })
        expect(await store.deviceCodes.insert(first, now)).toBe(true)
        const second = deviceCodeRecord(now, { userCode: first.userCode })
        expect(await store.deviceCodes.insert(second, now + 599)).toBe(false)
        expect(await store.deviceCodes.get(second.id)).toBeUndefined()
        expect(await store.deviceCodes.findByUserCode(first.userCode, now)).toEqual(first)
        advance(600)
        const third = deviceCodeRecord(now, { userCode: first.userCode })
        expect(await store.deviceCodes.insert(third, now)).toBe(true)
        expect(await store.deviceCodes.findByUserCode(first.userCode, now)).toEqual(third)
        // The expired holder stays answerable to late polls.
        expect(await store.deviceCodes.get(first.id)).toEqual(first)
        expect(await store.deviceCodes.poll(first.id, now)).toEqual({ status: 'expired', record: first })
        expect(await store.deviceCodes.insert(deviceCodeRecord(now, { userCode: first.userCode }), now)).toBe(false)
      })

      test('#29 deviceCodes insert is atomic: of 20 concurrent inserts with one user code exactly one is true', async () => {
        const code = generateUserCode()
        const records = Array.from({ length: 20 }, () => deviceCodeRecord(now, { userCode: code }))
        const results = await Promise.all(records.map((record) => store.deviceCodes.insert(record, now)))
        expect(results.filter(Boolean)).toHaveLength(1)
        const winner = records[results.indexOf(true)]
        expect(await store.deviceCodes.findByUserCode(code, now)).toEqual(winner)
      })

      test('#29 deviceCodes decide only from pending: approving stores the login, a second decision is false', async () => {
        const approved = deviceCodeRecord(now)
        const denied = deviceCodeRecord(now)
        await store.deviceCodes.insert(approved, now)
        await store.deviceCodes.insert(denied, now)
        expect(await store.deviceCodes.decide(approved.id, { status: 'approved', login }, now)).toBe(true)
        expect(await store.deviceCodes.decide(approved.id, { status: 'denied' }, now)).toBe(false)
        expect(await store.deviceCodes.decide(approved.id, { status: 'approved', login }, now)).toBe(false)
        expect(await store.deviceCodes.get(approved.id)).toEqual({ ...approved, status: 'approved', login })
        expect(await store.deviceCodes.decide(denied.id, { status: 'denied' }, now)).toBe(true)
        expect(await store.deviceCodes.decide(denied.id, { status: 'approved', login }, now)).toBe(false)
        expect(await store.deviceCodes.get(denied.id)).toEqual({ ...denied, status: 'denied' })
        expect(await store.deviceCodes.findByUserCode(denied.userCode, now)).toEqual({ ...denied, status: 'denied' })
        expect(await store.deviceCodes.decide(uniqueId('device'), { status: 'denied' }, now)).toBe(false)
      })

      test('#29 deviceCodes decide on an expired record is false, whether the clock or the now argument passed its expiry', async () => {
        const byArgument = deviceCodeRecord(now, { expiresAt: now + 600 })
        const byClock = deviceCodeRecord(now, { expiresAt: now + 600 })
        await store.deviceCodes.insert(byArgument, now)
        await store.deviceCodes.insert(byClock, now)
        expect(await store.deviceCodes.decide(byArgument.id, { status: 'approved', login }, now + 600)).toBe(false)
        advance(600)
        expect(await store.deviceCodes.decide(byClock.id, { status: 'approved', login }, now)).toBe(false)
        expect(await store.deviceCodes.get(byArgument.id)).toEqual(byArgument)
        expect(await store.deviceCodes.get(byClock.id)).toEqual(byClock)
      })

      test('#29 deviceCodes decide is atomic: of 20 concurrent decisions exactly one is true, and it is the one stored', async () => {
        const record = deviceCodeRecord(now)
        await store.deviceCodes.insert(record, now)
        const decisions = Array.from({ length: 20 }, (_, i) =>
          i % 2 === 0
            ? ({ status: 'approved', login: { ...login, sub: `user-${i}` } } as const)
            : ({ status: 'denied' } as const),
        )
        const results = await Promise.all(
          decisions.map((decision) => store.deviceCodes.decide(record.id, decision, now)),
        )
        expect(results.filter(Boolean)).toHaveLength(1)
        const winner = defined(decisions[results.indexOf(true)], 'the winning decision')
        expect(await store.deviceCodes.get(record.id)).toEqual({ ...record, ...winner })
      })

      test('#29 deviceCodes poll: pending, slow_down when polled within the interval (which grows by 5), pending again after the new interval', async () => {
        const record = deviceCodeRecord(now, { interval: 5 })
        await store.deviceCodes.insert(record, now)
        const start = now
        expect(await store.deviceCodes.poll(record.id, now)).toEqual({
          status: 'pending',
          record: { ...record, polledAt: start },
        })
        advance(5)
        expect(await store.deviceCodes.poll(record.id, now)).toEqual({
          status: 'pending',
          record: { ...record, polledAt: start + 5 },
        })
        advance(4)
        expect(await store.deviceCodes.poll(record.id, now)).toEqual({
          status: 'slow_down',
          record: { ...record, interval: 10, polledAt: start + 9 },
        })
        advance(9)
        expect(await store.deviceCodes.poll(record.id, now)).toEqual({
          status: 'slow_down',
          record: { ...record, interval: 15, polledAt: start + 18 },
        })
        advance(15)
        expect(await store.deviceCodes.poll(record.id, now)).toEqual({
          status: 'pending',
          record: { ...record, interval: 15, polledAt: start + 33 },
        })
        expect(await store.deviceCodes.get(record.id)).toEqual({ ...record, interval: 15, polledAt: start + 33 })
      })

      test('#29 deviceCodes poll of a denied record is denied, every time', async () => {
        const record = deviceCodeRecord(now)
        await store.deviceCodes.insert(record, now)
        await store.deviceCodes.poll(record.id, now)
        await store.deviceCodes.decide(record.id, { status: 'denied' }, now)
        const denied = { ...record, status: 'denied', polledAt: now }
        expect(await store.deviceCodes.poll(record.id, now + 1)).toEqual({ status: 'denied', record: denied })
        expect(await store.deviceCodes.poll(record.id, now + 2)).toEqual({ status: 'denied', record: denied })
      })

      test('#29 deviceCodes poll after expiresAt is expired (the record is kept within its retention), then missing', async () => {
        const pending = deviceCodeRecord(now, { expiresAt: now + 600 })
        const approved = deviceCodeRecord(now, { expiresAt: now + 600 })
        await store.deviceCodes.insert(pending, now)
        await store.deviceCodes.insert(approved, now)
        await store.deviceCodes.decide(approved.id, { status: 'approved', login }, now)
        const decided = { ...approved, status: 'approved', login }
        expect(await store.deviceCodes.poll(pending.id, now + 600)).toEqual({ status: 'expired', record: pending })
        advance(600)
        expect(await store.deviceCodes.poll(pending.id, now)).toEqual({ status: 'expired', record: pending })
        expect(await store.deviceCodes.poll(approved.id, now)).toEqual({ status: 'expired', record: decided })
        advance(DEVICE_CODE_RETENTION - 1)
        expect(await store.deviceCodes.poll(pending.id, now)).toEqual({ status: 'expired', record: pending })
        advance(1)
        expect(await store.deviceCodes.poll(pending.id, now)).toEqual({ status: 'missing' })
        expect(await store.deviceCodes.poll(approved.id, now)).toEqual({ status: 'missing' })
      })

      test('#29 deviceCodes poll of an approved record is ok once (redeemed), then replayed; unknown ids are missing', async () => {
        const record = deviceCodeRecord(now)
        await store.deviceCodes.insert(record, now)
        await store.deviceCodes.decide(record.id, { status: 'approved', login }, now)
        const redeemed = { ...record, status: 'approved', login, consumedAt: now + 1 }
        expect(await store.deviceCodes.poll(record.id, now + 1)).toEqual({ status: 'ok', record: redeemed })
        expect(await store.deviceCodes.poll(record.id, now + 2)).toEqual({ status: 'replayed', record: redeemed })
        expect(await store.deviceCodes.get(record.id)).toEqual(redeemed)
        // Redeemed, then expired: still replayed (the family is revoked on a replay) until retention ends.
        expect(await store.deviceCodes.poll(record.id, record.expiresAt + 1)).toEqual({
          status: 'replayed',
          record: redeemed,
        })
        expect(await store.deviceCodes.poll(uniqueId('device'), now)).toEqual({ status: 'missing' })
      })

      test('#29 deviceCodes poll is atomic: of 20 concurrent polls of an approved record exactly one is ok', async () => {
        const record = deviceCodeRecord(now)
        await store.deviceCodes.insert(record, now)
        await store.deviceCodes.decide(record.id, { status: 'approved', login }, now)
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.deviceCodes.poll(record.id, now + i)),
        )
        expect(statuses(results)).toEqual({ ok: 1, replayed: 19, missing: 0 })
        const winner = results.findIndex((r) => r.status === 'ok')
        const redeemed = { ...record, status: 'approved', login, consumedAt: now + winner }
        for (const result of results) expect(result).toEqual({ status: result.status, record: redeemed })
      })
    })

    describeCibaContract({ store: () => store, now: clock, advance, test })

    describe('replays', () => {
      test('#21 use records a new key (true); using it again is a replay (false) until it expires, then true again', async () => {
        const key = `dpop:${uniqueId('jti')}`
        expect(await store.replays.use(key, now + 60, now)).toBe(true)
        expect(await store.replays.use(key, now + 60, now)).toBe(false)
        advance(59)
        expect(await store.replays.use(key, now + 60, now)).toBe(false)
        advance(1)
        expect(await store.replays.use(key, now + 60, now)).toBe(true)
        expect(await store.replays.use(key, now + 60, now)).toBe(false)
      })

      test('#21 the now argument decides expiry of use too', async () => {
        const key = `jwt:${uniqueId('jti')}`
        expect(await store.replays.use(key, now + 60, now)).toBe(true)
        expect(await store.replays.use(key, now + 120, now + 59)).toBe(false)
        expect(await store.replays.use(key, now + 120, now + 60)).toBe(true)
        expect(await store.replays.use(key, now + 120, now + 119)).toBe(false)
      })

      test('#21 a replay does not extend the record', async () => {
        const key = `dpop:${uniqueId('jti')}`
        expect(await store.replays.use(key, now + 60, now)).toBe(true)
        expect(await store.replays.use(key, now + 3600, now + 1)).toBe(false)
        advance(60)
        expect(await store.replays.use(key, now + 60, now)).toBe(true)
      })

      test('#21 use is atomic: of 20 concurrent uses of one key exactly one is true', async () => {
        const key = `dpop:${uniqueId('jti')}`
        const results = await Promise.all(Array.from({ length: 20 }, () => store.replays.use(key, now + 60, now)))
        expect(results.filter(Boolean)).toHaveLength(1)
      })

      test('#21 of 20 concurrent uses of a key whose record expired exactly one is true', async () => {
        const key = `jwt:${uniqueId('jti')}`
        expect(await store.replays.use(key, now + 60, now)).toBe(true)
        advance(60)
        const results = await Promise.all(Array.from({ length: 20 }, () => store.replays.use(key, now + 60, now)))
        expect(results.filter(Boolean)).toHaveLength(1)
      })

      test('#21 different keys are independent, also when used at once', async () => {
        const id = uniqueId('jti')
        const keys = [`dpop:${id}`, `jwt:${id}`, ...Array.from({ length: 18 }, () => `dpop:${uniqueId('jti')}`)]
        expect(await Promise.all(keys.map((key) => store.replays.use(key, now + 60, now)))).toEqual(
          keys.map(() => true),
        )
        expect(await Promise.all(keys.map((key) => store.replays.use(key, now + 60, now)))).toEqual(
          keys.map(() => false),
        )
      })
    })

    describe('keys', () => {
      test('put then list returns the records, private JWK intact', async () => {
        const a = keyRecord(now)
        const b = keyRecord(now, { alg: 'RS256', retiresAt: now + 100, expiresAt: now + 200 })
        await store.keys.put(a)
        await store.keys.put(b)
        const listed = await store.keys.list()
        expect(listed).toHaveLength(2)
        expect(listed).toEqual(expect.arrayContaining([a, b]))
      })

      test('put of an existing kid replaces it (retirement)', async () => {
        const record = keyRecord(now)
        await store.keys.put(record)
        const retired = { ...record, retiresAt: now + 10, expiresAt: now + 3600 }
        await store.keys.put(retired)
        expect(await store.keys.list()).toEqual([retired])
      })

      test('an empty store lists no keys', async () => {
        expect(await store.keys.list()).toEqual([])
      })
    })
  })
}
