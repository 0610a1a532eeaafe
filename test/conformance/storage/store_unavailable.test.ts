/**
 * A store that fails mid-request: the API answers 503 temporarily_unavailable with Retry-After
 * (never a 500 or a stack trace), the browser endpoints an HTML page, and no half-written grant
 * is left behind.
 */
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../../src/errors.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { createRedisStore } from '../../../src/storage/redis.ts'
import type { Store } from '../../../src/storage/types.ts'
import { authorizationUrl, setup } from '../../helpers/flow.ts'
import { basic, clock, form, makeService } from '../../helpers/service.ts'
import { jagService, redeem, signIdJag } from '../grants/jwt_bearer_fixtures.ts'

/** A memory store whose operations can be switched to fail like an unreachable database. */
function faultyStore(now: () => number) {
  const inner = createMemoryStore({ now })
  const failing = new Set<string>()
  const wrap = <T extends object>(name: string, target: T): T =>
    new Proxy(target, {
      get(obj, prop) {
        const value = Reflect.get(obj, prop)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          if (failing.has(`${name}.${String(prop)}`) || failing.has(name)) {
            return Promise.reject(new StoreUnavailableError(`injected failure in ${name}.${String(prop)}`))
          }
          return value.apply(obj, args)
        }
      },
    })
  const store: Store = {
    clients: wrap('clients', inner.clients),
    codes: wrap('codes', inner.codes),
    refreshTokens: wrap('refreshTokens', inner.refreshTokens),
    sessions: wrap('sessions', inner.sessions),
    grants: wrap('grants', inner.grants),
    interactions: wrap('interactions', inner.interactions),
    revocations: wrap('revocations', inner.revocations),
    attempts: wrap('attempts', inner.attempts),
    keys: wrap('keys', inner.keys),
    pushedRequests: wrap('pushedRequests', inner.pushedRequests),
    deviceCodes: wrap('deviceCodes', inner.deviceCodes),
    cibaRequests: wrap('cibaRequests', inner.cibaRequests),
    replays: wrap('replays', inner.replays),
  }
  return { store, failing }
}

describe('store failures', () => {
  it('token endpoint: 503 temporarily_unavailable with Retry-After', async () => {
    const time = clock()
    const { store, failing } = faultyStore(time.now)
    const { service } = await makeService({ store, now: time.now })
    failing.add('clients')
    time.advance(10) // past the client cache
    const response = await service.fetch(
      form(
        service.endpoints.token,
        { grant_type: 'client_credentials' },
        { authorization: basic('service', 'service-secret') },
      ),
    )
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(await response.json()).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'the service is temporarily unavailable',
    })
  })

  it('refresh: a failed rotation leaves the old refresh token usable (no half-written grant)', async () => {
    const time = clock()
    const { store, failing } = faultyStore(time.now)
    const ctx = await setup({ store, now: time.now })
    const { signIn } = await import('../../helpers/flow.ts')
    const { result } = await signIn(ctx)
    failing.add('refreshTokens.rotate')
    const refresh = () =>
      ctx.service.fetch(
        form(
          ctx.as.token_endpoint as string,
          { grant_type: 'refresh_token', refresh_token: result.refresh_token as string },
          { authorization: basic('web', 'web-secret') },
        ),
      )
    expect((await refresh()).status).toBe(503)
    failing.clear()
    expect((await refresh()).status).toBe(200)
  })

  it('#39 a code redemption whose grant record cannot be written: 503 temporarily_unavailable, and the code is spent', async () => {
    const time = clock()
    const { store, failing } = faultyStore(time.now)
    const ctx = await setup({ store, now: time.now })
    const { authorize, authorizationUrl: url, redeemCallback } = await import('../../helpers/flow.ts')
    const request = await url(ctx.as)
    const callback = await authorize(ctx.browser, request.url)
    failing.add('grants.put')
    const { response } = await redeemCallback(ctx, callback, request)
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' })
    failing.clear()
    const again = await redeemCallback(ctx, callback, request)
    expect(again.response.status).toBe(400)
    expect(await again.response.json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('authorization endpoint: an HTML error page, not a redirect or a 500', async () => {
    const time = clock()
    const { store, failing } = faultyStore(time.now)
    const ctx = await setup({ store, now: time.now })
    failing.add('interactions')
    const { url } = await authorizationUrl(ctx.as)
    const response = await ctx.service.fetch(new Request(url))
    expect(response.status).toBe(503)
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    expect(response.headers.get('location')).toBeNull()
  })

  it("#45 the jwt-bearer grant: a store that cannot record the ID-JAG's jti is 503, and the ID-JAG stays usable", async () => {
    const { store, failing } = faultyStore(() => Math.floor(Date.now() / 1000))
    const ctx = await jagService(store)
    const assertion = await signIdJag(ctx.key, ctx.time.now())
    failing.add('replays')
    const down = await redeem(ctx, assertion)
    expect({ status: down.status, error: down.body.error }).toEqual({ status: 503, error: 'temporarily_unavailable' })
    failing.delete('replays')
    expect((await redeem(ctx, assertion)).status).toBe(200)
  })

  it.runIf(process.env.REDIS_URL)('a real Redis connection lost mid-run gives 503, not a hang or a 500', async () => {
    const store = createRedisStore({ url: process.env.REDIS_URL as string, prefix: `gh-test-down-${Date.now()}:` })
    await store.connect()
    const { service } = await makeService({ store, now: () => Math.floor(Date.now() / 1000) })
    const ok = await service.fetch(
      form(
        service.endpoints.token,
        { grant_type: 'client_credentials' },
        { authorization: basic('service', 'service-secret') },
      ),
    )
    expect(ok.status).toBe(200)
    const jwt = ((await ok.json()) as { access_token: string }).access_token
    await store.clear()
    await store.close()
    const response = await service.fetch(
      form(service.endpoints.introspection, { token: jwt }, { authorization: basic('service', 'service-secret') }),
    )
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' })
  })
})
