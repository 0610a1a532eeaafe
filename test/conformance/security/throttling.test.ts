/**
 * Brute-force throttling of client authentication and sign-in (issue #6), and source-network
 * restrictions per client. Counters are per identity + address, per identity, per address; they
 * are checked before the secret, so a throttled caller is refused even with the right secret, and
 * a success never resets them.
 */
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent, Limiter, ThrottleRule } from '../../../src/index.ts'
import { createMemoryStore } from '../../../src/index.ts'
import { Browser } from '../../helpers/browser.ts'
import { authorizationUrl } from '../../helpers/flow.ts'
import { ISSUER, basic, clock, discover, form, makeService } from '../../helpers/service.ts'

const TOKEN = `${ISSUER}/connect/token`
const ATTACKER = '203.0.113.7'
const OFFICE = '198.51.100.20'

type Service = Awaited<ReturnType<typeof makeService>>['service']

function tokenRequest(service: Service, secret: string, address?: string, clientId = 'service') {
  const request = form(TOKEN, { grant_type: 'client_credentials' }, { authorization: basic(clientId, secret) })
  return service.fetch(request, address === undefined ? undefined : { address })
}

describe('throttling failed client authentication', () => {
  it('a burst of 60 failures for one client from one address is throttled after the 10th', async () => {
    const { service } = await makeService()
    const statuses: number[] = []
    let firstThrottled: Response | undefined
    for (let i = 0; i < 60; i++) {
      const response = await tokenRequest(service, `guess-${i}`, ATTACKER)
      statuses.push(response.status)
      if (response.status === 429 && !firstThrottled) firstThrottled = response
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401))
    expect(statuses.slice(10)).toEqual(Array(50).fill(429))
    const throttled = firstThrottled as Response
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(Number(throttled.headers.get('retry-after'))).toBeLessThanOrEqual(900)
    expect(throttled.headers.get('cache-control')).toBe('no-store')
    expect(await throttled.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('the right secret does not unlock a throttled address, and a success elsewhere resets nothing', async () => {
    const { service } = await makeService()
    for (let i = 0; i < 10; i++) expect((await tokenRequest(service, `guess-${i}`, ATTACKER)).status).toBe(401)
    // The attacker finally guesses right: still refused, without learning that the guess was right.
    expect((await tokenRequest(service, 'service-secret', ATTACKER)).status).toBe(429)
    // The real client, from its own address, is not locked out by the attacker's pair counter …
    expect((await tokenRequest(service, 'service-secret', OFFICE)).status).toBe(200)
    // … and its success does not give the attacker new attempts.
    expect((await tokenRequest(service, 'guess-x', ATTACKER)).status).toBe(429)
    expect((await tokenRequest(service, 'service-secret', ATTACKER)).status).toBe(429)
  })

  it('after the window the counters start again', async () => {
    const { service, clock } = await makeService()
    for (let i = 0; i < 10; i++) await tokenRequest(service, `guess-${i}`, ATTACKER)
    expect((await tokenRequest(service, 'service-secret', ATTACKER)).status).toBe(429)
    clock.advance(899)
    expect((await tokenRequest(service, 'service-secret', ATTACKER)).status).toBe(429)
    clock.advance(1)
    expect((await tokenRequest(service, 'service-secret', ATTACKER)).status).toBe(200)
    expect((await tokenRequest(service, 'wrong', ATTACKER)).status).toBe(401)
  })

  it('a parallel burst of wrong secrets cannot outrun the counter (slow hashes run one at a time)', async () => {
    const { service } = await makeService()
    const statuses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => tokenRequest(service, `burst-${i}`, ATTACKER).then((r) => r.status)),
    )
    expect(statuses.filter((status) => status === 401)).toHaveLength(10)
    expect(statuses.filter((status) => status === 429)).toHaveLength(30)
  })

  it('IPv6 addresses count by /64: rotating through one prefix does not give new attempts', async () => {
    const { service } = await makeService()
    for (let i = 1; i <= 10; i++) {
      expect((await tokenRequest(service, `guess-${i}`, `2001:db8:1:2::${i.toString(16)}`)).status).toBe(401)
    }
    expect((await tokenRequest(service, 'service-secret', '2001:db8:1:2:ffff::1')).status).toBe(429)
    expect((await tokenRequest(service, 'service-secret', '2001:db8:1:3::1')).status).toBe(200)
  })

  it('odd identities and addresses never break it: a 5,000-character client id, a bad clientAddress', async () => {
    const { service } = await makeService()
    const long = 'x'.repeat(5000)
    for (let i = 0; i < 11; i++) {
      const response = await service.fetch(
        form(TOKEN, { grant_type: 'client_credentials' }, { authorization: basic(long, 'guess') }),
        { address: ATTACKER },
      )
      expect(response.status).toBe(i < 10 ? 401 : 429)
    }
    const errors: string[] = []
    const hostile = await makeService({
      clientAddress: (request) => {
        const value = request.headers.get('x-forwarded-for')
        if (value === 'throw') throw new Error('boom')
        return value ?? undefined
      },
      logger: { warn() {}, error: (message) => void errors.push(message) },
    })
    for (const header of ['throw', 'not an address', '1.2.3.4 5.6.7.8', '203.0.113.9']) {
      const request = form(
        TOKEN,
        { grant_type: 'client_credentials' },
        {
          authorization: basic('service', 'service-secret'),
          'x-forwarded-for': header,
        },
      )
      expect((await hostile.service.fetch(request)).status, header).toBe(200)
    }
    expect(errors).toEqual(['clientAddress failed'])
  })

  it('distributed guessing: 100 failures for one client from many addresses throttle that client', async () => {
    const { service } = await makeService()
    for (let i = 0; i < 100; i++) {
      expect((await tokenRequest(service, `guess-${i}`, `192.0.2.${i + 1}`)).status).toBe(401)
    }
    expect((await tokenRequest(service, 'guess', '192.0.2.200')).status).toBe(429)
    // Other clients are unaffected.
    const other = form(TOKEN, { grant_type: 'client_credentials' }, { authorization: basic('no-cc', 'no-cc-secret') })
    expect((await service.fetch(other, { address: '192.0.2.200' })).status).toBe(400) // unauthorized_client, authenticated
  })

  it('spraying: 100 failures from one address over many client ids throttle the address', async () => {
    const { service } = await makeService({ throttle: { clientAuthentication: { perIdentityAndAddress: 1000 } } })
    for (let i = 0; i < 100; i++) {
      expect((await tokenRequest(service, 'guess', ATTACKER, `client-${i}`)).status).toBe(401)
    }
    expect((await tokenRequest(service, 'service-secret', ATTACKER)).status).toBe(429)
    expect((await tokenRequest(service, 'service-secret', OFFICE)).status).toBe(200)
  })

  it('introspection and revocation count and refuse the same way', async () => {
    const { service } = await makeService()
    const introspect = (secret: string) =>
      service.fetch(form(`${ISSUER}/connect/introspect`, { token: 'x' }, { authorization: basic('service', secret) }), {
        address: ATTACKER,
      })
    for (let i = 0; i < 5; i++) expect((await introspect(`guess-${i}`)).status).toBe(401)
    for (let i = 0; i < 5; i++) {
      const revoke = form(`${ISSUER}/connect/revoke`, { token: 'x' }, { authorization: basic('service', `g${i}`) })
      expect((await service.fetch(revoke, { address: ATTACKER })).status).toBe(401)
    }
    expect((await introspect('service-secret')).status).toBe(429)
  })

  it('instances sharing a store share the counters', async () => {
    const time = clock()
    const store = createMemoryStore({ now: time.now })
    const a = await makeService({ store, now: time.now })
    const b = await makeService({ store, now: time.now })
    for (let i = 0; i < 5; i++) await tokenRequest(a.service, `guess-${i}`, ATTACKER)
    for (let i = 0; i < 5; i++) await tokenRequest(b.service, `guess-${i}`, ATTACKER)
    expect((await tokenRequest(a.service, 'service-secret', ATTACKER)).status).toBe(429)
    expect((await tokenRequest(b.service, 'service-secret', ATTACKER)).status).toBe(429)
  })

  it('successful requests do not read the counters from the store on every request', async () => {
    const time = clock()
    const store = createMemoryStore({ now: time.now })
    let reads = 0
    const get = store.attempts.get
    store.attempts.get = (...args) => {
      reads++
      return get(...args)
    }
    const { service } = await makeService({ store, now: time.now })
    for (let i = 0; i < 50; i++) expect((await tokenRequest(service, 'service-secret', OFFICE)).status).toBe(200)
    expect(reads).toBeLessThanOrEqual(3 * 2) // the first (cold) check and the slow path's fresh re-check
    time.advance(1)
    await tokenRequest(service, 'service-secret', OFFICE)
    expect(reads).toBeLessThanOrEqual(3 * 3) // one more round after a second
  })

  it('limits are configurable, throttle: false turns it off', async () => {
    const strict = await makeService({ throttle: { window: 60, clientAuthentication: { perIdentityAndAddress: 2 } } })
    await tokenRequest(strict.service, 'a', ATTACKER)
    await tokenRequest(strict.service, 'b', ATTACKER)
    const response = await tokenRequest(strict.service, 'service-secret', ATTACKER)
    expect(response.status).toBe(429)
    expect(Number(response.headers.get('retry-after'))).toBeLessThanOrEqual(60)

    const off = await makeService({ throttle: false })
    for (let i = 0; i < 30; i++) expect((await tokenRequest(off.service, `guess-${i}`, ATTACKER)).status).toBe(401)
    expect((await tokenRequest(off.service, 'service-secret', ATTACKER)).status).toBe(200)
  })

  it('a pluggable limiter receives the rules', async () => {
    const seen: { checked: ThrottleRule[][]; failed: ThrottleRule[][] } = { checked: [], failed: [] }
    const limiter: Limiter = {
      async retryAfter(rules) {
        seen.checked.push([...rules])
        return seen.failed.length >= 1 ? 42 : 0
      },
      async fail(rules) {
        seen.failed.push([...rules])
      },
    }
    const { service } = await makeService({ throttle: { limiter } })
    expect((await tokenRequest(service, 'wrong', ATTACKER)).status).toBe(401)
    const throttled = await tokenRequest(service, 'service-secret', ATTACKER)
    expect(throttled.status).toBe(429)
    expect(throttled.headers.get('retry-after')).toBe('42')
    expect(seen.failed[0]?.map((rule) => rule.key).sort()).toEqual(
      ['client-address:203.0.113.7', 'client+address:203.0.113.7 service', 'client:service'].sort(),
    )
  })

  it('emits client.authentication_failed with the reason, never the secret', async () => {
    const events: GatehouseEvent[] = []
    const { service } = await makeService({ onEvent: (event) => void events.push(event) })
    for (let i = 0; i < 11; i++) await tokenRequest(service, `guess-secret-${i}`, ATTACKER)
    await tokenRequest(service, 'x', ATTACKER, 'nobody')
    const failures = events.filter((event) => event.type === 'client.authentication_failed')
    expect(failures.map((event) => (event as { reason: string }).reason)).toEqual([
      ...Array(10).fill('invalid_secret'),
      'throttled',
      'unknown_client',
    ])
    expect(failures.every((event) => event.address === ATTACKER)).toBe(true)
    expect(JSON.stringify(events)).not.toMatch(/guess-secret/)
  })
})

