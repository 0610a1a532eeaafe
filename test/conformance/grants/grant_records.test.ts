/**
 * #39 item 1: every grant is recorded (`Store.grants`, under its family id, the access tokens'
 * `gid`) when its first tokens are issued: at a code redemption and at a device code redemption,
 * with its client, end-user, scopes, resources (RFC 8707), claims request (Core §5.5), session,
 * kind and end; and an end-user's grants are listed by `listBySub`. Run on every store the
 * machine has (memory; PostgreSQL, Redis with their variables).
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { DEVICE_SCOPES, MAIL, approveDevice, ensureDeviceClients, pollOnce, startDevice } from '../../helpers/device.ts'
import { authorizationUrl, authorize, setup } from '../../helpers/flow.ts'
import { RU, clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const MCP = 'https://mcp.example.com/mcp'
const SCOPES = [...DEVICE_SCOPES, { name: 'mcp:tools', audience: MCP }]
const FAMILY_TTL = 7200

/** A confidential client of the code flow; `refresh` gives it the refresh grant. */
function agent(clientId: string, refresh: boolean): ClientRegistration {
  return {
    clientId,
    clientSecret: `${clientId}-secret`,
    permissions: [
      'ept:authorization',
      'ept:token',
      'gt:authorization_code',
      ...(refresh ? ['gt:refresh_token'] : []),
      'rst:code',
      'scp:openid',
      'scp:profile',
      'scp:mcp:tools',
    ],
    redirectUris: [RU],
  }
}

