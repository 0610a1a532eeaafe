/**
 * The client registry's cache answers a hit synchronously (no promise, so the token endpoint does
 * not wait a microtask turn per request for it), and a miss or an expired entry through the store.
 */
import { describe, expect, it } from 'vitest'
import { createClientRegistry } from '../../../src/clients/registry.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'

describe('clients.get', () => {
  it('a cached client, and a cached unknown id, answer synchronously until cacheTtl passes', async () => {
    let now = 1_800_000_000
    const store = createMemoryStore({ now: () => now })
    const clients = createClientRegistry({ store, now: () => now, iterations: 1000, cacheTtl: 5 })
    await clients.ensure({ clientId: 'job', clientSecret: 'job-secret', permissions: ['ept:token'] })
    const miss = clients.get('job')
    expect(miss).toBeInstanceOf(Promise)
    const record = await miss
    expect(record?.clientId).toBe('job')
    expect(clients.get('job')).toBe(record)
    expect(await clients.get('nobody')).toBeUndefined()
    expect(clients.get('nobody')).toBeUndefined()
    now += 5
    expect(clients.get('job')).toBeInstanceOf(Promise)
    expect((await clients.get('job'))?.clientId).toBe('job')
  })

  it('a change through the registry is seen at once (the cached entry is dropped)', async () => {
    const now = 1_800_000_000
    const store = createMemoryStore({ now: () => now })
    const clients = createClientRegistry({ store, now: () => now, iterations: 1000, cacheTtl: 60 })
    await clients.ensure({ clientId: 'job', clientSecret: 'job-secret', permissions: ['ept:token'] })
    await clients.get('job')
    await clients.update('job', { permissions: ['ept:token', 'ept:introspection'] })
    expect((await clients.get('job'))?.permissions).toContain('ept:introspection')
  })
})
