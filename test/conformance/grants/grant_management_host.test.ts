/**
 * #42 items 1 and 2: the host's grant API (`service.grants`) on every store the machine has
 * (memory; PostgreSQL, Redis, SQLite with their variables): list, get, revoke, revokeAll. After a
 * revoke every token of the grant is dead at once: its access token inactive at introspection and
 * refused at userinfo, a token exchanged from it inactive, its refresh token refused, a CIBA request
 * approved but not yet redeemed refused; `grant.revoked` is emitted. And the race of a revoke with a
 * refresh: the refresh either loses or what it issued is revoked too.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import type { CibaNotification, GatehouseEvent } from '../../../src/index.ts'
import { Browser, type Page } from '../../helpers/browser.ts'
import { CIBA_CLIENTS, CIBA_GRANT, startCiba } from '../../helpers/ciba.ts'
import { ensureDeviceClients, pollOnce, startDevice } from '../../helpers/device.ts'
import { setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { basic, clock, form } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const AT = 'urn:ietf:params:oauth:token-type:access_token'

describe.each(STORES)('#42 item 2 the host’s grant API on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start() {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const events: GatehouseEvent[] = []
    const sent: CibaNotification[] = []
    const ctx = await setup({
      store: opened.store,
      now: time.now,
      onEvent: (event) => void events.push(event),
      ciba: { notify: (notification) => void sent.push(notification) },
    })
    await ctx.service.clients.ensure({
      clientId: 'agent-x',
      clientSecret: 'agent-x-secret',
      displayName: 'Exchanging agent',
      permissions: ['ept:token', 'ept:introspection', `gt:${EXCHANGE}`, 'scp:api1'],
    })
    for (const client of Object.values(CIBA_CLIENTS)) await ctx.service.clients.ensure(client)
    await ensureDeviceClients(ctx)
    return { ...ctx, time, events, sent }
  }
  type Ctx = Awaited<ReturnType<typeof start>>

  /** Introspection as `web` (or, for the exchanged token, as the agent it was issued to). */
  async function introspect(
    ctx: Ctx,
    token: string,
    as: 'web' | 'web2' | 'agent-x' = 'web',
  ): Promise<Record<string, unknown>> {
    const [client, auth] =
      as === 'web' ? [webClient, webAuth] : [{ client_id: as }, oauth.ClientSecretBasic(`${as}-secret`)]
    const response = await oauth.introspectionRequest(ctx.as, client, auth, token, ctx.opts)
    return (await response.json()) as Record<string, unknown>
  }

  async function refresh(ctx: Ctx, token: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, token, ctx.opts)
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  async function userinfoStatus(ctx: Ctx, token: string): Promise<number> {
    return (await oauth.userInfoRequest(ctx.as, webClient, token, ctx.opts)).status
  }

  async function exchanged(ctx: Ctx, subject: string): Promise<string> {
    const response = await ctx.service.fetch(
      form(
        ctx.service.endpoints.token,
        { grant_type: EXCHANGE, subject_token: subject, subject_token_type: AT, scope: 'api1' },
        { authorization: basic('agent-x', 'agent-x-secret') },
      ),
    )
    expect(response.status).toBe(200)
    return ((await response.json()) as { access_token: string }).access_token
  }

  it('#42 item 2: list and get show the grant: client name and host, scopes, resources, kind, times; newest first', async () => {
    const ctx = await start()
    const signedInAt = ctx.time.now()
    const first = await signIn(ctx, { scope: 'openid profile offline_access' })
    ctx.time.advance(10)
    const second = await signIn(ctx, { scope: 'openid api1 offline_access' })
    const listed = await ctx.service.grants.list('user-1')
    expect(listed.map((grant) => grant.scopes)).toEqual([
      ['openid', 'api1', 'offline_access'],
      ['openid', 'profile', 'offline_access'],
    ])
    const [newest] = listed
    expect(newest).toMatchObject({
      client: { id: 'web', name: 'Web App', selfRegistered: false, host: 'rp.example.test' },
      sub: 'user-1',
      kind: 'authorization_code',
      resources: [],
      createdAt: signedInAt + 10,
    })
    expect(newest?.expiresAt).toBeGreaterThan(signedInAt)
    expect(await ctx.service.grants.get(newest?.id as string)).toEqual(newest)
    expect(await ctx.service.grants.list('user-2')).toEqual([])
    expect(await ctx.service.grants.list('user-1', { clientId: 'web2' })).toEqual([])
    expect(await ctx.service.grants.get('no-such-grant')).toBeUndefined()
    expect(first.result.refresh_token && second.result.refresh_token).toBeTruthy()
    await expect(ctx.service.grants.list('')).rejects.toThrow(TypeError)
    await expect(ctx.service.grants.revoke(42 as unknown as string)).rejects.toThrow(TypeError)
  })

  it('#42 item 2: revoke kills every token of the grant at once: access token (introspection, userinfo), exchanged token, refresh token; grant.revoked is emitted', async () => {
    const ctx = await start()
    const { result } = await signIn(ctx, { scope: 'openid api1 offline_access' })
    const other = await signIn(ctx, { scope: 'openid profile offline_access' })
    const derived = await exchanged(ctx, result.access_token)
    expect(await introspect(ctx, derived, 'agent-x')).toMatchObject({ active: true })
    const grant = (await ctx.service.grants.list('user-1')).find((g) => g.scopes.includes('api1'))
    expect(grant?.scopes).toEqual(['openid', 'api1', 'offline_access'])
    expect(await userinfoStatus(ctx, result.access_token)).toBe(200)

    expect(await ctx.service.grants.revoke(grant?.id as string)).toBe(true)

    expect(await introspect(ctx, result.access_token)).toEqual({ active: false })
    expect(await introspect(ctx, derived, 'agent-x')).toEqual({ active: false })
    expect(await userinfoStatus(ctx, result.access_token)).toBe(401)
    const refreshed = await refresh(ctx, result.refresh_token as string)
    expect(refreshed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    expect(ctx.events.filter((event) => event.type === 'grant.revoked')).toEqual([
      expect.objectContaining({ by: 'host', clientId: 'web', sub: 'user-1', grantId: grant?.id }),
    ])
    // Gone from the list; the other grant untouched; a second revoke finds nothing.
    expect((await ctx.service.grants.list('user-1')).map((g) => g.id)).not.toContain(grant?.id)
    expect(await ctx.service.grants.get(grant?.id as string)).toBeUndefined()
    expect(await ctx.service.grants.revoke(grant?.id as string)).toBe(false)
    expect(await introspect(ctx, other.result.access_token)).toMatchObject({ active: true })
    expect((await refresh(ctx, other.result.refresh_token as string)).status).toBe(200)
  })

  it('#42 item 2: revokeAll(sub, { clientId }) revokes that client’s grants only; revokeAll(sub) the rest', async () => {
    const ctx = await start()
    const web = await signIn(ctx, { scope: 'openid offline_access' })
    const web2 = await signIn(ctx, {
      scope: 'openid offline_access',
      client: { client_id: 'web2' },
      auth: oauth.ClientSecretBasic('web2-secret'),
      redirectUri: 'https://rp2.example.test/cb',
    })
    expect(await ctx.service.grants.revokeAll('user-1', { clientId: 'web' })).toBe(1)
    expect(await introspect(ctx, web.result.access_token)).toEqual({ active: false })
    expect((await ctx.service.grants.list('user-1')).map((grant) => grant.client.id)).toEqual(['web2'])
    expect(await introspect(ctx, web2.result.access_token, 'web2')).toMatchObject({ active: true })
    expect(await ctx.service.grants.revokeAll('user-1')).toBe(1)
    expect(await introspect(ctx, web2.result.access_token, 'web2')).toEqual({ active: false })
    expect(await ctx.service.grants.list('user-1')).toEqual([])
    expect(await ctx.service.grants.revokeAll('user-1')).toBe(0)
  })

  it('#42 item 2: a CIBA request approved but not yet redeemed is a grant; revoking it makes the poll fail', async () => {
    const ctx = await start()
    const approve = async () => {
      const started = await startCiba(ctx, { scope: 'openid' })
      const decided = await ctx.service.ciba.decide({
        approval: started.notification.approvalUrl,
        sub: 'user-1',
        approve: true,
      })
      expect(decided).toBe('approved')
      return started.auth_req_id
    }
    const poll = async (authReqId: string) => {
      const response = await ctx.service.fetch(
        form(
          ctx.service.endpoints.token,
          { grant_type: CIBA_GRANT, auth_req_id: authReqId },
          { authorization: basic('agent', 'agent-secret') },
        ),
      )
      return { status: response.status, body: (await response.json()) as Record<string, unknown> }
    }
    const revoked = await approve()
    const kept = await approve()
    const listed = await ctx.service.grants.list('user-1')
    expect(listed).toHaveLength(2)
    expect(listed[0]).toMatchObject({ kind: 'ciba', client: { id: 'agent', name: 'Travel Agent' }, scopes: ['openid'] })
    // Which grant is which request's is not visible from outside: revoke one; one poll fails, one succeeds.
    expect(await ctx.service.grants.revoke(listed[0]?.id as string)).toBe(true)
    ctx.time.advance(10)
    const results = [await poll(revoked), await poll(kept)]
    expect(results.map((r) => r.status).sort()).toEqual([200, 400])
    expect(results.find((r) => r.status === 400)?.body.error).toBe('invalid_grant')
  })

  it('#42 item 2: a device authorization approved on the verification page is a grant; revoking it makes the poll fail', async () => {
    const ctx = await start()
    const device = await startDevice(ctx, { scope: 'openid api1' })
    const browser = new Browser(ctx.service.fetch)
    const signInPage = (await browser.navigate(device.verification_uri_complete as string)).page as Page
    const entered = (await browser.submit(signInPage, { user_code: device.user_code })).page as Page
    const confirm = (await browser.signIn(entered, 'alice', 'alice-password')).page as Page
    expect((await browser.submit(confirm, { decision: 'approve' })).page?.status).toBe(200)
    const [grant] = await ctx.service.grants.list('user-1')
    expect(grant).toMatchObject({ kind: 'device_code', client: { id: 'cli', name: 'Command line' } })
    expect(grant?.scopes).toEqual(['openid', 'api1'])
    expect(await ctx.service.grants.revoke(grant?.id as string)).toBe(true)
    ctx.time.advance(10)
    expect(await pollOnce(ctx, device.device_code)).toMatchObject({ ok: false, error: 'invalid_grant' })
  })

  it('#42 review: a metadata-document client whose document fails neither breaks the list nor escapes a revoke (nothing is fetched)', async () => {
    let fetched = 0
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const ctx = await setup({
      store: opened.store,
      now: time.now,
      clientIdMetadataDocuments: {
        scopes: ['openid'],
        fetch: async () => {
          fetched++
          return new Response('down', { status: 500 })
        },
      },
    })
    const clientId = 'https://agent.example.test/client.json'
    const now = time.now()
    await opened.store.grants.put({
      id: 'grant-of-a-document-client',
      clientId,
      sub: 'user-1',
      scope: 'openid',
      kind: 'authorization_code',
      authTime: now,
      createdAt: now,
      expiresAt: now + 3600,
    })
    const [grant] = await ctx.service.grants.list('user-1')
    expect(grant?.client).toEqual({
      id: clientId,
      name: 'agent.example.test',
      selfRegistered: true,
      host: 'agent.example.test',
    })
    expect(await ctx.service.grants.get('grant-of-a-document-client')).toMatchObject({ client: { id: clientId } })
    expect(await ctx.service.grants.revoke('grant-of-a-document-client')).toBe(true)
    expect(await ctx.service.grants.list('user-1')).toEqual([])
    expect(fetched).toBe(0)
  })

  it('#42 race: a revoke during a refresh: the refresh either loses or its new tokens are revoked too', async () => {
    const ctx = await start()
    for (let round = 0; round < 8; round++) {
      const { result } = await signIn(ctx, { scope: 'openid api1 offline_access' })
      const grants = await ctx.service.grants.list('user-1')
      const id = grants[0]?.id as string
      const [refreshed, revoked] = await Promise.all([
        refresh(ctx, result.refresh_token as string),
        ctx.service.grants.revoke(id),
      ])
      expect(revoked, `round ${round}`).toBe(true)
      if (refreshed.status === 200) {
        const body = refreshed.body as { access_token: string; refresh_token: string }
        expect(await introspect(ctx, body.access_token), `round ${round}`).toEqual({ active: false })
        expect((await refresh(ctx, body.refresh_token)).status, `round ${round}`).toBe(400)
      } else {
        expect(refreshed.body.error, `round ${round}`).toBe('invalid_grant')
      }
      expect(await ctx.service.grants.get(id)).toBeUndefined()
      expect((await ctx.service.grants.list('user-1')).map((grant) => grant.id)).not.toContain(id)
    }
  })
})
