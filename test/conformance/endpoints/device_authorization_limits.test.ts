/**
 * #39 item 7 the limits of the device authorization endpoint (RFC 8628 §5.2), through oauth4webapi
 * over the service's fetch with the source address an adapter passes: device authorizations per
 * address (IPv4, IPv6 /64) and per client per window (`throttle.deviceAuthorization`), answered
 * 429 `invalid_request` with Retry-After (as the registration caps answer); the per-client limit
 * caps the client's pending authorizations (the new request refused, the pending ones untouched);
 * each counted atomically in the store, so a burst across two instances never gets past it.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import type { GatehouseEvent, TokenServiceOptions } from '../../../src/index.ts'
import { sha256 } from '../../../src/crypto/opaque.ts'
import { normalizeUserCode } from '../../../src/tokens/user_code.ts'
import { DEVICE_CLIENTS, DEVICE_SCOPES, deviceClient } from '../../helpers/device.ts'
import { clock as testClock, discover, makeService } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

type Fetch = (request: Request, info?: { address?: string }) => Promise<Response>

/** Services (one, or two on one store) with the device clients. */
async function setup(options: Partial<TokenServiceOptions> = {}, instances = 1) {
  const events: GatehouseEvent[] = []
  const services: Awaited<ReturnType<typeof makeService>>[] = []
  for (let i = 0; i < instances; i++) {
    const { service, clock } = await makeService({
      scopes: DEVICE_SCOPES,
      onEvent: (event) => void events.push(event),
      ...options,
    })
    for (const registration of Object.values(DEVICE_CLIENTS)) await service.clients.ensure(registration)
    services.push({ service, clock })
  }
  const first = services[0]
  if (!first) throw new Error('no instance')
  const as = await discover(first.service.fetch)
  /** A device authorization request of `clientId` from `address` (none: no address known), on instance `on`. */
  const start = (address: string | undefined, clientId = 'cli', on = 0): Promise<Response> => {
    const fetch = (services[on] ?? first).service.fetch as Fetch
    const opts = {
      [oauth.customFetch]: (url: string, init?: RequestInit) =>
        address === undefined ? fetch(new Request(url, init)) : fetch(new Request(url, init), { address }),
    }
    const { client, auth } = deviceClient(clientId)
    return oauth.deviceAuthorizationRequest(as, client, auth, { scope: 'openid' }, opts)
  }
  /** The response processed by oauth4webapi: the codes, or the error it answered with. */
  const outcome = async (response: Response, clientId = 'cli') => {
    try {
      return await oauth.processDeviceAuthorizationResponse(as, deviceClient(clientId).client, response)
    } catch (err) {
      if (err instanceof oauth.ResponseBodyError) return { error: err.error, status: err.status, body: err.cause }
      throw err
    }
  }
  return { service: first.service, clock: first.clock, events, start, outcome }
}

async function statuses(responses: Promise<Response>[]): Promise<number[]> {
  return (await Promise.all(responses)).map((response) => response.status).sort()
}

