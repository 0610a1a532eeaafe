import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/storage/memory.ts'

const NOW = 1_800_000_000

describe('memory store copies (records are never shared with callers)', () => {
  it('a returned record, its arrays and nested objects can be changed without touching the store', async () => {
    const store = createMemoryStore({ now: () => NOW })
    await store.interactions.put({
      id: 'i-1',
      browserId: 'b',
      csrf: 'c',
      kind: 'authorization',
      request: { clientId: 'web', scope: 'openid', nested: { list: ['a', 'b'] } },
      expiresAt: NOW + 60,
    } as never)
    const first = (await store.interactions.get('i-1')) as unknown as { request: Record<string, unknown> }
    ;(first.request.nested as { list: string[] }).list.push('c')
    first.request.clientId = 'changed'
    const second = (await store.interactions.get('i-1')) as unknown as { request: Record<string, unknown> }
    expect(second.request).toEqual({ clientId: 'web', scope: 'openid', nested: { list: ['a', 'b'] } })
  })

  it('an own __proto__ key stays a key and does not become the prototype', async () => {
    const store = createMemoryStore({ now: () => NOW })
    const request = JSON.parse('{"clientId":"web","__proto__":{"polluted":true}}') as Record<string, unknown>
    await store.interactions.put({
      id: 'i-2',
      browserId: 'b',
      csrf: 'c',
      kind: 'authorization',
      request,
      expiresAt: NOW + 60,
    } as never)
    const got = (await store.interactions.get('i-2')) as unknown as { request: Record<string, unknown> }
    expect(Object.getPrototypeOf(got.request)).toBe(Object.prototype)
    expect(Object.keys(got.request)).toEqual(['clientId', '__proto__'])
    expect((got.request as { polluted?: boolean }).polluted).toBeUndefined()
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined()
  })
})
