/**
 * #45 resource authorization server side: how an ID-JAG's user maps to an account here (email,
 * sub, the host's findAccount hook; an account that does not resolve is invalid_grant), the
 * token's scope (the ID-JAG's ∩ the request's ∩ the client's `scp:` permissions) and audience,
 * discovery, and the opt-in refresh token (a real grant: listed, revocable). Runs on memory, and
 * on PostgreSQL / Redis / SQLite where available.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import type { IdentityAssertionAccountQuery } from '../../../src/index.ts'
import { discover } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import {
  IDP,
  type JagCtx,
  JWT_BEARER,
  MCP,
  MCP_CLIENT,
  accessClaims,
  idpKey,
  jagService,
  redeem,
  signIdJag,
} from './jwt_bearer_fixtures.ts'

describe.each(STORES)('#45 jwt-bearer grant with an ID-JAG: accounts, scope, discovery ($name store)', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start(setup: Parameters<typeof jagService>[1] = {}): Promise<JagCtx> {
    opened = await kind.create(() => Math.floor(Date.now() / 1000))
    return jagService(opened.store, setup)
  }

  it('#45 email mapping (the default): case-insensitive; an email no account has, or none → invalid_grant', async () => {
    const ctx = await start()
    const now = ctx.time.now()
    const upper = await redeem(ctx, await signIdJag(ctx.key, now, { email: 'Alice@Example.com' }))
    expect(accessClaims(upper.body).sub).toBe('user-1')
    for (const email of ['mallory@example.com', undefined]) {
      const { body } = await redeem(ctx, await signIdJag(ctx.key, now, { email }))
      expect(body.error).toBe('invalid_grant')
      expect(String(body.error_description)).toMatch(/no account here|no email/)
    }
  })

  it("#45 sub mapping: the ID-JAG's sub is the account's; an unknown sub → invalid_grant", async () => {
    const key = await idpKey()
    const subCtx = await start({
      key,
      issuers: [{ issuer: IDP, jwks: { keys: [key.jwk as never] }, accountClaim: 'sub' }],
    })
    const now = subCtx.time.now()
    const ok = await redeem(subCtx, await signIdJag(subCtx.key, now, { sub: 'user-2', email: 'alice@example.com' }))
    expect(accessClaims(ok.body).sub).toBe('user-2')
    const { body } = await redeem(subCtx, await signIdJag(subCtx.key, now, { sub: 'idp-alice' }))
    expect(body).toMatchObject({
      error: 'invalid_grant',
      error_description: "the assertion's user has no account here",
    })
  })

  it('#45 the findAccount hook maps users (it sees issuer, sub, email, claims); undefined or an account that does not exist → invalid_grant', async () => {
    const queries: IdentityAssertionAccountQuery[] = []
    const ctx = await start({
      options: {
        identityAssertion: {
          findAccount: ({ issuer, sub, email, claims }) => {
            queries.push({ issuer, sub, ...(email ? { email } : {}), claims })
            return sub === 'idp-bob' ? 'user-2' : sub === 'idp-ghost' ? 'user-404' : undefined
          },
        },
      },
    })
    const now = ctx.time.now()
    const ok = await redeem(ctx, await signIdJag(ctx.key, now, { sub: 'idp-bob' }))
    expect(accessClaims(ok.body).sub).toBe('user-2')
    expect(queries[0]).toMatchObject({ issuer: IDP, sub: 'idp-bob', email: 'alice@example.com' })
    expect(queries[0]?.claims).toMatchObject({ client_id: MCP_CLIENT.clientId, aud: 'https://auth.example.test' })
    for (const sub of ['idp-alice', 'idp-ghost']) {
      expect((await redeem(ctx, await signIdJag(ctx.key, now, { sub }))).body.error).toBe('invalid_grant')
    }
  })

  it("#45 scope: the ID-JAG's ∩ the request's ∩ the client's scp: permissions; outside → invalid_scope", async () => {
    const ctx = await start()
    const now = ctx.time.now()
    // mcp:admin is not the client's, profile not a scope it may use, made:up unknown.
    const wide = { scope: 'mcp:tools mcp:admin api1 profile made:up offline_access', resource: undefined }
    const all = await redeem(ctx, await signIdJag(ctx.key, now, wide))
    expect(all.body.scope).toBe('mcp:tools api1')
    expect(accessClaims(all.body).aud).toEqual(expect.arrayContaining([MCP, 'api1']))
    const narrowed = await redeem(ctx, await signIdJag(ctx.key, now, wide), { scope: 'mcp:tools' })
    expect(narrowed.body.scope).toBe('mcp:tools')
    expect(accessClaims(narrowed.body).aud).toBe(MCP)
    for (const scope of ['mcp:admin', 'profile', 'openid']) {
      expect((await redeem(ctx, await signIdJag(ctx.key, now, wide), { scope })).body.error).toBe('invalid_scope')
    }
    // An ID-JAG with no scope the client may use, or none at all: nothing to grant.
    for (const scope of ['mcp:admin', undefined]) {
      expect((await redeem(ctx, await signIdJag(ctx.key, now, { scope }))).body.error).toBe('invalid_scope')
    }
  })

  it("#45 resource: the ID-JAG's resource is the token's aud and keeps only its scopes; a request naming it is accepted", async () => {
    const ctx = await start()
    const now = ctx.time.now()
    const jag = { scope: 'mcp:tools api1', resource: MCP }
    const { body } = await redeem(ctx, await signIdJag(ctx.key, now, jag))
    expect({ scope: body.scope, aud: accessClaims(body).aud }).toEqual({ scope: 'mcp:tools', aud: MCP })
    const named = await redeem(ctx, await signIdJag(ctx.key, now, jag), { resource: MCP })
    expect(accessClaims(named.body).aud).toBe(MCP)
  })

  it('#45 discovery lists the jwt-bearer grant only while an issuer is configured; without one the grant_type is unsupported', async () => {
    const ctx = await start()
    const as = await discover(ctx.service.fetch)
    expect(as.grant_types_supported).toContain(JWT_BEARER)
    await opened?.dispose()
    opened = await kind.create(() => Math.floor(Date.now() / 1000))
    const none = await jagService(opened.store, { issuers: [] })
    expect((await discover(none.service.fetch)).grant_types_supported).not.toContain(JWT_BEARER)
    const { body } = await redeem(none, await signIdJag(none.key, none.time.now()))
    expect(body.error).toBe('unsupported_grant_type')
  })

  it('#45 no ID token from the jwt-bearer grant (no authentication here, RFC 7523 grants an access token): openid is not granted, refreshTokens off or on, nor at refresh', async () => {
    const oidc = { ...MCP_CLIENT, clientId: 'mcp-oidc-client', permissions: [...MCP_CLIENT.permissions, 'scp:openid'] }
    const auth = oauth.ClientSecretBasic(oidc.clientSecret)
    const jag = { client_id: oidc.clientId, scope: 'openid mcp:tools', resource: undefined }
    for (const refreshTokens of [false, true]) {
      const ctx = await start({ options: { identityAssertion: { refreshTokens } } })
      await ctx.service.clients.ensure(oidc)
      const { status, body } = await redeem(ctx, await signIdJag(ctx.key, ctx.time.now(), jag), {}, oidc)
      expect({ status, scope: body.scope, id_token: body.id_token }).toEqual({ status: 200, scope: 'mcp:tools' })
      expect(accessClaims(body).scope).toBe('mcp:tools')
      expect(typeof body.refresh_token).toBe(refreshTokens ? 'string' : 'undefined')
      if (refreshTokens) {
        const client = { client_id: oidc.clientId }
        const refreshed = await oauth.refreshTokenGrantRequest(
          ctx.as,
          client,
          auth,
          String(body.refresh_token),
          ctx.opts,
        )
        const next = (await refreshed.json()) as Record<string, unknown>
        expect({ status: refreshed.status, scope: next.scope, id_token: next.id_token }).toEqual({
          status: 200,
          scope: 'mcp:tools',
        })
      }
      // Asking for openid explicitly: outside what this grant gives.
      const asked = await redeem(ctx, await signIdJag(ctx.key, ctx.time.now(), jag), { scope: 'openid' }, oidc)
      expect(asked.body.error).toBe('invalid_scope')
      await opened?.dispose()
      opened = undefined
    }
  })

  it('#45 refreshTokens: true issues a refresh token whose grant is listed, refreshes, and dies with the grant', async () => {
    const ctx = await start({ options: { identityAssertion: { refreshTokens: true } } })
    const { body } = await redeem(ctx, await signIdJag(ctx.key, ctx.time.now()))
    expect(typeof body.refresh_token).toBe('string')
    expect(body.id_token).toBeUndefined()
    const grantId = String(body.grant_id)
    expect(accessClaims(body).gid).toBe(grantId)
    const listed = await ctx.service.grants.list('user-1', { clientId: MCP_CLIENT.clientId })
    expect(listed.map((grant) => grant.id)).toEqual([grantId])
    const client = { client_id: MCP_CLIENT.clientId }
    const auth = oauth.ClientSecretBasic(MCP_CLIENT.clientSecret)
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      client,
      await oauth.refreshTokenGrantRequest(ctx.as, client, auth, String(body.refresh_token), ctx.opts),
    )
    expect(refreshed.scope).toBe('mcp:tools')
    expect(await ctx.service.grants.revoke(grantId)).toBe(true)
    const after = await oauth.refreshTokenGrantRequest(ctx.as, client, auth, String(refreshed.refresh_token), ctx.opts)
    expect(after.status).toBe(400)
    const introspected = await oauth.introspectionRequest(ctx.as, client, auth, String(body.access_token), ctx.opts)
    expect((await oauth.processIntrospectionResponse(ctx.as, client, introspected)).active).toBe(false)
  })
})