describe('#39 item 7 device authorization limits', () => {
  it('#39 item 7 per address (default 30 per window): the 31st is 429 invalid_request with Retry-After; other addresses go on; the window over, it may again', async () => {
    const ctx = await setup()
    for (let i = 0; i < 30; i++) expect((await ctx.start('203.0.113.7')).status).toBe(200)
    const refused = await ctx.start('203.0.113.7')
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(refused.headers.get('cache-control')).toBe('no-store')
    expect(await ctx.outcome(refused.clone())).toMatchObject({ error: 'invalid_request', status: 429 })
    expect(await refused.json()).toEqual({
      error: 'invalid_request',
      error_description: 'too many device authorizations; retry later',
    })
    expect(ctx.events.filter((event) => event.type === 'device.authorization_throttled')).toEqual([
      expect.objectContaining({ clientId: 'cli', address: '203.0.113.7' }),
    ])
    // The same /64 is one address; another one, and another client from elsewhere, go on.
    for (let i = 0; i < 30; i++) expect((await ctx.start(`2001:db8:1:2::${i + 1}`)).status).toBe(200)
    expect((await ctx.start('2001:db8:1:2::ffff')).status).toBe(429)
    expect((await ctx.start('2001:db8:1:3::1')).status).toBe(200)
    expect((await ctx.start('198.51.100.1', 'tv')).status).toBe(200)
    ctx.clock.advance(901)
    expect((await ctx.start('203.0.113.7')).status).toBe(200)
  })

  it('#39 item 7 per client: beyond throttle.deviceAuthorization.perClient, from any address or none, 429; other clients go on', async () => {
    const ctx = await setup({ throttle: { deviceAuthorization: { perClient: 5 } } })
    for (let i = 0; i < 4; i++) expect((await ctx.start(`192.0.2.${i + 1}`)).status).toBe(200)
    expect((await ctx.start(undefined)).status).toBe(200)
    for (const address of ['198.51.100.99', undefined]) {
      const refused = await ctx.start(address)
      expect(refused.status).toBe(429)
      expect(await refused.json()).toMatchObject({ error: 'invalid_request' })
    }
    expect((await ctx.start('198.51.100.99', 'tv')).status).toBe(200)
  })

  it('#39 item 7 requests without an address share no per-address bucket (only the client limit counts them)', async () => {
    const ctx = await setup()
    for (let i = 0; i < 40; i++) expect((await ctx.start(undefined)).status).toBe(200)
  })

  it('#39 item 7 pending cap: a client holds at most perClient pending authorizations; the new one is refused, the pending ones stay usable', async () => {
    const ctx = await setup({ throttle: { deviceAuthorization: { perClient: 3 } } })
    const codes: oauth.DeviceAuthorizationResponse[] = []
    for (let i = 0; i < 3; i++) {
      const result = await ctx.outcome(await ctx.start(`192.0.2.${i + 1}`))
      codes.push(result as oauth.DeviceAuthorizationResponse)
    }
    for (let i = 0; i < 5; i++) expect((await ctx.start(`198.51.100.${i + 1}`)).status).toBe(429)
    expect(ctx.events.filter((event) => event.type === 'device.authorization_started')).toHaveLength(3)
    const now = ctx.clock.now()
    for (const code of codes) {
      const record = await ctx.service.store.deviceCodes.get(await sha256(code.device_code))
      expect(record?.status).toBe('pending')
      const found = await ctx.service.store.deviceCodes.findByUserCode(normalizeUserCode(code.user_code) ?? '', now)
      expect(found?.id).toBe(record?.id)
    }
    // Past the window (the three have expired by then): room again.
    ctx.clock.advance(901)
    expect((await ctx.start('198.51.100.1')).status).toBe(200)
  })
})

describe.each(STORES)('#39 item 7 device authorization limits on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  it('#39 item 7 20 parallel device authorizations from one address across two instances, perAddress 5: exactly 5 × 200', async () => {
    const time = testClock()
    opened = await kind.create(time.now)
    const options = { store: opened.store, now: time.now, throttle: { deviceAuthorization: { perAddress: 5 } } }
    const ctx = await setup(options, 2)
    const burst = Array.from({ length: 20 }, (_, i) => ctx.start('203.0.113.7', 'cli', i % 2))
    expect(await statuses(burst)).toEqual([...Array(5).fill(200), ...Array(15).fill(429)])
  })

  it('#39 item 7 20 parallel device authorizations of one client from many addresses across two instances, perClient 5: exactly 5 × 200', async () => {
    const time = testClock()
    opened = await kind.create(time.now)
    const options = { store: opened.store, now: time.now, throttle: { deviceAuthorization: { perClient: 5 } } }
    const ctx = await setup(options, 2)
    const burst = Array.from({ length: 20 }, (_, i) => ctx.start(`192.0.2.${i + 1}`, 'cli', i % 2))
    expect(await statuses(burst)).toEqual([...Array(5).fill(200), ...Array(15).fill(429)])
  })
})

describe('#39 item 7 throttle: false', () => {
  it('#39 item 7 turns the device authorization limits off (for a host that limits in front)', async () => {
    const ctx = await setup({ throttle: false })
    for (let i = 0; i < 35; i++) expect((await ctx.start('203.0.113.7')).status).toBe(200)
  })
})