describe('source networks per client (allowedNetworks)', () => {
  async function setup() {
    const made = await makeService()
    await made.service.clients.ensure({
      clientId: 'internal-job',
      clientSecret: 'internal-job-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
      allowedNetworks: ['10.0.0.0/8', 'fd00::/8', '192.0.2.10'],
    })
    return made
  }
  const request = (service: Service, address: string | undefined) =>
    tokenRequest(service, 'internal-job-secret', address, 'internal-job')

  it('authenticates from the listed networks (IPv4, IPv6, IPv4-mapped, single address)', async () => {
    const { service } = await setup()
    for (const address of ['10.1.2.3', 'fd12:3456::1', '::ffff:10.9.9.9', '192.0.2.10']) {
      expect((await request(service, address)).status, address).toBe(200)
    }
  })

  it('refuses other and unknown addresses as invalid_client, counted as failures', async () => {
    const { service } = await setup()
    for (const address of ['192.0.2.11', '11.0.0.1', 'fe80::1', undefined]) {
      const response = await request(service, address)
      expect(response.status, String(address)).toBe(401)
      expect(await response.json()).toMatchObject({ error: 'invalid_client' })
    }
  })

  it('failures from outside count against the address only: outsiders cannot lock the client out', async () => {
    const { service } = await makeService({ throttle: { clientAuthentication: { perAddress: 20 } } })
    await service.clients.ensure({
      clientId: 'internal-job',
      clientSecret: 'internal-job-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
      allowedNetworks: ['10.0.0.0/8'],
    })
    for (let i = 0; i < 150; i++) {
      expect((await request(service, `172.16.${i}.1`)).status).toBe(401) // 150 outside addresses
    }
    expect((await request(service, '10.0.0.1')).status).toBe(200) // the client is not locked out
    for (let i = 0; i < 19; i++) await request(service, '172.16.0.1')
    // The outside address did reach its own limit (20), now even for a well-formed request.
    expect((await tokenRequest(service, 'service-secret', '172.16.0.1')).status).toBe(429)
  })

  it('registration rejects malformed ranges, naming the field', async () => {
    const { service } = await setup()
    for (const bad of ['10.0.0.0/33', '10.0.0', 'example.com', '0x7f.1', 'fd00::/129', '10.0.0.0/8/8']) {
      await expect(
        service.clients.ensure({
          clientId: `bad-${bad}`,
          clientSecret: 'secret-secret',
          permissions: ['ept:token'],
          allowedNetworks: [bad],
        }),
      ).rejects.toThrow(/allowedNetworks/)
    }
  })

  it('the host sees and updates the networks', async () => {
    const { service } = await setup()
    expect((await service.clients.find('internal-job'))?.allowedNetworks).toEqual([
      '10.0.0.0/8',
      'fd00::/8',
      '192.0.2.10',
    ])
    await service.clients.update('internal-job', { allowedNetworks: ['172.16.0.0/12'] })
    expect((await request(service, '172.20.0.1')).status).toBe(200)
    expect((await request(service, '10.1.2.3')).status).toBe(401)
  })
})

