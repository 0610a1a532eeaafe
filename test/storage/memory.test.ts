import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../src/storage/memory.ts'
import { codeRecord, describeStorageContract, sessionRecord } from './contract.ts'

describeStorageContract({ name: 'memory', create: ({ now }) => createMemoryStore({ now }) })

describe('memory store specifics', () => {
  it('sweep drops expired entries and keeps live ones', async () => {
    let now = 1_800_000_000
    const store = createMemoryStore({ now: () => now })
    const live = sessionRecord(now, { expiresAt: now + 1000 })
    const dying = sessionRecord(now, { expiresAt: now + 10 })
    await store.sessions.put(live)
    await store.sessions.put(dying)
    now += 10
    store.sweep()
    expect(await store.sessions.get(live.id)).toEqual(live)
    expect(await store.sessions.get(dying.id)).toBeUndefined()
  })

  it('sweeping every few writes never drops a live code or its tombstone', async () => {
    let now = 1_800_000_000
    const store = createMemoryStore({ now: () => now, sweepEvery: 2 })
    const code = codeRecord(now, { expiresAt: now + 100 })
    await store.codes.insert(code)
    expect((await store.codes.consume(code.id, now)).status).toBe('ok')
    for (let i = 0; i < 10; i++) {
      now += 1
      await store.codes.insert(codeRecord(now, { expiresAt: now + 1 }))
    }
    expect((await store.codes.consume(code.id, now)).status).toBe('replayed')
  })

  it('defaults to the wall clock', async () => {
    const store = createMemoryStore()
    const now = Math.floor(Date.now() / 1000)
    const session = sessionRecord(now, { expiresAt: now + 60 })
    await store.sessions.put(session)
    expect(await store.sessions.get(session.id)).toEqual(session)
    const old = sessionRecord(now, { expiresAt: now - 1 })
    await store.sessions.put(old)
    expect(await store.sessions.get(old.id)).toBeUndefined()
  })
})
