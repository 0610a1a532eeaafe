/**
 * #42 items 1 and 4: Grant Management for OAuth 2.0 (oauth-v2-grant-management-03), the parts a
 * client uses at the authorization endpoint and PAR: `grant_management_action` create | merge |
 * replace with `grant_id` (§5.2), its errors (§5.4), `grant_id` in every user grant's token
 * response (§5.5), the refresh tokens of a grant's earlier revision refused after a merge or
 * replace, and the grant's last use recorded by refreshes, to the minute. Over HTTP with
 * oauth4webapi as the client, on every store the machine has (memory; PostgreSQL with DATABASE_URL).
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { Browser } from '../../helpers/browser.ts'
import { approveDevice, ensureDeviceClients, pollOnce, startDevice } from '../../helpers/device.ts'
import {
  authorizationUrl,
  authorize,
  expectErrorRedirect,
  redeemCallback,
  setup,
  webAuth,
  webClient,
} from '../../helpers/flow.ts'
import { RU, clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import { IDT, exchange, start as startExchange } from './token_exchange_fixtures.ts'

const BOB = { username: 'bob', password: 'bob-password' }

describe.each(STORES)('#42 item 4 grant management actions on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start() {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const ctx = await setup({ store: opened.store, now: time.now })
    return { ...ctx, store: opened.store, time }
  }
  type Ctx = Awaited<ReturnType<typeof start>>

  /** The code flow of `web` in the context's browser (signed in as alice when asked): the raw token response. */
  async function codeFlow(ctx: Ctx, scope: string, extra: Record<string, string> = {}) {
    const request = await authorizationUrl(ctx.as, { scope, extra })
    const callback = await authorize(ctx.browser, request.url)
    const { response } = await redeemCallback(ctx, callback, request)
    return { response, nonce: request.nonce as string }
  }

  /** The code flow, processed by oauth4webapi: the tokens and the body as sent. */
  async function tokensOf(ctx: Ctx, scope: string, extra: Record<string, string> = {}) {
    const { response, nonce } = await codeFlow(ctx, scope, extra)
    const body = (await response.clone().json()) as Record<string, unknown>
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: nonce,
      requireIdToken: scope.split(' ').includes('openid'),
    })
    return { tokens, body }
  }

  function refresh(ctx: Ctx, refreshToken: string): Promise<Response> {
    return oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, refreshToken, ctx.opts)
  }

  /** An authorization request answered by an error redirect: its callback URL. */
  async function refused(ctx: Ctx, extra: Record<string, string>, browser = ctx.browser) {
    const request = await authorizationUrl(ctx.as, { scope: 'openid profile', extra })
    return { callback: await authorize(browser, request.url), state: request.state }
  }

  it('#42 item 4: create answers grant_id, the access token’s gid, and the store records that grant', async () => {
    const ctx = await start()
    const { tokens, body } = await tokensOf(ctx, 'openid profile offline_access', { grant_management_action: 'create' })
    const { gid } = decodeJwt(tokens.access_token) as { gid: string }
    expect(body.grant_id).toBe(gid)
    expect(tokens.grant_id).toBe(gid)
    expect(await ctx.store.grants.get(gid, ctx.time.now())).toMatchObject({
      id: gid,
      clientId: 'web',
      sub: 'user-1',
      scope: 'openid profile offline_access',
    })
  })

  it('#42 item 4: merge adds the approved scopes to the same grant_id (token response and store record); the earlier refresh token is refused', async () => {
    const ctx = await start()
    const first = await tokensOf(ctx, 'openid profile offline_access', { grant_management_action: 'create' })
    const grantId = first.body.grant_id as string
    const merged = await tokensOf(ctx, 'openid email', { grant_management_action: 'merge', grant_id: grantId })
    expect(merged.body.grant_id).toBe(grantId)
    expect((decodeJwt(merged.tokens.access_token) as { gid: string }).gid).toBe(grantId)
    expect((merged.tokens.scope ?? '').split(' ').sort()).toEqual(['email', 'offline_access', 'openid', 'profile'])
    const record = await ctx.store.grants.get(grantId, ctx.time.now())
    expect(record?.scope.split(' ').sort()).toEqual(['email', 'offline_access', 'openid', 'profile'])
    expect(record).toMatchObject({ id: grantId, clientId: 'web', sub: 'user-1', revision: 1 })
    expect(await ctx.store.grants.listBySub('user-1', ctx.time.now())).toHaveLength(1)
    // §5.2: the merge "shall invalidate existing refresh tokens associated with the updated grant".
    const old = await refresh(ctx, first.tokens.refresh_token as string)
    expect(old.status).toBe(400)
    expect(await old.json()).toMatchObject({ error: 'invalid_grant' })
    const next = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await refresh(ctx, merged.tokens.refresh_token as string),
    )
    expect(next.grant_id).toBe(grantId)
    expect((next.scope ?? '').split(' ').sort()).toEqual(['email', 'offline_access', 'openid', 'profile'])
    // The rotated refresh token keeps the merged revision: it refreshes again (and again).
    const twice = await refresh(ctx, next.refresh_token as string)
    expect(twice.status).toBe(200)
    const thrice = await refresh(ctx, ((await twice.json()) as { refresh_token: string }).refresh_token)
    expect(thrice.status).toBe(200)
  })

  it('#42 item 4: replace swaps the grant’s permissions under the same grant_id; the old refresh token is refused while the new one works', async () => {
    const ctx = await start()
    const first = await tokensOf(ctx, 'openid profile offline_access', { grant_management_action: 'create' })
    const grantId = first.body.grant_id as string
    const replaced = await tokensOf(ctx, 'openid email offline_access', {
      grant_management_action: 'replace',
      grant_id: grantId,
    })
    expect(replaced.body.grant_id).toBe(grantId)
    expect(replaced.tokens.scope).toBe('openid email offline_access')
    expect(await ctx.store.grants.get(grantId, ctx.time.now())).toMatchObject({
      id: grantId,
      scope: 'openid email offline_access',
      revision: 1,
    })
    const old = await refresh(ctx, first.tokens.refresh_token as string)
    expect(old.status).toBe(400)
    expect(await old.json()).toMatchObject({ error: 'invalid_grant' })
    const next = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await refresh(ctx, replaced.tokens.refresh_token as string),
    )
    expect(next.grant_id).toBe(grantId)
    expect(next.scope).toBe('openid email offline_access')
    // The rotated one refreshes again: it belongs to the replaced grant's revision.
    const rotated = await refresh(ctx, next.refresh_token as string)
    expect(rotated.status).toBe(200)
    const live = ((await rotated.json()) as { refresh_token: string }).refresh_token
    // A second replace ends the first replace's refresh tokens in turn.
    const again = await tokensOf(ctx, 'openid profile offline_access', {
      grant_management_action: 'replace',
      grant_id: grantId,
    })
    expect(again.body.grant_id).toBe(grantId)
    const stale = await refresh(ctx, live)
    expect(stale.status).toBe(400)
    expect((await ctx.store.grants.get(grantId, ctx.time.now()))?.revision).toBe(2)
  })

  it('#42 item 4: invalid_grant_id at the redirect URI for an unknown grant, another client’s, a revoked one, and another end-user’s', async () => {
    const ctx = await start()
    const unknown = await refused(ctx, { grant_management_action: 'merge', grant_id: 'AAAAAAAAAAAAAAAAAAAAAA' })
    expectErrorRedirect(unknown.callback, RU, 'invalid_grant_id', unknown.state)

    // Another client's grant (web2's, same end-user).
    const web2: oauth.Client = { client_id: 'web2' }
    const other = await authorizationUrl(ctx.as, {
      clientId: 'web2',
      redirectUri: 'https://rp2.example.test/cb',
      scope: 'openid',
    })
    const otherCallback = await authorize(ctx.browser, other.url)
    const { response: otherResponse } = await redeemCallback(ctx, otherCallback, other, {
      client: web2,
      auth: oauth.ClientSecretBasic('web2-secret'),
      redirectUri: 'https://rp2.example.test/cb',
    })
    const foreignId = ((await otherResponse.json()) as { grant_id: string }).grant_id
    expect(foreignId).toBeTypeOf('string')
    const foreign = await refused(ctx, { grant_management_action: 'replace', grant_id: foreignId })
    expectErrorRedirect(foreign.callback, RU, 'invalid_grant_id', foreign.state)

    // A revoked grant of this client.
    const own = await tokensOf(ctx, 'openid offline_access', { grant_management_action: 'create' })
    const ownId = own.body.grant_id as string
    await ctx.store.revocations.revokeFamily(ownId, ctx.time.now() + 3600)
    const revoked = await refused(ctx, { grant_management_action: 'merge', grant_id: ownId })
    expectErrorRedirect(revoked.callback, RU, 'invalid_grant_id', revoked.state)

    // §5.4: the signed-in end-user must be the grant's (bob signs in for alice's grant).
    const live = await tokensOf(ctx, 'openid offline_access', { grant_management_action: 'create' })
    const bobs = new Browser(ctx.service.fetch)
    const request = await authorizationUrl(ctx.as, {
      scope: 'openid profile',
      extra: { grant_management_action: 'merge', grant_id: live.body.grant_id as string },
    })
    const bobCallback = await authorize(bobs, request.url, BOB)
    expectErrorRedirect(bobCallback, RU, 'invalid_grant_id', request.state)
    expect((await ctx.store.grants.get(live.body.grant_id as string, ctx.time.now()))?.scope).toBe(
      'openid offline_access',
    )
  })

  it('#42 item 4: a merge code redeemed after its grant was revoked is invalid_grant, and the grant is left as it was', async () => {
    const ctx = await start()
    const first = await tokensOf(ctx, 'openid offline_access', { grant_management_action: 'create' })
    const grantId = first.body.grant_id as string
    const request = await authorizationUrl(ctx.as, {
      scope: 'openid profile',
      extra: { grant_management_action: 'merge', grant_id: grantId },
    })
    const callback = await authorize(ctx.browser, request.url)
    await ctx.store.revocations.revokeFamily(grantId, ctx.time.now() + 3600)
    const { response } = await redeemCallback(ctx, callback, request)
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_grant' })
    expect(await ctx.store.revocations.isFamilyRevoked(grantId)).toBe(true)
    expect(await ctx.store.grants.get(grantId, ctx.time.now())).toMatchObject({ scope: 'openid offline_access' })
    expect((await ctx.store.grants.get(grantId, ctx.time.now()))?.revision).toBeUndefined()
  })

  it('#42 item 4: grant_id is in refresh and device code token responses (the grant of the tokens)', async () => {
    const ctx = await start()
    const { tokens } = await tokensOf(ctx, 'openid offline_access')
    const { gid } = decodeJwt(tokens.access_token) as { gid: string }
    expect(tokens.grant_id).toBe(gid)
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await refresh(ctx, tokens.refresh_token as string),
    )
    expect(refreshed.grant_id).toBe(gid)

    await ensureDeviceClients(ctx)
    const device = await startDevice(ctx, { scope: 'openid offline_access' }, 'tv')
    await approveDevice(ctx.store, device.user_code, ctx.time.now(), { sub: 'user-1' })
    const polled = await pollOnce(ctx, device.device_code, 'tv')
    if (!polled.ok) throw new Error(`device redemption failed: ${polled.error}`)
    const deviceGid = (decodeJwt(polled.tokens.access_token) as { gid: string }).gid
    expect(polled.tokens.grant_id).toBe(deviceGid)
    expect(await ctx.store.grants.get(deviceGid, ctx.time.now())).toMatchObject({ kind: 'device_code' })
  })

  it('#42 item 4: a refresh 60 s or more after the grant’s last recorded use sets lastUsedAt; a rapid one writes nothing', async (test) => {
    const ctx = await start()
    if (!ctx.store.grants.touch) return test.skip() // this store has no grants.touch yet
    const { tokens } = await tokensOf(ctx, 'openid offline_access')
    const grantId = tokens.grant_id as string
    ctx.time.advance(30)
    const rapid = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await refresh(ctx, tokens.refresh_token as string),
    )
    expect((await ctx.store.grants.get(grantId, ctx.time.now()))?.lastUsedAt).toBeUndefined()
    // 30 s later: 60 s after the last recorded use (the grant's creation), though the generation is 30 s old.
    ctx.time.advance(30)
    const later = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await refresh(ctx, rapid.refresh_token as string),
    )
    const usedAt = ctx.time.now()
    expect((await ctx.store.grants.get(grantId, ctx.time.now()))?.lastUsedAt).toBe(usedAt)
    ctx.time.advance(59)
    const soon = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await refresh(ctx, later.refresh_token as string),
    )
    expect((await ctx.store.grants.get(grantId, ctx.time.now()))?.lastUsedAt).toBe(usedAt)
    ctx.time.advance(1)
    await oauth.processRefreshTokenResponse(ctx.as, webClient, await refresh(ctx, soon.refresh_token as string))
    expect((await ctx.store.grants.get(grantId, ctx.time.now()))?.lastUsedAt).toBe(ctx.time.now())
  })

  it('#42 item 4: PAR carries grant_management_action and grant_id (a pushed merge), and refuses an unknown grant_id as JSON', async () => {
    const ctx = await start()
    const first = await tokensOf(ctx, 'openid profile offline_access', { grant_management_action: 'create' })
    const grantId = first.body.grant_id as string
    const verifier = oauth.generateRandomCodeVerifier()
    const params = new URLSearchParams({
      response_type: 'code',
      redirect_uri: RU,
      scope: 'openid email',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      grant_management_action: 'merge',
      grant_id: grantId,
    })
    const pushed = await oauth.processPushedAuthorizationResponse(
      ctx.as,
      webClient,
      await oauth.pushedAuthorizationRequest(ctx.as, webClient, webAuth, params, ctx.opts),
    )
    const url = new URL(ctx.as.authorization_endpoint as string)
    url.searchParams.set('client_id', 'web')
    url.searchParams.set('request_uri', pushed.request_uri)
    const callback = await authorize(ctx.browser, url)
    const { response } = await redeemCallback(ctx, callback, { verifier })
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response)
    expect(tokens.grant_id).toBe(grantId)
    expect((tokens.scope ?? '').split(' ').sort()).toEqual(['email', 'offline_access', 'openid', 'profile'])

    params.set('grant_id', 'AAAAAAAAAAAAAAAAAAAAAA')
    const unknown = await oauth.pushedAuthorizationRequest(ctx.as, webClient, webAuth, params, ctx.opts)
    expect(unknown.status).toBe(400)
    expect(await unknown.json()).toMatchObject({ error: 'invalid_grant_id' })
  })
})

