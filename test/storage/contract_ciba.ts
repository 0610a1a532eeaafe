/**
 * The CIBA part of the storage contract (`Store.cibaRequests`, #41): registered by
 * describeStorageContract (contract.ts), which owns the store and the clock.
 */
import { describe, expect } from 'vitest'
import { CIBA_REQUEST_RETENTION, type CibaRequestRecord, type Store } from '../../src/storage/types.ts'

let sequence = 0
function unique(prefix: string): string {
  sequence += 1
  return `${prefix}-${Date.now().toString(36)}-${sequence}-${Math.random().toString(36).slice(2, 8)}`
}

export function cibaRequestRecord(now: number, overrides: Partial<CibaRequestRecord> = {}): CibaRequestRecord {
  return {
    id: unique('ciba'),
    approvalId: unique('approval'),
    familyId: unique('family'),
    clientId: 'agent',
    sub: 'user-1',
    scope: 'openid profile offline_access',
    bindingMessage: 'Pay invoice 42',
    acrValues: ['urn:gatehouse:acr:pwd'],
    resources: ['https://api.example.test/'],
    deliveryMode: 'ping',
    clientNotificationToken: 'notify-token',
    interval: 5,
    status: 'pending',
    issuedAt: now,
    expiresAt: now + 300,
    ...overrides,
  }
}

/** The environment the cases run in: the contract's store and clock. */
export interface CibaContractEnv {
  store(): Store
  now(): number
  advance(seconds: number): void
  test(name: string, fn: () => Promise<void>): void
}

