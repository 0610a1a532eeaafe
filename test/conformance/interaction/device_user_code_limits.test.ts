/**
 * #39 item 7 the limits on wrong user codes at /connect/verify (RFC 8628 §5.1), over the service's
 * fetch with the source address an adapter passes: per address (IPv4, IPv6 /64), per network
 * (IPv4 /24, IPv6 /48) and from everywhere together (`throttle.userCode`). Requests without an
 * address count in the overall limit only, so they do not share a bucket that one guesser could
 * lock for all of them. Counters live in the store: two instances on one store count together.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { GatehouseEvent, TokenServiceOptions } from '../../../src/index.ts'
import { randomToken, sha256 } from '../../../src/crypto/opaque.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import type { DeviceCodeRecord, Store } from '../../../src/storage/types.ts'
import { formatUserCode, generateUserCode } from '../../../src/tokens/user_code.ts'
import { Browser, type Page } from '../../helpers/browser.ts'
import { ISSUER, clock as testClock, makeService } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const VERIFY = `${ISSUER}/connect/verify`
const WRONG = ['BCDF-GHJK', 'ZZZZ-ZZZZ', 'XWVT-SRQP']

type Fetch = (request: Request, info?: { address?: string }) => Promise<Response>

/** One service (or more on one store), a browser's cookie and CSRF token, and a user-code POST. */
async function setup(options: Partial<TokenServiceOptions> = {}, instances = 1) {
  const clock = testClock()
  const events: GatehouseEvent[] = []
  const services: Awaited<ReturnType<typeof makeService>>['service'][] = []
  for (let i = 0; i < instances; i++) {
    const { service } = await makeService({ now: clock.now, onEvent: (event) => void events.push(event), ...options })
    services.push(service)
  }
  const [service] = services
  if (!service) throw new Error('no instance')
  await service.clients.ensure({
    clientId: 'tv',
    consentType: 'implicit',
    permissions: [
      'ept:device_authorization',
      'ept:token',
      'gt:urn:ietf:params:oauth:grant-type:device_code',
      'scp:openid',
    ],
  })
  const browser = new Browser(service.fetch)
  const form = (await browser.navigate(VERIFY)).page as Page
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.html)?.[1] as string
  /** Submits a user code from `address` (none: a host that passes no address), on instance `on`. */
  const post = (userCode: string, address: string | undefined, on = 0): Promise<Response> => {
    const fetch = (services[on] ?? service).fetch as Fetch
    const request = new Request(VERIFY, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browser.cookieHeader() },
      body: new URLSearchParams({ csrf, user_code: userCode }),
    })
    return address === undefined ? fetch(request) : fetch(request, { address })
  }
  /** A pending device authorization in the store, as POST /connect/device leaves it. */
  const pending = async (): Promise<DeviceCodeRecord> => {
    const now = clock.now()
    const record: DeviceCodeRecord = {
      id: await sha256(randomToken()),
      userCode: generateUserCode(),
      familyId: randomToken(16),
      clientId: 'tv',
      scope: 'openid',
      interval: 5,
      status: 'pending',
      issuedAt: now,
      expiresAt: now + 600,
    }
    expect(await (service.store as Store).deviceCodes.insert(record, now)).toBe(true)
    return record
  }
  return { service, clock, events, post, pending }
}

/** Wrong guesses in turn; their statuses. */
async function guess(post: (code: string) => Promise<Response>, count: number): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < count; i++) statuses.push((await post(WRONG[i % WRONG.length] as string)).status)
  return statuses
}