describe('throttling failed sign-ins', () => {
  async function setup(address: string) {
    const made = await makeService()
    const as = await discover(made.service.fetch)
    const browser = new Browser((request) => made.service.fetch(request, { address }))
    return { ...made, as, browser }
  }

  async function signInPage(ctx: Awaited<ReturnType<typeof setup>>) {
    const { url } = await authorizationUrl(ctx.as)
    const first = await ctx.browser.navigate(url.href)
    if (!first.page) throw new Error('expected the sign-in page')
    return first.page
  }

  it('five wrong passwords for a user from one address: the sixth attempt is refused with 429', async () => {
    const ctx = await setup(ATTACKER)
    let page = await signInPage(ctx)
    for (let i = 0; i < 5; i++) {
      const after = await ctx.browser.submit(page, { username: 'alice', password: `wrong-${i}` })
      expect(after.page?.status).toBe(200)
      expect(after.page?.html).toContain('incorrect')
      page = after.page as NonNullable<typeof after.page>
    }
    // The right password, now: refused, the form says to wait, Retry-After is set.
    const blocked = await ctx.browser.submit(page, { username: 'ALICE', password: 'alice-password' })
    expect(blocked.callback).toBeUndefined()
    expect(blocked.page?.status).toBe(429)
    expect(Number(blocked.page?.response.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(blocked.page?.html).toMatch(/Too many failed sign-in attempts/)
  })

  it('the same user from another address still signs in; the window ends the block', async () => {
    const ctx = await setup(ATTACKER)
    let page = await signInPage(ctx)
    for (let i = 0; i < 5; i++) {
      page = (await ctx.browser.submit(page, { username: 'alice', password: `wrong-${i}` })).page as typeof page
    }
    const office = new Browser((request) => ctx.service.fetch(request, { address: OFFICE }))
    const { url } = await authorizationUrl(ctx.as)
    const officePage = (await office.navigate(url.href)).page as typeof page
    const done = await office.submit(officePage, { username: 'alice', password: 'alice-password' })
    expect(done.callback?.searchParams.get('code')).toBeTruthy()

    ctx.clock.advance(900)
    const retry = await ctx.browser.submit(await signInPage(ctx), { username: 'alice', password: 'alice-password' })
    expect(retry.callback?.searchParams.get('code')).toBeTruthy()
  })

  it('emits signin.failed and signin.succeeded without the password', async () => {
    const events: GatehouseEvent[] = []
    const { service } = await makeService({ onEvent: (event) => void events.push(event) })
    const as = await discover(service.fetch)
    const browser = new Browser((request) => service.fetch(request, { address: OFFICE }))
    const { url } = await authorizationUrl(as)
    const page = (await browser.navigate(url.href)).page
    if (!page) throw new Error('expected the sign-in page')
    const failed = await browser.submit(page, { username: 'alice', password: 'secret-wrong-password' })
    await browser.submit(failed.page as typeof page, { username: 'alice', password: 'alice-password' })
    const signIns = events.filter((event) => event.type.startsWith('signin.'))
    expect(signIns).toEqual([
      expect.objectContaining({
        type: 'signin.failed',
        username: 'alice',
        clientId: 'web',
        reason: 'invalid_credentials',
        address: OFFICE,
      }),
      expect.objectContaining({ type: 'signin.succeeded', sub: 'user-1', clientId: 'web', address: OFFICE }),
    ])
    expect(JSON.stringify(events)).not.toMatch(/secret-wrong-password|alice-password/)
  })
})
