/**
 * The grant part of the storage contract added by #42 item 1 (`Store.grants.touch`, the last use,
 * and the index by `sub`): registered by describeStorageContract (contract.ts), which owns the
 * store and the clock. The #39 cases of `Store.grants` stay in contract.ts.
 */
import { describe, expect } from 'vitest'
import type { GrantRecord, Store } from '../../src/storage/types.ts'

let sequence = 0
function unique(prefix: string): string {
  sequence += 1
  return `${prefix}-${Date.now().toString(36)}-${sequence}-${Math.random().toString(36).slice(2, 8)}`
}

/**
 * A grant whose JSON a careless store would change: empty arrays (Lua's cjson encodes them as
 * objects), a number with more than 14 significant digits, a non-ASCII string.
 */
function grant(now: number, overrides: Partial<GrantRecord> = {}): GrantRecord {
  return {
    id: unique('family'),
    clientId: 'agent',
    sub: unique('sub'),
    scope: 'openid profile offline_access',
    resources: ['https://api.example.test/'],
    claims: { userinfo: [], id_token: ['name'] },
    authorizationDetails: [
      { type: 'payment_initiation', actions: [], amount: 1234.5678901234567, reference: 'Zahlung für 42/7' },
    ],
    sid: 'sid-1',
    sessionId: 'session-hash',
    kind: 'authorization_code',
    authTime: now - 10,
    createdAt: now,
    expiresAt: now + 86_400,
    ...overrides,
  }
}

/** The environment the cases run in: the contract's store and clock. */
export interface GrantsContractEnv {
  store(): Store
  now(): number
  advance(seconds: number): void
  test(name: string, fn: () => Promise<void>): void
}

/** The store's `grants.touch`: every built-in store has it. */
function touchOf(store: Store): (id: string, at: number) => Promise<void> {
  const touch = store.grants.touch
  if (!touch) throw new Error('expected the store to implement grants.touch')
  return (id, at) => touch.call(store.grants, id, at)
}