describe('#39 item 7 wrong user codes per network and overall', () => {
  it('#39 item 7 ten /64s of one /48 are throttled together: 100 wrong codes (10 per /64), then 429 for the whole /48, even for a right code', async () => {
    const ctx = await setup()
    const device = await ctx.pending()
    for (let net = 0; net < 10; net++) {
      // Each /64 stays well under its own limit (20).
      const statuses = await guess((code) => ctx.post(code, `2001:db8:7:${net}::${net + 1}`), 10)
      expect(statuses.every((status) => status === 400)).toBe(true)
    }
    // An eleventh /64 of the same /48, with the right code: refused before any lookup.
    const throttled = await ctx.post(formatUserCode(device.userCode), '2001:db8:7:ff::1')
    expect(throttled.status).toBe(429)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await throttled.text()).toContain('Too many wrong codes.')
    // Another /48 is not held back; the code is still pending.
    expect((await ctx.post(formatUserCode(device.userCode), '2001:db8:8::1')).status).toBe(303)
    // The window over, the /48 may try again.
    ctx.clock.advance(901)
    const later = await ctx.pending()
    expect((await ctx.post(formatUserCode(later.userCode), '2001:db8:7:ff::1')).status).toBe(303)
  })

  it('#39 item 7 a parallel burst from the /64s of one /48 cannot outrun the count: exactly perNetwork wrong codes are looked up', async () => {
    // A store whose counter reads take a while, as over a network: the window a race would need.
    const memory = createMemoryStore()
    const slow = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    const get = memory.attempts.get.bind(memory.attempts)
    memory.attempts.get = async (key, now) => {
      const counter = await get(key, now)
      await slow(5)
      return counter
    }
    const ctx = await setup({ store: memory, throttle: { userCode: { perNetwork: 37 } } })
    const burst = Array.from({ length: 80 }, (_, i) => ctx.post('BCDF-GHJK', `2001:db8:5:${i % 8}::1`))
    const statuses = (await Promise.all(burst)).map((response) => response.status)
    expect(statuses.filter((status) => status === 400)).toHaveLength(37)
    expect(statuses.filter((status) => status === 429)).toHaveLength(43)
  })

  it('#39 item 7 IPv4: one /24 counts together (throttle.userCode.perNetwork), whatever its addresses', async () => {
    const ctx = await setup({ throttle: { userCode: { perAddress: 5, perNetwork: 12 } } })
    const device = await ctx.pending()
    for (const host of [1, 2, 3]) {
      expect((await guess((code) => ctx.post(code, `198.51.100.${host}`), 4)).every((s) => s === 400)).toBe(true)
    }
    expect((await ctx.post(device.userCode, '198.51.100.200')).status).toBe(429)
    expect((await ctx.post(device.userCode, '198.51.101.200')).status).toBe(303)
  })

  it('#39 item 7 the overall cap (throttle.userCode.overall): guesses spread over many networks, and requests without an address, count together', async () => {
    const ctx = await setup({ throttle: { userCode: { overall: 30 } } })
    const device = await ctx.pending()
    // 25 networks (/24s and /48s), one wrong code each, and 5 without an address: 30.
    for (let net = 0; net < 25; net++) {
      const address = net % 2 ? `203.0.${net}.9` : `2001:db8:${net}::9`
      expect((await ctx.post('BCDF-GHJK', address)).status).toBe(400)
    }
    expect((await guess((code) => ctx.post(code, undefined), 5)).every((s) => s === 400)).toBe(true)
    // Every source is refused now, with or without an address, even with the right code.
    for (const address of ['192.0.2.77', '2001:db8:ffff::1', undefined]) {
      expect((await ctx.post(formatUserCode(device.userCode), address)).status).toBe(429)
    }
    expect(
      ctx.events.filter((event) => event.type === 'device.user_code_failed' && event.reason === 'throttled'),
    ).toHaveLength(3)
    expect((await ctx.service.store.deviceCodes.get(device.id))?.status).toBe('pending')
  })

  it('#39 item 7 the default overall cap (1000 per window) holds against 100 /24s of 10 guesses each', async () => {
    const ctx = await setup()
    const device = await ctx.pending()
    for (let net = 0; net < 100; net++) {
      const statuses = await guess((code) => ctx.post(code, `10.${net >> 4}.${net}.1`), 10)
      expect(statuses.every((status) => status === 400)).toBe(true)
    }
    expect((await ctx.post(device.userCode, '192.0.2.1')).status).toBe(429)
  }, 120_000)

  it('#39 item 7 requests without an address do not share a bucket that locks out every address-less user', async () => {
    const ctx = await setup()
    const device = await ctx.pending()
    // More wrong codes without an address than any per-address or per-network limit (20, 100).
    const statuses = await guess((code) => ctx.post(code, undefined), 150)
    expect(statuses.every((status) => status === 400)).toBe(true)
    // Another end-user whose requests carry no address still gets through; so does one with an address.
    expect((await ctx.post(formatUserCode(device.userCode), undefined)).status).toBe(303)
    const other = await ctx.pending()
    expect((await ctx.post(formatUserCode(other.userCode), '203.0.113.5')).status).toBe(303)
  }, 60_000)
})

describe.each(STORES)('#39 item 7 user-code limits on the $name store, two instances', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  it('#39 item 7 a /48 spread over two instances is counted once in the store', async () => {
    const time = testClock()
    opened = await kind.create(time.now)
    const ctx = await setup({ store: opened.store, now: time.now, throttle: { userCode: { perNetwork: 12 } } }, 2)
    const device = await ctx.pending()
    for (let net = 0; net < 6; net++) {
      const statuses = await guess((code) => ctx.post(code, `2001:db8:9:${net}::1`, net % 2), 2)
      expect(statuses.every((status) => status === 400)).toBe(true)
    }
    expect((await ctx.post(device.userCode, '2001:db8:9:99::1', 0)).status).toBe(429)
    expect((await ctx.post(device.userCode, '2001:db8:9:99::1', 1)).status).toBe(429)
    expect((await ctx.post(device.userCode, '2001:db8:a::1', 1)).status).toBe(303)
  })
})