describe('#42 item 1 grant management parameters are checked (memory store)', () => {
  it.each([
    ['an unknown action', { grant_management_action: 'update' }],
    ['create with a grant_id', { grant_management_action: 'create', grant_id: 'AAAAAAAAAAAAAAAAAAAAAA' }],
    ['merge without grant_id', { grant_management_action: 'merge' }],
    ['replace without grant_id', { grant_management_action: 'replace' }],
    ['grant_id without an action (§5.4)', { grant_id: 'AAAAAAAAAAAAAAAAAAAAAA' }],
  ])('#42 item 1: %s is invalid_request at the redirect URI and at PAR', async (_, extra) => {
    const ctx = await setup()
    const request = await authorizationUrl(ctx.as, { scope: 'openid', extra })
    const callback = await authorize(ctx.browser, request.url)
    expectErrorRedirect(callback, RU, 'invalid_request', request.state)
    const params = new URLSearchParams({
      response_type: 'code',
      redirect_uri: RU,
      scope: 'openid',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
      ...extra,
    })
    const pushed = await oauth.pushedAuthorizationRequest(ctx.as, webClient, webAuth, params, ctx.opts)
    expect(pushed.status).toBe(400)
    expect(await pushed.json()).toMatchObject({ error: 'invalid_request' })
  })
})

