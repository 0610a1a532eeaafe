/**
 * INT-03 INT-07: expired, tampered, foreign, revoked and malformed tokens are exactly
 * {"active":false}, with 200, never an error.
 */
import { SignJWT, decodeJwt, decodeProtectedHeader, importJWK } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { createTokenService } from '../../../src/index.ts'
import { ISSUER, basic, discover, form, inProcess, makeService } from '../../helpers/service.ts'

type Service = Awaited<ReturnType<typeof makeService>>['service']

async function ccToken(service: Service, clientId = 'service', secret = 'service-secret'): Promise<string> {
  const as = await discover(service.fetch, service.issuer)
  const client = { client_id: clientId }
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic(secret),
    { scope: 'api1' },
    inProcess(service.fetch),
  )
  return (await oauth.processClientCredentialsResponse(as, client, response)).access_token
}

async function setup() {
  const { service, clock } = await makeService()
  const as = await discover(service.fetch)
  return { service, clock, as, token: await ccToken(service) }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** Introspects as `service` (the issuing client) through oauth4webapi; returns status, text and parsed result. */
async function introspect(ctx: Setup, token: string) {
  const client = { client_id: 'service' }
  const response = await oauth.introspectionRequest(
    ctx.as,
    client,
    oauth.ClientSecretBasic('service-secret'),
    token,
    inProcess(ctx.service.fetch),
  )
  const raw = response.clone()
  const result = await oauth.processIntrospectionResponse(ctx.as, client, response)
  return { status: raw.status, text: await raw.text(), result }
}

async function expectInactive(ctx: Setup, token: string) {
  const { status, text, result } = await introspect(ctx, token)
  expect(status).toBe(200)
  expect(text).toBe('{"active":false}')
  expect(result).toEqual({ active: false })
}

function swap(token: string, index: number, replacement: string): string {
  const parts = token.split('.')
  parts[index] = replacement
  return parts.join('.')
}

describe('introspection of inactive tokens', () => {
  it('INT-03: an expired token → {"active":false}; one second earlier it was active', async () => {
    const ctx = await setup()
    const { exp } = decodeJwt(ctx.token)
    ctx.clock.set((exp as number) - 1)
    expect((await introspect(ctx, ctx.token)).result).toMatchObject({ active: true })
    ctx.clock.set(exp as number)
    await expectInactive(ctx, ctx.token)
    ctx.clock.advance(86_400)
    await expectInactive(ctx, ctx.token)
  })

  it('INT-03: a token with a tampered signature → {"active":false}', async () => {
    const ctx = await setup()
    const signature = ctx.token.split('.')[2] as string
    const middle = Math.floor(signature.length / 2)
    const flipped = signature.slice(0, middle) + (signature[middle] === 'A' ? 'B' : 'A') + signature.slice(middle + 1)
    await expectInactive(ctx, swap(ctx.token, 2, flipped))
  })

  it('INT-03: a token with a tampered payload (scope escalation) → {"active":false}', async () => {
    const ctx = await setup()
    const payload = { ...decodeJwt(ctx.token), scope: 'api1 admin', exp: ctx.clock.now() + 999_999 }
    await expectInactive(ctx, swap(ctx.token, 1, Buffer.from(JSON.stringify(payload)).toString('base64url')))
  })

  it('INT-03: a token from another service (same issuer string, other keys) → {"active":false}', async () => {
    const ctx = await setup()
    const { service: other } = await makeService()
    const foreign = await ccToken(other)
    expect(decodeJwt(foreign).iss).toBe(ISSUER)
    await expectInactive(ctx, foreign)
  })

  it('INT-03: a token signed with our very keys but another issuer → {"active":false}', async () => {
    const ctx = await setup()
    const other = createTokenService({
      issuer: 'https://other.example.test',
      store: ctx.service.store,
      now: ctx.clock.now,
      secretHashIterations: 1000,
      logger: { warn() {}, error() {} },
    })
    await other.ready()
    const token = await ccToken(other)
    expect(decodeProtectedHeader(token).kid).toBe(decodeProtectedHeader(ctx.token).kid)
    await expectInactive(ctx, token)
  })

  it('INT-03: a JWT signed with our access-token key but typed JWT, not at+jwt → {"active":false}', async () => {
    const ctx = await setup()
    const { kid } = decodeProtectedHeader(ctx.token)
    const record = (await ctx.service.store.keys.list()).find((k) => k.kid === kid)
    if (!record) throw new Error('signing key not in store')
    const key = await importJWK(record.privateJwk, record.alg)
    const token = await new SignJWT(decodeJwt(ctx.token))
      .setProtectedHeader({ alg: record.alg, kid, typ: 'JWT' })
      .sign(key)
    await expectInactive(ctx, token)
  })

  it('INT-03: an unsigned (alg none) copy → {"active":false}', async () => {
    const ctx = await setup()
    const header = Buffer.from(JSON.stringify({ ...decodeProtectedHeader(ctx.token), alg: 'none' })).toString(
      'base64url',
    )
    const [, payload] = ctx.token.split('.')
    await expectInactive(ctx, `${header}.${payload}.`)
    await expectInactive(ctx, `${header}.${payload}.AAAA`)
  })

  it('INT-03: an HS256 token keyed with our public key (algorithm confusion) → {"active":false}', async () => {
    const ctx = await setup()
    const { kid } = decodeProtectedHeader(ctx.token)
    const record = (await ctx.service.store.keys.list()).find((k) => k.kid === kid)
    if (!record) throw new Error('signing key not in store')
    const secret = new TextEncoder().encode(JSON.stringify(record.publicJwk))
    const token = await new SignJWT(decodeJwt(ctx.token))
      .setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' })
      .sign(secret)
    await expectInactive(ctx, token)
  })

  it.each([
    ['a numeric kid', { alg: 'ES256', kid: 123, typ: 'at+jwt' }],
    ['an object kid', { alg: 'ES256', kid: { a: 1 }, typ: 'at+jwt' }],
    ['a __proto__ kid', { alg: 'ES256', kid: '__proto__', typ: 'at+jwt' }],
    ['no kid', { alg: 'ES256', typ: 'at+jwt' }],
    ['a null header', null],
    ['a crit header', { alg: 'ES256', kid: 'x', typ: 'at+jwt', crit: ['exp'] }],
  ])('INT-03: a JWT-shaped token with %s → {"active":false}', async (_, header) => {
    const ctx = await setup()
    const [, payload, signature] = ctx.token.split('.')
    const encoded = Buffer.from(JSON.stringify(header)).toString('base64url')
    await expectInactive(ctx, `${encoded}.${payload}.${signature}`)
  })

  it.each([
    ['garbage', 'garbage'],
    ['a header that is not JSON', `${Buffer.from('not json').toString('base64url')}.e30.AAAA`],
    ['three dots of nothing', 'a.b.c'],
    ['a JWT missing its signature', 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0'],
    ['base64 with padding', 'YWJj=='],
    ['a UUID', '3f2504e0-4f89-11d3-9a0c-0305e82c3301'],
    ['non-ASCII', 'ťøķëñ'],
    ['whitespace inside', 'abc def'],
    ['a JSON document', '{"active":true}'],
  ])('INT-03: %s → {"active":false}', async (_, token) => {
    const ctx = await setup()
    await expectInactive(ctx, token)
  })

  it('INT-07: a token revoked at the revocation endpoint is inactive at once', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      form(
        ctx.service.endpoints.revocation,
        { token: ctx.token },
        { authorization: basic('service', 'service-secret') },
      ),
    )
    expect(response.status).toBe(200)
    await expectInactive(ctx, ctx.token)
  })

  it('INT-07: a jti on the store’s denylist is inactive; another token of the client stays active', async () => {
    const ctx = await setup()
    const other = await ccToken(ctx.service)
    const { jti, exp } = decodeJwt(ctx.token)
    await ctx.service.store.revocations.revokeAccessToken(jti as string, exp as number)
    await expectInactive(ctx, ctx.token)
    expect((await introspect(ctx, other)).result).toMatchObject({ active: true })
  })
})