describe.each(STORES)('#39 item 1 grant records on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start() {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const ctx = await setup({ store: opened.store, now: time.now, scopes: SCOPES, refreshTokenFamilyTtl: FAMILY_TTL })
    await ctx.service.clients.ensure(agent('agent', true))
    await ctx.service.clients.ensure(agent('agent-no-refresh', false))
    await ensureDeviceClients(ctx)
    return { ...ctx, store: opened.store, time }
  }

  /** The code flow as `clientId` for `scope` and the MCP resource, with a claims request: the tokens. */
  async function codeFlow(ctx: Awaited<ReturnType<typeof start>>, clientId: string, scope: string) {
    const client: oauth.Client = { client_id: clientId }
    const request = await authorizationUrl(ctx.as, {
      clientId,
      scope,
      extra: { resource: MCP, claims: JSON.stringify({ userinfo: { name: null } }) },
    })
    const callback = await authorize(ctx.browser, request.url)
    const params = oauth.validateAuthResponse(ctx.as, client, callback, request.state as string)
    const auth = oauth.ClientSecretBasic(`${clientId}-secret`)
    const response = await oauth.authorizationCodeGrantRequest(ctx.as, client, auth, params, RU, request.verifier, {
      ...ctx.opts,
    })
    return oauth.processAuthorizationCodeResponse(ctx.as, client, response, { expectedNonce: request.nonce as string })
  }

  it('#39 item 1 a code redemption records the grant under the access token’s gid: client, sub, scopes, resources, claims, sid and the session’s store id; listBySub lists it', async () => {
    const ctx = await start()
    const redeemedAt = ctx.time.now()
    const tokens = await codeFlow(ctx, 'agent', 'openid profile offline_access mcp:tools')
    expect(tokens.refresh_token).toBeTypeOf('string')
    const { gid } = decodeJwt(tokens.access_token) as { gid: string }
    const idToken = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken & { sid: string }
    const grant = await ctx.store.grants.get(gid, ctx.time.now())
    expect(grant).toEqual({
      id: gid,
      clientId: 'agent',
      sub: 'user-1',
      scope: 'openid profile offline_access mcp:tools',
      resources: [MCP],
      claims: { userinfo: ['name'] },
      sid: idToken.sid,
      sessionId: expect.any(String),
      kind: 'authorization_code',
      authTime: idToken.auth_time,
      createdAt: redeemedAt,
      // With a refresh token: the family's absolute end.
      expiresAt: redeemedAt + FAMILY_TTL,
    })
    // sessionId is the store id of the browser session the grant was made in.
    expect((await ctx.store.sessions.get(grant?.sessionId as string))?.sid).toBe(idToken.sid)
    expect(await ctx.store.grants.listBySub('user-1', ctx.time.now())).toEqual([grant])
  })

  it('#39 item 1 without a refresh token the grant ends with the last token issued (access token or ID token)', async () => {
    const ctx = await start()
    const redeemedAt = ctx.time.now()
    const tokens = await codeFlow(ctx, 'agent-no-refresh', 'openid mcp:tools')
    expect(tokens.refresh_token).toBeUndefined()
    const { gid, exp } = decodeJwt(tokens.access_token) as { gid: string; exp: number }
    const idToken = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken
    const grant = await ctx.store.grants.get(gid, ctx.time.now())
    expect(grant).toMatchObject({
      id: gid,
      clientId: 'agent-no-refresh',
      scope: 'openid mcp:tools',
      createdAt: redeemedAt,
    })
    expect(grant?.expiresAt).toBe(Math.max(exp, idToken.exp))
    ctx.time.advance((grant?.expiresAt as number) - ctx.time.now())
    expect(await ctx.store.grants.get(gid, ctx.time.now())).toBeUndefined()
    expect(await ctx.store.grants.listBySub('user-1', ctx.time.now())).toEqual([])
  })

  it('#39 item 1 a device code redemption records the grant: kind device_code, the approver, scopes and resources, no session', async () => {
    const ctx = await start()
    const device = await startDevice(ctx, { scope: 'openid offline_access mail.read', resource: MAIL }, 'tv')
    const approvedAt = ctx.time.now() - 30
    await approveDevice(ctx.store, device.user_code, ctx.time.now(), { sub: 'user-2', authTime: approvedAt })
    const redeemedAt = ctx.time.now()
    const polled = await pollOnce(ctx, device.device_code, 'tv')
    if (!polled.ok) throw new Error(`device redemption failed: ${polled.error}`)
    const { gid } = decodeJwt(polled.tokens.access_token) as { gid: string }
    const grant = await ctx.store.grants.get(gid, ctx.time.now())
    expect(grant).toEqual({
      id: gid,
      clientId: 'tv',
      sub: 'user-2',
      scope: 'openid offline_access mail.read',
      resources: [MAIL],
      kind: 'device_code',
      authTime: approvedAt,
      createdAt: redeemedAt,
      expiresAt: redeemedAt + FAMILY_TTL,
    })
    expect(await ctx.store.grants.listBySub('user-2', ctx.time.now())).toEqual([grant])
    expect(await ctx.store.grants.listBySub('user-1', ctx.time.now())).toEqual([])
  })

  it('#39 item 1 an end-user’s grants from both flows are listed together, each once', async () => {
    const ctx = await start()
    const code = await codeFlow(ctx, 'agent', 'openid offline_access mcp:tools')
    const device = await startDevice(ctx, { scope: 'openid mail.read' }, 'tv')
    await approveDevice(ctx.store, device.user_code, ctx.time.now(), { sub: 'user-1' })
    const polled = await pollOnce(ctx, device.device_code, 'tv')
    if (!polled.ok) throw new Error(`device redemption failed: ${polled.error}`)
    const gids = [code.access_token, polled.tokens.access_token].map(
      (token) => (decodeJwt(token) as { gid: string }).gid,
    )
    const listed = await ctx.store.grants.listBySub('user-1', ctx.time.now())
    expect(listed.map((grant) => grant.id).sort()).toEqual([...gids].sort())
    expect(listed.map((grant) => grant.kind).sort()).toEqual(['authorization_code', 'device_code'])
  })

  it('#39 item 1 a refresh in the family’s last moments extends the grant to the end of the tokens it issued', async () => {
    const ctx = await start()
    const tokens = await codeFlow(ctx, 'agent', 'openid offline_access mcp:tools')
    const { gid } = decodeJwt(tokens.access_token) as { gid: string }
    const familyEnd = (await ctx.store.grants.get(gid, ctx.time.now()))?.expiresAt as number
    ctx.time.advance(familyEnd - 10 - ctx.time.now())
    const client: oauth.Client = { client_id: 'agent' }
    const auth = oauth.ClientSecretBasic('agent-secret')
    const response = await oauth.refreshTokenGrantRequest(
      ctx.as,
      client,
      auth,
      tokens.refresh_token as string,
      ctx.opts,
    )
    const refreshed = await oauth.processRefreshTokenResponse(ctx.as, client, response)
    const accessExp = (decodeJwt(refreshed.access_token) as { exp: number }).exp
    const idExp = (decodeJwt(refreshed.id_token as string) as { exp: number }).exp
    expect(accessExp).toBeGreaterThan(familyEnd)
    expect((await ctx.store.grants.get(gid, ctx.time.now()))?.expiresAt).toBe(Math.max(accessExp, idExp))
    ctx.time.advance(11)
    expect(await ctx.store.grants.get(gid, ctx.time.now())).toMatchObject({ id: gid, clientId: 'agent' })
  })
})

describe('#39 item 1 the grant record costs the code redemption no round trip of its own', () => {
  it('#39 item 1 grants.put is sent while the refresh token is inserted, not after it', async () => {
    const time = clock(Math.floor(Date.now() / 1000))
    const store = createMemoryStore({ now: time.now })
    const events: string[] = []
    const insert = store.refreshTokens.insert.bind(store.refreshTokens)
    store.refreshTokens.insert = async (record) => {
      events.push('refreshTokens.insert sent')
      await new Promise((resolve) => setTimeout(resolve, 20))
      await insert(record)
      events.push('refreshTokens.insert answered')
    }
    const put = store.grants.put.bind(store.grants)
    store.grants.put = async (record) => {
      events.push('grants.put sent')
      await put(record)
    }
    const ctx = await setup({ store, now: time.now })
    const request = await authorizationUrl(ctx.as, { scope: 'openid offline_access' })
    const callback = await authorize(ctx.browser, request.url)
    const params = oauth.validateAuthResponse(ctx.as, { client_id: 'web' }, callback, request.state as string)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      { client_id: 'web' },
      oauth.ClientSecretBasic('web-secret'),
      params,
      RU,
      request.verifier,
      ctx.opts,
    )
    expect(response.status).toBe(200)
    expect(events).toEqual(['refreshTokens.insert sent', 'grants.put sent', 'refreshTokens.insert answered'])
  })
})
