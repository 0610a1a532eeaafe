/**
 * The caps of dynamic client registration (RFC 7591): `maxPerAddressPerHour` per source address,
 * only when the host passes one, and `maxPerHour` over every registration (#27 item 7); each counted
 * atomically in the store, so a parallel burst across two instances never gets past a cap (#27
 * item 8), on every store.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { TokenServiceOptions } from '../../../src/index.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { ISSUER, clock, makeService } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const DCR = { scopes: ['mcp:tools', 'openid', 'offline_access'] }
const MCP_CLIENT = {
  redirect_uris: ['https://rp.example.test/mcp-callback'],
  client_name: 'Agent',
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
}

type Fetch = (request: Request, info?: { address?: string }) => Promise<Response>

/** One registration request; `address` undefined is a host that passes no source address. */
function register(fetch: Fetch, address: string | undefined): Promise<Response> {
  const request = new Request(`${ISSUER}/connect/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(MCP_CLIENT),
  })
  return address === undefined ? fetch(request) : fetch(request, { address })
}

async function statuses(responses: Promise<Response>[]): Promise<number[]> {
  return (await Promise.all(responses)).map((response) => response.status).sort()
}

async function dcrService(options: Partial<TokenServiceOptions> = {}) {
  return makeService({ scopes: ['mcp:tools'], dynamicClientRegistration: DCR, ...options })
}

describe('#27 item 7 registration caps without a source address', () => {
  it('#27 item 7 a host passing no address is not one 20-an-hour bucket for the whole world', async () => {
    const { service } = await dcrService()
    for (let i = 0; i < 25; i++) expect((await register(service.fetch, undefined)).status).toBe(201)
  })

  it('#27 item 7 maxPerHour caps every registration, with or without an address (429 + Retry-After), until the hour ends', async () => {
    const { service, clock } = await dcrService({ dynamicClientRegistration: { ...DCR, maxPerHour: 3 } })
    expect((await register(service.fetch, undefined)).status).toBe(201)
    expect((await register(service.fetch, '203.0.113.7')).status).toBe(201)
    expect((await register(service.fetch, '198.51.100.1')).status).toBe(201)
    for (const address of [undefined, '192.0.2.9']) {
      const refused = await register(service.fetch, address)
      expect(refused.status).toBe(429)
      expect(await refused.json()).toEqual({
        error: 'invalid_request',
        error_description: 'too many registrations; retry later',
      })
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    }
    clock.advance(3601)
    expect((await register(service.fetch, undefined)).status).toBe(201)
  })

  it('#27 item 7 an address beyond its own cap uses up nothing of maxPerHour', async () => {
    const { service } = await dcrService({
      dynamicClientRegistration: { ...DCR, maxPerAddressPerHour: 2, maxPerHour: 4 },
    })
    for (let i = 0; i < 2; i++) expect((await register(service.fetch, '203.0.113.7')).status).toBe(201)
    for (let i = 0; i < 5; i++) expect((await register(service.fetch, '203.0.113.7')).status).toBe(429)
    expect((await register(service.fetch, '198.51.100.1')).status).toBe(201)
    expect((await register(service.fetch, undefined)).status).toBe(201)
    expect((await register(service.fetch, '192.0.2.9')).status).toBe(429)
  })
})

describe('#27 item 8 a store of your own without attempts.take', () => {
  it('#27 item 8 the caps count with hit and compare: 20 parallel registrations against a cap of 5 give exactly 5', async () => {
    const store = createMemoryStore()
    // a store written before `take` existed
    delete store.attempts.take
    const { service } = await dcrService({ store, dynamicClientRegistration: { ...DCR, maxPerAddressPerHour: 5 } })
    const burst = Array.from({ length: 20 }, () => register(service.fetch, '203.0.113.7'))
    expect(await statuses(burst)).toEqual([...Array(5).fill(201), ...Array(15).fill(429)])
  })
})

describe.each(STORES)('#27 item 8 a burst of registrations on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  /** Two service instances sharing one fresh store. */
  async function twoInstances(dynamicClientRegistration: TokenServiceOptions['dynamicClientRegistration']) {
    const time = clock()
    opened = await kind.create(time.now)
    const options = { store: opened.store, now: time.now, dynamicClientRegistration }
    const services = [(await dcrService(options)).service, (await dcrService(options)).service] as const
    return services
  }

  it('#27 item 8 40 parallel registrations from one address across two instances, cap 20: exactly 20 × 201', async () => {
    const [a, b] = await twoInstances({ ...DCR, maxPerAddressPerHour: 20 })
    const burst = Array.from({ length: 40 }, (_, i) => register((i % 2 === 0 ? a : b).fetch, '203.0.113.7'))
    expect(await statuses(burst)).toEqual([...Array(20).fill(201), ...Array(20).fill(429)])
    const stored = (await opened?.store.clients.list()) ?? []
    expect(stored.filter((client) => client.registration?.kind === 'dynamic')).toHaveLength(20)
  })

  it('#27 item 8 40 parallel registrations without an address across two instances, maxPerHour 20: exactly 20 × 201', async () => {
    const [a, b] = await twoInstances({ ...DCR, maxPerHour: 20 })
    const burst = Array.from({ length: 40 }, (_, i) => register((i % 2 === 0 ? a : b).fetch, undefined))
    expect(await statuses(burst)).toEqual([...Array(20).fill(201), ...Array(20).fill(429)])
  })
})
