/**
 * #17.9: a client's own tokens are told apart from an end-user's even when the client id equals
 * the user's `sub` (RFC 9068 §5): by the token (`gty`), by introspection, by the resource-server
 * helper (`subjectType`).
 * #17.12: the resource-server helper in introspection mode refuses a revoked token (within its
 * cache time); without it, a JWT is verified locally only and works until it expires.
 */
import { decodeJwt } from 'jose'
import { describe, expect, it } from 'vitest'
import { IssuerUnavailableError, createResourceServer } from '../../src/resource_server/index.ts'
import { setup, signIn } from '../helpers/flow.ts'
import { ISSUER, basic, form } from '../helpers/service.ts'

type Ctx = Awaited<ReturnType<typeof setup>>

/** The helper against the in-process service; `calls` counts requests per path. */
function resourceServer(ctx: Ctx, options: Partial<Parameters<typeof createResourceServer>[0]> = {}) {
  const calls = new Map<string, number>()
  let failing = false
  const api = createResourceServer({
    issuer: ISSUER,
    audience: 'api1',
    now: ctx.clock.now,
    fetch: async (url, init) => {
      const path = new URL(url).pathname
      calls.set(path, (calls.get(path) ?? 0) + 1)
      if (failing && path === '/connect/introspect') throw new TypeError('fetch failed')
      return ctx.service.fetch(new Request(url, init))
    },
    ...options,
  })
  return {
    api,
    introspections: () => calls.get('/connect/introspect') ?? 0,
    fail(value: boolean) {
      failing = value
    },
  }
}

async function ccToken(ctx: Ctx, id = 'service', secret = 'service-secret'): Promise<string> {
  const response = await ctx.service.fetch(
    form(
      `${ISSUER}/connect/token`,
      { grant_type: 'client_credentials', scope: 'api1' },
      { authorization: basic(id, secret) },
    ),
  )
  expect(response.status).toBe(200)
  return ((await response.json()) as { access_token: string }).access_token
}

async function introspect(ctx: Ctx, token: string): Promise<Record<string, unknown>> {
  const response = await ctx.service.fetch(
    form(`${ISSUER}/connect/introspect`, { token }, { authorization: basic('api1', 'api1-secret') }),
  )
  return (await response.json()) as Record<string, unknown>
}

describe('#17.9 a client whose id equals a user sub', () => {
  it('#17.9 its client-credentials token and the user token are told apart by gty, introspection and the helper', async () => {
    const ctx = await setup()
    // alice's sub is user-1: register a client with exactly that id
    await ctx.service.clients.ensure({
      clientId: 'user-1',
      clientSecret: 'user-1-client-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
    })
    const client = await ccToken(ctx, 'user-1', 'user-1-client-secret')
    const user = (await signIn(ctx, { scope: 'openid api1' })).result.access_token
    expect(decodeJwt(client).sub).toBe('user-1')
    expect(decodeJwt(user).sub).toBe('user-1')

    expect(decodeJwt(client).gty).toBe('client_credentials')
    expect(decodeJwt(user).gty).toBeUndefined()
    expect((await introspect(ctx, client)).gty).toBe('client_credentials')
    const userInfo = await introspect(ctx, user)
    expect(userInfo.active).toBe(true)
    expect(userInfo.gty).toBeUndefined()

    const { api } = resourceServer(ctx)
    const asClient = await api.verify(client)
    const asUser = await api.verify(user)
    expect(asClient.ok && asClient.subjectType).toBe('client')
    expect(asUser.ok && asUser.subjectType).toBe('user')
  })
})

describe('#17.12 the resource-server helper and revocation', () => {
  async function revoke(ctx: Ctx, token: string): Promise<void> {
    const response = await ctx.service.fetch(
      form(`${ISSUER}/connect/revoke`, { token }, { authorization: basic('service', 'service-secret') }),
    )
    expect(response.status).toBe(200)
  }

  it('#17.12 JWT-only mode (the default) still accepts a revoked token until it expires, as documented', async () => {
    const ctx = await setup()
    const { api, introspections } = resourceServer(ctx)
    const token = await ccToken(ctx)
    await revoke(ctx, token)
    expect((await api.verify(token)).ok).toBe(true)
    expect(introspections()).toBe(0)
  })

  it('#17.12 introspection mode refuses a revoked token once the cached answer is older than cacheTtl', async () => {
    const ctx = await setup()
    const { api, introspections } = resourceServer(ctx, {
      introspection: { clientId: 'api1', clientSecret: 'api1-secret', cacheTtl: 5 },
    })
    const token = await ccToken(ctx)
    expect((await api.verify(token)).ok).toBe(true)
    expect((await api.verify(token)).ok).toBe(true)
    expect(introspections()).toBe(1) // the second answer came from the cache
    await revoke(ctx, token)
    ctx.clock.advance(6)
    const refused = await api.verify(token)
    expect(refused.ok).toBe(false)
    if (refused.ok) return
    expect(refused.error).toBe('invalid_token')
    expect(refused.response.status).toBe(401)
    expect(refused.description).not.toContain(token)
    ctx.clock.advance(6)
    expect((await api.verify(token)).ok).toBe(false)
  })

  it('#17.12 cacheTtl 0 asks every time: a revocation takes effect at once', async () => {
    const ctx = await setup()
    const { api, introspections } = resourceServer(ctx, {
      introspection: { clientId: 'api1', clientSecret: 'api1-secret', cacheTtl: 0 },
    })
    const token = await ccToken(ctx)
    expect((await api.verify(token)).ok).toBe(true)
    await revoke(ctx, token)
    expect((await api.verify(token)).ok).toBe(false)
    expect(introspections()).toBe(2)
  })

  it('#17.12 the cache is bounded by cacheMax (the oldest answer goes first)', async () => {
    const ctx = await setup()
    const { api, introspections } = resourceServer(ctx, {
      introspection: { clientId: 'api1', clientSecret: 'api1-secret', cacheTtl: 60, cacheMax: 2 },
    })
    const tokens = [await ccToken(ctx), await ccToken(ctx), await ccToken(ctx)]
    for (const token of tokens) expect((await api.verify(token)).ok).toBe(true)
    expect(introspections()).toBe(3)
    expect((await api.verify(tokens[2] as string)).ok).toBe(true)
    expect(introspections()).toBe(3) // newest still cached
    expect((await api.verify(tokens[0] as string)).ok).toBe(true)
    expect(introspections()).toBe(4) // the oldest was dropped
  })

  it('#17.12 an introspection endpoint that cannot answer never accepts: verify rejects, protect answers 503', async () => {
    const ctx = await setup()
    const rs = resourceServer(ctx, { introspection: { clientId: 'api1', clientSecret: 'api1-secret', cacheTtl: 0 } })
    const token = await ccToken(ctx)
    rs.fail(true)
    await expect(rs.api.verify(token)).rejects.toBeInstanceOf(IssuerUnavailableError)
    const handler = rs.api.protect(() => new Response('secret data'))
    const response = await handler(
      new Request('https://api.example.test/', { headers: { authorization: `Bearer ${token}` } }),
    )
    expect(response.status).toBe(503)
    expect(await response.text()).not.toContain('secret data')
    // wrong credentials are a failure too, not an acceptance
    const wrong = resourceServer(ctx, {
      introspection: { clientId: 'api1', clientSecret: 'wrong-secret', cacheTtl: 0 },
    })
    await expect(wrong.api.verify(token)).rejects.toBeInstanceOf(IssuerUnavailableError)
  })
})