export function describeCibaContract({ store: s, now: n, advance, test }: CibaContractEnv): void {
  describe('ciba requests', () => {
    const login = { sub: 'user-1', authTime: 1_700_000_000, acr: 'urn:gatehouse:acr:pwd', amr: ['pwd'] }

    test('#41 cibaRequests insert, get and findByApproval return the record; unknown ids are undefined', async () => {
      const store = s()
      const record = cibaRequestRecord(n())
      await store.cibaRequests.insert(record)
      expect(await store.cibaRequests.get(record.id)).toEqual(record)
      expect(await store.cibaRequests.findByApproval(record.approvalId, n())).toEqual(record)
      expect(await store.cibaRequests.get(record.approvalId)).toBeUndefined()
      expect(await store.cibaRequests.findByApproval(record.id, n())).toBeUndefined()
      expect(await store.cibaRequests.get(unique('ciba'))).toBeUndefined()
      const plain = cibaRequestRecord(n(), { deliveryMode: 'poll' })
      for (const key of ['bindingMessage', 'acrValues', 'resources', 'clientNotificationToken'] as const)
        delete plain[key]
      await store.cibaRequests.insert(plain)
      expect(await store.cibaRequests.get(plain.id)).toEqual(plain)
    })

    test('#41 cibaRequests findByApproval finds only an unexpired record; get keeps an expired one until its retention ends', async () => {
      const store = s()
      const record = cibaRequestRecord(n(), { expiresAt: n() + 300 })
      await store.cibaRequests.insert(record)
      expect(await store.cibaRequests.findByApproval(record.approvalId, n() + 299)).toEqual(record)
      expect(await store.cibaRequests.findByApproval(record.approvalId, n() + 300)).toBeUndefined()
      advance(300)
      expect(await store.cibaRequests.findByApproval(record.approvalId, n())).toBeUndefined()
      expect(await store.cibaRequests.get(record.id)).toEqual(record)
      advance(CIBA_REQUEST_RETENTION - 1)
      expect(await store.cibaRequests.get(record.id)).toEqual(record)
      advance(1)
      expect(await store.cibaRequests.get(record.id)).toBeUndefined()
    })

    test('#41 cibaRequests decide only from pending and unexpired: approving stores the login, a second decision is false', async () => {
      const store = s()
      const approved = cibaRequestRecord(n())
      const denied = cibaRequestRecord(n())
      const late = cibaRequestRecord(n(), { expiresAt: n() + 300 })
      for (const record of [approved, denied, late]) await store.cibaRequests.insert(record)
      expect(await store.cibaRequests.decide(approved.id, { status: 'approved', login }, n())).toBe(true)
      expect(await store.cibaRequests.decide(approved.id, { status: 'denied' }, n())).toBe(false)
      expect(await store.cibaRequests.get(approved.id)).toEqual({ ...approved, status: 'approved', login })
      expect(await store.cibaRequests.decide(denied.id, { status: 'denied' }, n())).toBe(true)
      expect(await store.cibaRequests.decide(denied.id, { status: 'approved', login }, n())).toBe(false)
      expect(await store.cibaRequests.findByApproval(denied.approvalId, n())).toEqual({ ...denied, status: 'denied' })
      expect(await store.cibaRequests.decide(late.id, { status: 'approved', login }, n() + 300)).toBe(false)
      expect(await store.cibaRequests.get(late.id)).toEqual(late)
      expect(await store.cibaRequests.decide(unique('ciba'), { status: 'denied' }, n())).toBe(false)
    })

    test('#41 cibaRequests decide is atomic: of 20 concurrent decisions exactly one is true, and it is the one stored', async () => {
      const store = s()
      const record = cibaRequestRecord(n())
      await store.cibaRequests.insert(record)
      const decisions = Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? ({ status: 'approved', login: { ...login, sub: `user-${i}` } } as const)
          : ({ status: 'denied' } as const),
      )
      const results = await Promise.all(
        decisions.map((decision) => store.cibaRequests.decide(record.id, decision, n())),
      )
      expect(results.filter(Boolean)).toHaveLength(1)
      const winner = decisions[results.indexOf(true)]
      expect(await store.cibaRequests.get(record.id)).toEqual({ ...record, ...winner })
    })

    test('#41 cibaRequests poll: pending, slow_down within the interval (which grows by 5), pending after the new interval', async () => {
      const store = s()
      const record = cibaRequestRecord(n(), { interval: 5 })
      await store.cibaRequests.insert(record)
      const start = n()
      expect(await store.cibaRequests.poll(record.id, n())).toEqual({
        status: 'pending',
        record: { ...record, polledAt: start },
      })
      advance(4)
      expect(await store.cibaRequests.poll(record.id, n())).toEqual({
        status: 'slow_down',
        record: { ...record, interval: 10, polledAt: start + 4 },
      })
      advance(10)
      expect(await store.cibaRequests.poll(record.id, n())).toEqual({
        status: 'pending',
        record: { ...record, interval: 10, polledAt: start + 14 },
      })
    })

    test('#41 cibaRequests poll: denied every time; expired after expiresAt, then missing after the retention', async () => {
      const store = s()
      const denied = cibaRequestRecord(n())
      const pending = cibaRequestRecord(n(), { expiresAt: n() + 300 })
      await store.cibaRequests.insert(denied)
      await store.cibaRequests.insert(pending)
      await store.cibaRequests.decide(denied.id, { status: 'denied' }, n())
      const deniedNow = { ...denied, status: 'denied' }
      expect(await store.cibaRequests.poll(denied.id, n())).toEqual({ status: 'denied', record: deniedNow })
      expect(await store.cibaRequests.poll(denied.id, n() + 1)).toEqual({ status: 'denied', record: deniedNow })
      advance(300)
      expect(await store.cibaRequests.poll(pending.id, n())).toEqual({ status: 'expired', record: pending })
      advance(CIBA_REQUEST_RETENTION)
      expect(await store.cibaRequests.poll(pending.id, n())).toEqual({ status: 'missing' })
      expect(await store.cibaRequests.poll(unique('ciba'), n())).toEqual({ status: 'missing' })
    })

    test('#41 cibaRequests poll of an approved record is ok once (redeemed), then replayed', async () => {
      const store = s()
      const record = cibaRequestRecord(n())
      await store.cibaRequests.insert(record)
      await store.cibaRequests.decide(record.id, { status: 'approved', login }, n())
      const redeemed = { ...record, status: 'approved', login, consumedAt: n() + 1 }
      expect(await store.cibaRequests.poll(record.id, n() + 1)).toEqual({ status: 'ok', record: redeemed })
      expect(await store.cibaRequests.poll(record.id, n() + 2)).toEqual({ status: 'replayed', record: redeemed })
      expect(await store.cibaRequests.get(record.id)).toEqual(redeemed)
    })

    test('#41 cibaRequests poll is atomic: of 20 concurrent polls of an approved auth_req_id exactly one is ok', async () => {
      const store = s()
      const record = cibaRequestRecord(n())
      await store.cibaRequests.insert(record)
      await store.cibaRequests.decide(record.id, { status: 'approved', login }, n())
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.cibaRequests.poll(record.id, n() + i)),
      )
      expect(results.filter((r) => r.status === 'ok')).toHaveLength(1)
      expect(results.filter((r) => r.status === 'replayed')).toHaveLength(19)
      const winner = results.findIndex((r) => r.status === 'ok')
      const redeemed = { ...record, status: 'approved', login, consumedAt: n() + winner }
      for (const result of results) expect(result).toEqual({ status: result.status, record: redeemed })
    })
  })
}