export function describeGrantsContract({ store: s, now: n, advance, test }: GrantsContractEnv): void {
  describe('grants: last use, index by sub (#42 item 1)', () => {
    test('#42 item 1: touch sets lastUsedAt and leaves the rest of the record as it was; get and listBySub show it', async () => {
      const store = s()
      const touch = touchOf(store)
      const record = grant(n())
      await store.grants.put(record)
      await touch(record.id, n() + 60)
      expect(await store.grants.get(record.id, n())).toEqual({ ...record, lastUsedAt: n() + 60 })
      expect(await store.grants.listBySub(record.sub, n())).toEqual([{ ...record, lastUsedAt: n() + 60 }])
      await touch(record.id, n() + 120)
      expect(await store.grants.get(record.id, n())).toEqual({ ...record, lastUsedAt: n() + 120 })
    })

    test('#42 item 1: touch with an older or the same time leaves lastUsedAt as it is', async () => {
      const store = s()
      const touch = touchOf(store)
      const record = grant(n())
      await store.grants.put(record)
      await touch(record.id, n() + 600)
      await touch(record.id, n() + 60)
      await touch(record.id, n() + 600)
      expect(await store.grants.get(record.id, n())).toEqual({ ...record, lastUsedAt: n() + 600 })
      const carried = grant(n(), { lastUsedAt: n() + 300 })
      await store.grants.put(carried)
      await touch(carried.id, n() + 200)
      expect(await store.grants.get(carried.id, n())).toEqual(carried)
    })

    test('#42 item 1: touch of a deleted or unknown id recreates nothing: get and listBySub stay empty', async () => {
      const store = s()
      const touch = touchOf(store)
      const record = grant(n())
      await store.grants.put(record)
      await store.grants.delete(record.id)
      await touch(record.id, n() + 60)
      expect(await store.grants.get(record.id, n())).toBeUndefined()
      expect(await store.grants.listBySub(record.sub, n())).toEqual([])
      const unknown = unique('family')
      await touch(unknown, n() + 60)
      expect(await store.grants.get(unknown, n())).toBeUndefined()
      // A delete racing touches: the grant is gone afterwards, whichever ran first.
      const sub = unique('sub')
      const racing = Array.from({ length: 10 }, () => grant(n(), { sub }))
      await Promise.all(racing.map((one) => store.grants.put(one)))
      await Promise.all(
        racing.flatMap((one, i) => [
          touch(one.id, n() + i + 1),
          store.grants.delete(one.id),
          touch(one.id, n() + i + 2),
        ]),
      )
      expect(await store.grants.listBySub(sub, n())).toEqual([])
      for (const one of racing) expect(await store.grants.get(one.id, n())).toBeUndefined()
    })

    test('#42 item 1: touch of an expired grant leaves it missing and unchanged', async () => {
      const store = s()
      const touch = touchOf(store)
      const record = grant(n(), { expiresAt: n() + 100 })
      await store.grants.put(record)
      await touch(record.id, n() + 100)
      expect(await store.grants.get(record.id, n() + 100)).toBeUndefined()
      expect(await store.grants.get(record.id, n())).toEqual(record)
      advance(100)
      await touch(record.id, n())
      expect(await store.grants.get(record.id, n())).toBeUndefined()
      expect(await store.grants.listBySub(record.sub, n())).toEqual([])
    })

    test("#42 item 1: a put after a touch keeps the put's fields and the later last use (a put does not undo a touch)", async () => {
      const store = s()
      const touch = touchOf(store)
      const record = grant(n())
      await store.grants.put(record)
      await touch(record.id, n() + 60)
      const merged = { ...record, scope: 'openid profile offline_access email', resources: [] }
      await store.grants.put(merged)
      expect(await store.grants.get(record.id, n())).toEqual({ ...merged, lastUsedAt: n() + 60 })
      await store.grants.put({ ...merged, lastUsedAt: n() + 30 })
      expect(await store.grants.get(record.id, n())).toEqual({ ...merged, lastUsedAt: n() + 60 })
      await store.grants.put({ ...merged, lastUsedAt: n() + 90 })
      await touch(record.id, n() + 80)
      expect(await store.grants.get(record.id, n())).toEqual({ ...merged, lastUsedAt: n() + 90 })
      expect(await store.grants.listBySub(record.sub, n())).toEqual([{ ...merged, lastUsedAt: n() + 90 }])
    })

    test("#42 item 1: concurrent touches and puts never lose a put's fields (touch is no read-modify-write of the record)", async () => {
      const store = s()
      const touch = touchOf(store)
      const sub = unique('sub')
      const grants = Array.from({ length: 8 }, () => grant(n(), { sub }))
      await Promise.all(grants.map((one) => store.grants.put(one)))
      for (let round = 1; round <= 8; round++) {
        const scope = `openid round-${round}`
        // Half the touches start before the put, half after it.
        await Promise.all(
          grants.flatMap((one, i) => {
            const calls = [() => touch(one.id, n() + round), () => store.grants.put({ ...one, scope })]
            return (i % 2 === 0 ? calls : calls.reverse()).map((call) => call())
          }),
        )
        for (const one of grants)
          expect(await store.grants.get(one.id, n())).toEqual({ ...one, scope, lastUsedAt: n() + round })
      }
      const listed = await store.grants.listBySub(sub, n())
      expect(listed.map((one) => one.scope)).toEqual(grants.map(() => 'openid round-8'))
    })

    test("#42 item 1: listBySub lists only that end-user's grants, with their last use, and drops deleted ones", async () => {
      const store = s()
      const touch = touchOf(store)
      const sub = unique('sub')
      const [a, b, c] = [grant(n(), { sub }), grant(n(), { sub }), grant(n(), { sub })]
      const other = grant(n())
      for (const one of [a, b, c, other]) await store.grants.put(one)
      await touch(a.id, n() + 5)
      await touch(other.id, n() + 5)
      await store.grants.delete(b.id)
      const byId = (list: GrantRecord[]) => [...list].sort((x, y) => x.id.localeCompare(y.id))
      expect(byId(await store.grants.listBySub(sub, n()))).toEqual(byId([{ ...a, lastUsedAt: n() + 5 }, c]))
      expect(await store.grants.listBySub(other.sub, n())).toEqual([{ ...other, lastUsedAt: n() + 5 }])
      await store.grants.delete(a.id)
      await store.grants.delete(c.id)
      expect(await store.grants.listBySub(sub, n())).toEqual([])
    })
  })
}
