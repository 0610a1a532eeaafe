import { describe, expect, it } from 'vitest'
import { bindRequest, metaOf } from '../../../src/security/request_meta.ts'

const URL_ = 'https://auth.example.test/connect/token'

describe('request facts (address, request id)', () => {
  it('carries the bound address and reads X-Request-Id on first use', () => {
    const request = new Request(URL_, { headers: { 'x-request-id': 'abc-123' } })
    bindRequest(request, '192.0.2.7')
    const meta = metaOf(request)
    expect(meta.address).toBe('192.0.2.7')
    expect(meta.requestId()).toBe('abc-123')
    expect(metaOf(request)).toBe(meta)
  })

  it('makes a UUID when X-Request-Id is missing or unsafe, and keeps it', () => {
    const request = new Request(URL_, { headers: { 'x-request-id': 'bad id\n' } })
    const meta = metaOf(request)
    expect(meta.address).toBeUndefined()
    const id = meta.requestId()
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(meta.requestId()).toBe(id)
  })

  it('adds nothing a caller can see: no enumerable or string-keyed property on the Request', () => {
    const request = new Request(URL_)
    bindRequest(request, '192.0.2.7')
    expect(Object.keys(request)).toEqual([])
    expect(Object.getOwnPropertyNames(request)).not.toContain('meta')
  })

  it('works for frozen requests too (a WeakMap holds their facts)', () => {
    const request = Object.freeze(new Request(URL_, { headers: { 'x-request-id': 'frozen-1' } }))
    bindRequest(request, '2001:db8::1')
    expect(metaOf(request).address).toBe('2001:db8::1')
    expect(metaOf(request).requestId()).toBe('frozen-1')
    const unbound = Object.freeze(new Request(URL_))
    expect(metaOf(unbound)).toBe(metaOf(unbound))
  })
})