describe('#42 item 4 a refresh records the grant’s use and checks its revision without a round trip of its own', () => {
  it('#42 item 4: grants.touch is sent while the rotation is in flight, and both revocation marks are asked before either answers', async () => {
    const time = clock(Math.floor(Date.now() / 1000))
    const store = createMemoryStore({ now: time.now })
    const ctx = await setup({ store, now: time.now })
    const first = await authorizationUrl(ctx.as, { scope: 'openid offline_access' })
    const { response } = await redeemCallback(ctx, await authorize(ctx.browser, first.url), first)
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: first.nonce as string,
    })
    const events: string[] = []
    const rotate = store.refreshTokens.rotate.bind(store.refreshTokens)
    store.refreshTokens.rotate = async (id, next, now) => {
      events.push('rotate sent')
      await new Promise((resolve) => setTimeout(resolve, 20))
      const result = await rotate(id, next, now)
      events.push('rotate answered')
      return result
    }
    const touch = store.grants.touch?.bind(store.grants)
    store.grants.touch = async (id, at) => {
      events.push('touch sent')
      await new Promise((resolve) => setTimeout(resolve, 10))
      await touch?.(id, at)
      events.push('touch answered')
    }
    const isFamilyRevoked = store.revocations.isFamilyRevoked.bind(store.revocations)
    store.revocations.isFamilyRevoked = async (familyId) => {
      events.push(
        `revoked? ${familyId === tokens.grant_id ? 'family' : familyId.replace(String(tokens.grant_id), 'family')}`,
      )
      await new Promise((resolve) => setTimeout(resolve, 5))
      const revoked = await isFamilyRevoked(familyId)
      events.push('revoked answered')
      return revoked
    }
    time.advance(60)
    const refreshed = await oauth.refreshTokenGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      tokens.refresh_token as string,
      ctx.opts,
    )
    expect(refreshed.status).toBe(200)
    expect(events).toEqual([
      'revoked? family',
      'revoked? family.r0',
      'revoked answered',
      'revoked answered',
      'touch sent',
      'rotate sent',
      'touch answered',
      'rotate answered',
    ])
    expect((await store.grants.get(tokens.grant_id as string, time.now()))?.lastUsedAt).toBe(time.now())
  })
})

describe('#42 item 4 a token exchange of an ID token records its grant’s use (memory store)', () => {
  it('#42 item 4: an ID-token exchange 60 s or more after the grant’s last recorded use sets lastUsedAt; an earlier one writes nothing', async () => {
    const ctx = await startExchange({ tokenExchange: { idTokenSubjects: { agent: ['app'] } } })
    const gid = decodeJwt(ctx.user.access_token).gid as string
    const parameters = { subject_token: ctx.user.id_token as string, subject_token_type: IDT, scope: 'mail.read' }
    const grantOf = () => ctx.service.store.grants.get(gid, ctx.clock.now())
    ctx.clock.advance(59)
    await exchange(ctx, parameters)
    expect((await grantOf())?.lastUsedAt).toBeUndefined()
    ctx.clock.advance(1)
    await exchange(ctx, parameters)
    expect((await grantOf())?.lastUsedAt).toBe(ctx.clock.now())
  })
})
