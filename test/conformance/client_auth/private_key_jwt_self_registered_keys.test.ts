/**
 * #27 item 9, TOK-13 (RFC 7523 §3, OpenID Connect Core §9 and §10.1.1): the `jwks_uri` of a
 * self-registered private_key_jwt client (here one described by a client ID metadata document).
 * A key set that gains a key: an assertion with the new `kid` makes the service fetch the set again,
 * at most once per 30 s per URI (the cool-down, on the injected clock), and is accepted once the
 * set is fetched again. The fetches of such clients' key sets count against a per-host budget of
 * the throttle: junk clients on the host cannot make the service hammer it, and a client whose set
 * was fetched before keeps authenticating while the budget is spent.
 */
import type { JWK } from 'jose'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  REVOCATION,
  assertionRequest,
  clientKey,
  errorOf,
  keyService,
  signAssertion,
} from './private_key_jwt_fixtures.ts'

/** Each client's document on a host of its own; every key set on one shared host. */
const document = (n: number) => `https://tool-${n}.example.test/oauth/client.json`
const keysOf = (n: number) => `https://keys.example.test/jwks-${n}.json`

async function setup() {
  const published = new Map<string, JWK[]>()
  const fetched: string[] = []
  vi.stubGlobal('fetch', async (url: string) => {
    fetched.push(String(url))
    const keys = published.get(String(url))
    return keys ? Response.json({ keys }) : new Response('not here', { status: 404 })
  })
  const ctx = await keyService([], {
    // The key sets come from the stubbed global fetch: the unpinned path, opted into (#39 item 5).
    allowUnpinnedHostNames: true,
    clientIdMetadataDocuments: {
      scopes: ['openid'],
      fetch: async (url) => {
        const n = /^https:\/\/tool-(\d+)\.example\.test\//.exec(url)?.[1]
        return n === undefined
          ? new Response('not here', { status: 404 })
          : Response.json({
              client_id: url,
              client_name: `Keyed Tool ${n}`,
              redirect_uris: ['https://tool.example.test/cb'],
              token_endpoint_auth_method: 'private_key_jwt',
              jwks_uri: keysOf(Number(n)),
            })
      },
    },
  })
  return { ...ctx, published, fetched }
}

async function revokeAs(ctx: Awaited<ReturnType<typeof setup>>, n: number, key: Awaited<ReturnType<typeof clientKey>>) {
  const assertion = await signAssertion(key, document(n), ctx.clock.now())
  const response = await ctx.service.fetch(assertionRequest(assertion, { token: 'whatever' }, {}, REVOCATION), {
    address: `198.51.100.${n}`,
  })
  return { status: response.status, ...(response.status === 200 ? {} : await errorOf(response)) }
}

describe('#27 item 9 key sets of self-registered private_key_jwt clients', () => {
  afterEach(() => vi.unstubAllGlobals())

  it('#27 item 9 TOK-13 a key added to the set is accepted once the set is fetched again (unknown kid, 30 s cool-down)', async () => {
    const ctx = await setup()
    const [first, added] = [await clientKey('ES256', 'k1'), await clientKey('ES256', 'k2')]
    ctx.published.set(keysOf(1), [first.jwk])
    expect(await revokeAs(ctx, 1, first)).toEqual({ status: 200 })
    expect(ctx.fetched).toEqual([keysOf(1)])

    ctx.published.set(keysOf(1), [first.jwk, added.jwk])
    // Within 30 s of the last fetch an unknown kid gets no refetch (the clock also follows real
    // time: 20 s leaves room for it).
    ctx.clock.advance(20)
    expect(await revokeAs(ctx, 1, added)).toEqual({
      status: 401,
      error: 'invalid_client',
      error_description: 'client authentication failed',
    })
    expect(ctx.fetched).toHaveLength(1)
    // 30 s after the last fetch: fetched again, and the new key verifies.
    ctx.clock.advance(10)
    expect(await revokeAs(ctx, 1, added)).toEqual({ status: 200 })
    expect(ctx.fetched).toEqual([keysOf(1), keysOf(1)])
    // A flood of made-up kids right after costs no fetch.
    for (let i = 0; i < 5; i++) await revokeAs(ctx, 1, await clientKey('ES256', `junk-${i}`))
    expect(ctx.fetched).toHaveLength(2)
    // Both keys keep working from the cache.
    expect(await revokeAs(ctx, 1, first)).toEqual({ status: 200 })
    expect(ctx.fetched).toHaveLength(2)
  })

  it('#27 item 9 key-set fetches count against a per-host budget (60 a window); a set fetched before is used while it is spent', async () => {
    const ctx = await setup()
    const key = await clientKey('ES256', 'k1')
    ctx.published.set(keysOf(0), [key.jwk])
    expect(await revokeAs(ctx, 0, key)).toEqual({ status: 200 })
    // 70 other clients of the same host whose key sets are missing: a failed fetch counts two.
    for (let n = 1; n <= 70; n++) await revokeAs(ctx, n, key)
    const junk = ctx.fetched.filter((url) => url !== keysOf(0))
    expect(junk).toHaveLength(30)
    // The first client's set expires from the cache; the host's budget is spent: the set fetched
    // before still verifies its assertions.
    ctx.clock.advance(301)
    expect(await revokeAs(ctx, 0, key)).toEqual({ status: 200 })
    expect(ctx.fetched.filter((url) => url === keysOf(0))).toHaveLength(1)
  })
})
