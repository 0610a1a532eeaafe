/**
 * TOK-09 TOK-11 TOK-13 (RFC 7523 §3, RFC 6749 §2.3 and §5.2, RFC 7591 §2): what private_key_jwt
 * and the registered `tokenEndpointAuthMethod` refuse. A replayed assertion, a wrong `aud`, an
 * assertion for a client registered with a secret, a secret for a private_key_jwt client, Basic
 * for a client registered for client_secret_post (and the reverse), a secret from a `none` client:
 * `invalid_client`. Two methods in one request: `invalid_request` (RFC 6749 §5.2 "utilizes more
 * than one mechanism for authenticating the client"). Each failure is an audit event; forged
 * assertions are throttled per source address and never lock the client out; `allowedNetworks`
 * holds; a secret presented for a key-only client costs the same hash work as any wrong secret
 * (#17.7).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { GatehouseEvent } from '../../../src/index.ts'
import { basic, form } from '../../helpers/service.ts'
import {
  REVOCATION,
  TOKEN,
  assertionRequest,
  clientKey,
  errorOf,
  keyClient,
  keyService,
  signAssertion,
} from './private_key_jwt_fixtures.ts'

const ATTACKER = '203.0.113.7'
const OFFICE = '198.51.100.20'
const FAILED = { error: 'invalid_client', error_description: 'client authentication failed' }
const cc = { grant_type: 'client_credentials' }

async function setup(options: Parameters<typeof keyService>[1] = {}) {
  const key = await clientKey('ES256')
  const events: GatehouseEvent[] = []
  const ctx = await keyService(
    [
      keyClient('kc', { jwks: { keys: [key.jwk] } }),
      {
        clientId: 'basic-only',
        clientSecret: 'basic-secret',
        tokenEndpointAuthMethod: 'client_secret_basic',
        permissions: ['ept:token', 'ept:revocation', 'gt:client_credentials', 'scp:api1'],
      },
      {
        clientId: 'post-only',
        clientSecret: 'post-secret',
        tokenEndpointAuthMethod: 'client_secret_post',
        permissions: ['ept:token', 'ept:revocation', 'gt:client_credentials', 'scp:api1'],
      },
      { clientId: 'pub', tokenEndpointAuthMethod: 'none', permissions: ['ept:revocation'] },
    ],
    { onEvent: (event) => void events.push(event), ...options },
  )
  const reasons = () => events.flatMap((event) => (event.type === 'client.authentication_failed' ? [event.reason] : []))
  return { ...ctx, key, events, reasons }
}

describe('TOK-13 refused assertions (RFC 7523 §3)', () => {
  it('TOK-13 a replayed assertion (same jti) → invalid_client, audit reason replayed', async () => {
    const ctx = await setup()
    const assertion = await signAssertion(ctx.key, 'kc', ctx.clock.now())
    expect((await ctx.service.fetch(assertionRequest(assertion))).status).toBe(200)
    const replay = await ctx.service.fetch(assertionRequest(assertion))
    expect(replay.status).toBe(401)
    expect(replay.headers.get('www-authenticate')).toMatch(/^Basic /)
    expect(await errorOf(replay)).toEqual({
      error: 'invalid_client',
      error_description: 'client_assertion has already been used',
    })
    expect(ctx.reasons()).toEqual(['replayed'])
  })

  it.each([
    ['another audience', { aud: 'https://other.example.test' }],
    ['no sub', { sub: undefined }],
    ['an expired one', { iat: -600, exp: -300 }],
    ['no jti', { jti: undefined }],
  ])('TOK-13 %s → invalid_client, audit reason invalid_assertion', async (_, claims) => {
    const ctx = await setup()
    const now = ctx.clock.now()
    const shifted = Object.fromEntries(
      Object.entries(claims).map(([name, value]) => [name, typeof value === 'number' ? now + value : value]),
    )
    const response = await ctx.service.fetch(assertionRequest(await signAssertion(ctx.key, 'kc', now, shifted)))
    expect(response.status).toBe(401)
    expect((await errorOf(response)).error).toBe('invalid_client')
    expect(ctx.reasons()).toEqual(['invalid_assertion'])
  })

  it('TOK-13 a signature by an unregistered key, an unknown client → the same invalid_client', async () => {
    const ctx = await setup()
    const now = ctx.clock.now()
    const stranger = await clientKey('ES256', ctx.key.kid)
    const forged = await ctx.service.fetch(assertionRequest(await signAssertion(stranger, 'kc', now)))
    const unknown = await ctx.service.fetch(assertionRequest(await signAssertion(ctx.key, 'nobody', now)))
    for (const response of [forged, unknown]) {
      expect(response.status).toBe(401)
      expect(await errorOf(response)).toEqual(FAILED)
    }
    expect(ctx.reasons()).toEqual(['invalid_assertion', 'unknown_client'])
  })

  it('TOK-13 an assertion for a client registered with a secret (or public) → invalid_client', async () => {
    const ctx = await setup()
    const now = ctx.clock.now()
    for (const clientId of ['service', 'basic-only', 'pub']) {
      const response = await ctx.service.fetch(assertionRequest(await signAssertion(ctx.key, clientId, now)))
      expect(response.status, clientId).toBe(401)
      expect(await errorOf(response)).toEqual(FAILED)
    }
    expect(ctx.reasons()).toEqual(['method_not_allowed', 'method_not_allowed', 'method_not_allowed'])
  })
})

describe('TOK-09 the registered tokenEndpointAuthMethod (RFC 7591 §2)', () => {
  it('TOK-09 a secret for a private_key_jwt client → invalid_client (Basic and post)', async () => {
    const ctx = await setup()
    const viaBasic = await ctx.service.fetch(form(TOKEN, cc, { authorization: basic('kc', 'a-secret') }))
    const viaPost = await ctx.service.fetch(form(TOKEN, { ...cc, client_id: 'kc', client_secret: 'a-secret' }))
    const none = await ctx.service.fetch(form(TOKEN, { ...cc, client_id: 'kc' }))
    for (const response of [viaBasic, viaPost]) {
      expect(response.status).toBe(401)
      expect(await errorOf(response)).toEqual(FAILED)
    }
    expect(none.status).toBe(401)
    expect(await errorOf(none)).toEqual({
      error: 'invalid_client',
      error_description: 'client authentication is required',
    })
    expect(ctx.reasons()).toEqual(['method_not_allowed', 'method_not_allowed', 'missing_secret'])
  })

  it('#17.7 a secret for a private_key_jwt client costs the same hash work as a wrong secret', async () => {
    const ctx = await setup({ throttle: false })
    const iterations: number[] = []
    const original = crypto.subtle.deriveBits.bind(crypto.subtle)
    const spy = vi.spyOn(crypto.subtle, 'deriveBits').mockImplementation((algorithm, key, length) => {
      if (typeof algorithm === 'object' && algorithm.name === 'PBKDF2') {
        iterations.push((algorithm as Pbkdf2Params).iterations)
      }
      return original(algorithm, key, length)
    })
    try {
      await ctx.service.fetch(form(TOKEN, cc, { authorization: basic('kc', 'a-secret') }))
      await ctx.service.fetch(form(TOKEN, cc, { authorization: basic('service', 'wrong-secret') }))
    } finally {
      spy.mockRestore()
    }
    expect(iterations).toEqual([1000, 1000])
  })

  it('TOK-09 client_secret_basic and client_secret_post are told apart once the secret is right', async () => {
    const ctx = await setup()
    const postForBasic = await ctx.service.fetch(
      form(TOKEN, { ...cc, client_id: 'basic-only', client_secret: 'basic-secret' }),
    )
    const basicForPost = await ctx.service.fetch(form(TOKEN, cc, { authorization: basic('post-only', 'post-secret') }))
    expect(postForBasic.status).toBe(401)
    expect(await errorOf(postForBasic)).toEqual({
      error: 'invalid_client',
      error_description: 'the client is registered for client_secret_basic client authentication',
    })
    expect(basicForPost.status).toBe(401)
    expect(basicForPost.headers.get('www-authenticate')).toMatch(/^Basic /)
    expect(await errorOf(basicForPost)).toEqual({
      error: 'invalid_client',
      error_description: 'the client is registered for client_secret_post client authentication',
    })
    // A wrong secret says nothing about the method.
    const wrong = await ctx.service.fetch(form(TOKEN, { ...cc, client_id: 'basic-only', client_secret: 'nope' }))
    expect(await errorOf(wrong)).toEqual(FAILED)
    // The registered methods work.
    expect(
      (await ctx.service.fetch(form(TOKEN, cc, { authorization: basic('basic-only', 'basic-secret') }))).status,
    ).toBe(200)
    const post = await ctx.service.fetch(form(TOKEN, { ...cc, client_id: 'post-only', client_secret: 'post-secret' }))
    expect(post.status).toBe(200)
    expect(ctx.reasons()).toEqual(['method_not_allowed', 'method_not_allowed', 'invalid_secret'])
  })

  it('TOK-12 a client registered for none sends its client_id only; a secret from it → invalid_client', async () => {
    const ctx = await setup()
    const revoke = (params: Record<string, string>, headers: Record<string, string> = {}) =>
      ctx.service.fetch(form(REVOCATION, { token: 'whatever', ...params }, headers))
    expect((await revoke({ client_id: 'pub' })).status).toBe(200)
    const post = await revoke({ client_id: 'pub', client_secret: 'made-up' })
    const viaBasic = await revoke({}, { authorization: basic('pub', 'made-up') })
    for (const response of [post, viaBasic]) {
      expect(response.status).toBe(401)
      expect(await errorOf(response)).toEqual(FAILED)
    }
    expect(ctx.reasons()).toEqual(['method_not_allowed', 'method_not_allowed'])
  })
})

describe('TOK-11 one authentication method per request (RFC 6749 §2.3)', () => {
  it('TOK-11 an assertion with Basic, or with client_secret → invalid_request (RFC 6749 §5.2)', async () => {
    const ctx = await setup()
    const now = ctx.clock.now()
    const withBasic = await ctx.service.fetch(
      assertionRequest(
        await signAssertion(ctx.key, 'kc', now),
        {},
        { authorization: basic('service', 'service-secret') },
      ),
    )
    const withSecret = await ctx.service.fetch(
      assertionRequest(await signAssertion(ctx.key, 'kc', now), { client_id: 'kc', client_secret: 'x' }),
    )
    for (const response of [withBasic, withSecret]) {
      expect(response.status).toBe(400)
      expect(await errorOf(response)).toEqual({
        error: 'invalid_request',
        error_description: 'use only one client authentication method',
      })
    }
  })

  it('TOK-13 client_assertion without client_assertion_type (or with another) → invalid_client', async () => {
    const ctx = await setup()
    const assertion = await signAssertion(ctx.key, 'kc', ctx.clock.now())
    const missing = await ctx.service.fetch(form(TOKEN, { ...cc, client_assertion: assertion }))
    const other = await ctx.service.fetch(assertionRequest(assertion, { client_assertion_type: 'urn:example:saml' }))
    for (const response of [missing, other]) {
      expect(response.status).toBe(401)
      expect((await errorOf(response)).error_description).toMatch(/^client_assertion_type must be /)
    }
  })
})

describe('throttling and allowedNetworks for private_key_jwt', () => {
  afterEach(() => vi.restoreAllMocks())

  it('forged assertions are throttled per address, never locking the client out elsewhere', async () => {
    const ctx = await setup({ throttle: { clientAuthentication: { perAddress: 5 } } })
    const stranger = await clientKey('ES256', ctx.key.kid)
    const send = async (key: typeof stranger, address: string) =>
      ctx.service.fetch(assertionRequest(await signAssertion(key, 'kc', ctx.clock.now())), { address })
    for (let i = 0; i < 5; i++) expect((await send(stranger, ATTACKER)).status).toBe(401)
    const throttled = await send(ctx.key, ATTACKER)
    expect(throttled.status).toBe(429)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await send(ctx.key, OFFICE)).status).toBe(200)
    expect(ctx.reasons()).toEqual([...Array(5).fill('invalid_assertion'), 'throttled'])
  })

  it('allowedNetworks holds for private_key_jwt', async () => {
    const key = await clientKey('EdDSA')
    const ctx = await keyService([
      { ...keyClient('office', { jwks: { keys: [key.jwk] } }), allowedNetworks: ['198.51.100.0/24'] },
    ])
    const send = async (address: string) =>
      ctx.service.fetch(assertionRequest(await signAssertion(key, 'office', ctx.clock.now())), { address })
    const outside = await send(ATTACKER)
    expect(outside.status).toBe(401)
    expect(await errorOf(outside)).toEqual({
      error: 'invalid_client',
      error_description: 'the client may not authenticate from this network',
    })
    expect((await send(OFFICE)).status).toBe(200)
  })
})
