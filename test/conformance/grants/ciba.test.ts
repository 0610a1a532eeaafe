/**
 * #41 Client-Initiated Backchannel Authentication (OpenID CIBA Core 1.0), poll and ping, through
 * openid-client 6 (`initiateBackchannelAuthentication`, `pollBackchannelAuthenticationGrant`) and
 * raw requests: discovery, every error of the backchannel authentication endpoint (CIBA §13), the
 * token endpoint's answers (authorization_pending, slow_down, access_denied, expired_token, the
 * tokens once, another client's auth_req_id), the decision (only the hinted end-user, once), the
 * ping to the client's notification endpoint, and the audit events. The clock is injected.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { decodeJwt } from 'jose'
import * as client from 'openid-client'
import { describe, expect, it } from 'vitest'
import { parseConfigFile } from '../../../src/config/index.ts'
import type { GatehouseEvent } from '../../../src/events/index.ts'
import { createTokenService } from '../../../src/index.ts'
import {
  CIBA_GRANT,
  type CibaCtx,
  PING_ENDPOINT,
  cibaRequest,
  cibaSetup,
  pollCiba,
  startCiba,
} from '../../helpers/ciba.ts'
import { ISSUER } from '../../helpers/service.ts'

async function start(options: Parameters<typeof cibaSetup>[0] = {}) {
  const events: GatehouseEvent[] = []
  const ctx = await cibaSetup({ onEvent: (event) => void events.push(event), ...options })
  return { ...ctx, events }
}

async function refused(response: Response, error: string, status = 400): Promise<void> {
  expect({ status: response.status, error: ((await response.json()) as { error: string }).error }).toEqual({
    status,
    error,
  })
}

function decide(ctx: CibaCtx, approvalUrl: string, approve = true, sub = 'user-1') {
  return ctx.service.ciba.decide({ approval: approvalUrl, sub, approve, amr: ['pwd'] })
}

describe('#41 CIBA', () => {
  it('#41 discovery lists the endpoint, poll and ping, no user code, and the grant type (both documents)', async () => {
    const ctx = await start()
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const doc = (await (await ctx.service.fetch(new Request(ISSUER + path))).json()) as Record<string, unknown>
      expect(doc).toMatchObject({
        backchannel_authentication_endpoint: `${ISSUER}/connect/ciba`,
        backchannel_token_delivery_modes_supported: ['poll', 'ping'],
        backchannel_user_code_parameter_supported: false,
      })
      expect(doc.grant_types_supported).toContain(CIBA_GRANT)
    }
  })

  it('#41 poll mode end to end with openid-client 6: the end-user is told, approves, the client gets access, ID and refresh tokens once', async () => {
    const ctx = await start()
    const fetch = (url: string, init: client.CustomFetchOptions) =>
      ctx.service.fetch(new Request(url, init as RequestInit))
    const config = await client.discovery(
      new URL(ISSUER),
      'agent',
      undefined,
      client.ClientSecretBasic('agent-secret'),
      {
        [client.customFetch]: fetch,
      },
    )
    const started = await client.initiateBackchannelAuthentication(config, {
      scope: 'openid profile offline_access',
      login_hint: 'alice',
      binding_message: 'Book flight LH 123',
    })
    expect(started).toMatchObject({ expires_in: 300, interval: 5 })
    const notification = ctx.sent.at(-1)
    expect(notification).toMatchObject({
      user: { sub: 'user-1' },
      client: { clientId: 'agent', name: 'Travel Agent' },
      scopes: ['openid', 'profile', 'offline_access'],
      bindingMessage: 'Book flight LH 123',
      expiresAt: ctx.clock.now() + 300,
    })
    const approvalUrl = new URL(notification?.approvalUrl ?? '')
    expect(approvalUrl.origin + approvalUrl.pathname).toBe(`${ISSUER}/connect/ciba/approve`)
    expect(approvalUrl.href).not.toContain(started.auth_req_id)
    expect(await decide(ctx, approvalUrl.href)).toBe('approved')
    const tokens = await client.pollBackchannelAuthenticationGrant(config, { ...started, interval: 0 })
    expect(tokens.access_token).toBeTypeOf('string')
    expect(tokens.refresh_token).toBeTypeOf('string')
    const idToken = decodeJwt(tokens.id_token ?? '')
    expect(idToken).toMatchObject({ iss: ISSUER, sub: 'user-1', aud: 'agent', amr: ['pwd'] })
    expect(idToken.nonce).toBeUndefined()
    await refused(await pollCiba(ctx, started.auth_req_id), 'invalid_grant')
    const types = ctx.events.map((event) => event.type)
    for (const type of ['ciba.requested', 'ciba.approved', 'ciba.redeemed', 'token.issued', 'code.replay_detected'])
      expect(types).toContain(type)
    expect((await ctx.service.store.grants.listBySub('user-1', ctx.clock.now())).map((g) => g.kind)).toContain('ciba')
  })

  it('#41 authorization_pending, slow_down (+5 s), then access_denied after a denial', async () => {
    const ctx = await start()
    const started = await startCiba(ctx)
    await refused(await pollCiba(ctx, started.auth_req_id), 'authorization_pending')
    ctx.clock.advance(1)
    await refused(await pollCiba(ctx, started.auth_req_id), 'slow_down')
    ctx.clock.advance(5)
    await refused(await pollCiba(ctx, started.auth_req_id), 'slow_down') // the interval is 10 now
    ctx.clock.advance(15)
    await refused(await pollCiba(ctx, started.auth_req_id), 'authorization_pending')
    expect(await decide(ctx, started.notification.approvalUrl, false)).toBe('denied')
    await refused(await pollCiba(ctx, started.auth_req_id), 'access_denied')
    expect(ctx.events.map((event) => event.type)).toContain('ciba.denied')
  })

  it('#41 expired_token after cibaTtl or a shorter requested_expiry; a decision after expiry changes nothing', async () => {
    const ctx = await start({ cibaTtl: 120 })
    const short = await startCiba(ctx, { requested_expiry: '60' })
    expect(short.expires_in).toBe(60)
    const long = await startCiba(ctx, { requested_expiry: '600' })
    expect(long.expires_in).toBe(120)
    ctx.clock.advance(60)
    await refused(await pollCiba(ctx, short.auth_req_id), 'expired_token')
    expect(await decide(ctx, short.notification.approvalUrl)).toBe('invalid')
    ctx.clock.advance(60)
    await refused(await pollCiba(ctx, long.auth_req_id), 'expired_token')
  })

  it("#41 another client's auth_req_id is invalid_grant and changes nothing; an unknown one is invalid_grant", async () => {
    const ctx = await start()
    const started = await startCiba(ctx)
    await decide(ctx, started.notification.approvalUrl)
    await refused(await pollCiba(ctx, started.auth_req_id, 'agent2'), 'invalid_grant')
    await refused(await pollCiba(ctx, 'not-an-auth-req-id'), 'invalid_grant')
    expect((await pollCiba(ctx, started.auth_req_id)).status).toBe(200)
  })

  it('#41 only the hinted end-user decides, once: another user is wrong_user (nothing recorded); a second decision is invalid', async () => {
    const ctx = await start()
    const started = await startCiba(ctx, { login_hint: 'user-1' })
    expect(await decide(ctx, started.notification.approvalUrl, true, 'user-2')).toBe('wrong_user')
    await refused(await pollCiba(ctx, started.auth_req_id), 'authorization_pending')
    expect(await decide(ctx, started.notification.approvalUrl, false)).toBe('denied')
    expect(await decide(ctx, started.notification.approvalUrl, true)).toBe('invalid')
    ctx.clock.advance(5)
    await refused(await pollCiba(ctx, started.auth_req_id), 'access_denied')
  })

  it('#41 of 20 concurrent polls of an approved auth_req_id exactly one gets tokens', async () => {
    const ctx = await start()
    const started = await startCiba(ctx)
    await decide(ctx, started.notification.approvalUrl)
    const responses = await Promise.all(Array.from({ length: 20 }, () => pollCiba(ctx, started.auth_req_id)))
    expect(responses.filter((response) => response.status === 200)).toHaveLength(1)
  })

  it('#41 the endpoint errors of CIBA §13: invalid_request, unknown_user_id, invalid_binding_message, invalid_scope, unauthorized_client, invalid_client', async () => {
    const ctx = await start()
    const base = { scope: 'openid' }
    await refused(await cibaRequest(ctx, base), 'invalid_request') // no hint
    await refused(await cibaRequest(ctx, { ...base, login_hint: 'alice', id_token_hint: 'x.y.z' }), 'invalid_request')
    await refused(await cibaRequest(ctx, { ...base, login_hint_token: 'token' }), 'invalid_request')
    await refused(await cibaRequest(ctx, { scope: 'profile', login_hint: 'alice' }), 'invalid_request')
    await refused(await cibaRequest(ctx, { ...base, login_hint: 'alice', requested_expiry: '-1' }), 'invalid_request')
    await refused(await cibaRequest(ctx, { ...base, login_hint: 'nobody' }), 'unknown_user_id')
    await refused(
      await cibaRequest(ctx, { ...base, login_hint: 'alice', binding_message: 'x'.repeat(65) }),
      'invalid_binding_message',
    )
    await refused(
      await cibaRequest(ctx, { ...base, login_hint: 'alice', binding_message: 'a\nb' }),
      'invalid_binding_message',
    )
    await refused(
      await cibaRequest(ctx, { ...base, login_hint: 'alice', binding_message: '<b>hi</b>' }),
      'invalid_binding_message',
    )
    await refused(await cibaRequest(ctx, { scope: 'openid unknown', login_hint: 'alice' }), 'invalid_scope')
    await refused(await cibaRequest(ctx, { ...base, login_hint: 'alice' }, 'noept'), 'unauthorized_client')
    await refused(await cibaRequest(ctx, { ...base, login_hint: 'alice' }, 'web'), 'unauthorized_client') // no permission
    await refused(await cibaRequest(ctx, { ...base, login_hint: 'alice' }, 'ghost'), 'invalid_client', 401)
    await refused(await cibaRequest(ctx, { ...base, login_hint: 'alice' }, 'pinger'), 'invalid_request') // no token
    expect(ctx.sent).toHaveLength(0)
    // A binding message of 64 characters (not bytes) is fine.
    expect((await cibaRequest(ctx, { ...base, login_hint: 'alice', binding_message: 'é'.repeat(64) })).status).toBe(200)
  })

  it('#41 access_denied (403) when the host refuses to ask: nothing is stored', async () => {
    const ctx = await start({ ciba: { notify: () => false } })
    await refused(await cibaRequest(ctx, { scope: 'openid', login_hint: 'alice' }), 'access_denied', 403)
    expect(ctx.events.map((event) => event.type)).not.toContain('ciba.requested')
  })

  it('#41 id_token_hint: an ID token this issuer gave this client names the user; one of another client or a forgery is invalid_request', async () => {
    const ctx = await start()
    const started = await startCiba(ctx)
    await decide(ctx, started.notification.approvalUrl)
    const idToken = ((await (await pollCiba(ctx, started.auth_req_id)).json()) as { id_token: string }).id_token
    const hinted = await cibaRequest(ctx, { scope: 'openid', id_token_hint: idToken })
    expect(hinted.status).toBe(200)
    expect(ctx.sent.at(-1)?.user.sub).toBe('user-1')
    await refused(await cibaRequest(ctx, { scope: 'openid', id_token_hint: idToken }, 'agent2'), 'invalid_request')
    await refused(
      await cibaRequest(ctx, { scope: 'openid', id_token_hint: `${idToken.slice(0, -4)}AAAA` }),
      'invalid_request',
    )
  })

  it('#41 ping mode: after the decision the client notification endpoint gets {"auth_req_id"} with its bearer token; the client then redeems', async () => {
    const pings: Array<{ url: string; authorization: string | null; body: string }> = []
    const work: Promise<unknown>[] = []
    const ctx = await start({
      waitUntil: (promise) => void work.push(promise),
      backchannelLogout: {
        fetch: async (url, init) => {
          pings.push({ url, authorization: new Headers(init.headers).get('authorization'), body: String(init.body) })
          return new Response(null, { status: 204 })
        },
      },
    })
    const started = await startCiba(ctx, { client_notification_token: 'notify-me-8f2a' }, 'pinger')
    await refused(await pollCiba(ctx, started.auth_req_id, 'pinger'), 'authorization_pending')
    await decide(ctx, started.notification.approvalUrl)
    await Promise.all(work)
    expect(pings).toEqual([
      {
        url: PING_ENDPOINT,
        authorization: 'Bearer notify-me-8f2a',
        body: JSON.stringify({ auth_req_id: started.auth_req_id }),
      },
    ])
    expect((await pollCiba(ctx, started.auth_req_id, 'pinger')).status).toBe(200)
  })

  it('#41 ping mode over real HTTP to a loopback receiver; a receiver that keeps failing ends in ciba.notification_failed', async () => {
    const received: Array<{ authorization: string | undefined; body: string }> = []
    let answer = 204
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (chunk) => (body += chunk))
      req.on('end', () => {
        received.push({ authorization: req.headers.authorization, body })
        res.writeHead(answer).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ping`
      const work: Promise<unknown>[] = []
      const ctx = await start({
        waitUntil: (promise) => void work.push(promise),
        backchannelLogout: { retryDelays: [0] },
      })
      await ctx.service.clients.update('pinger', { backchannelClientNotificationEndpoint: endpoint })
      const first = await startCiba(ctx, { client_notification_token: 'tok-1' }, 'pinger')
      await decide(ctx, first.notification.approvalUrl)
      await Promise.all(work)
      expect(received).toEqual([
        { authorization: 'Bearer tok-1', body: JSON.stringify({ auth_req_id: first.auth_req_id }) },
      ])
      answer = 503
      const second = await startCiba(ctx, { client_notification_token: 'tok-2' }, 'pinger')
      await decide(ctx, second.notification.approvalUrl, false)
      await Promise.all(work)
      expect(received).toHaveLength(3) // one try and one retry
      expect(ctx.events.find((event) => event.type === 'ciba.notification_failed')).toMatchObject({
        target: 'client',
        clientId: 'pinger',
        attempts: 2,
        error: '503',
      })
    } finally {
      server.close()
    }
  })
})

describe('#41 CIBA client metadata', () => {
  it('#41 dynamic registration takes backchannel_token_delivery_mode and backchannel_client_notification_endpoint for the CIBA grant; a public client does not get it', async () => {
    const ctx = await start({ dynamicClientRegistration: { scopes: ['openid'], grantTypes: [CIBA_GRANT] } })
    const register = (body: Record<string, unknown>) =>
      ctx.service.fetch(
        new Request(`${ISSUER}/connect/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      )
    const response = await register({
      grant_types: [CIBA_GRANT],
      backchannel_token_delivery_mode: 'ping',
      backchannel_client_notification_endpoint: 'https://agent.example.com/ping',
      client_name: 'Self Agent',
    })
    expect(response.status).toBe(201)
    const body = (await response.json()) as Record<string, unknown>
    expect(body).toMatchObject({
      grant_types: [CIBA_GRANT],
      backchannel_token_delivery_mode: 'ping',
      backchannel_client_notification_endpoint: 'https://agent.example.com/ping',
    })
    const record = await ctx.service.clients.find(String(body.client_id))
    expect(record).toMatchObject({
      backchannelTokenDeliveryMode: 'ping',
      backchannelClientNotificationEndpoint: 'https://agent.example.com/ping',
    })
    expect(record?.permissions).toEqual(expect.arrayContaining(['ept:backchannel_authentication', `gt:${CIBA_GRANT}`]))
    const noEndpoint = await register({ grant_types: [CIBA_GRANT], backchannel_token_delivery_mode: 'ping' })
    expect(noEndpoint.status).toBe(400)
    const privateHost = await register({
      grant_types: [CIBA_GRANT],
      backchannel_token_delivery_mode: 'ping',
      backchannel_client_notification_endpoint: 'https://10.0.0.1/ping',
    })
    expect(privateHost.status).toBe(400)
    const publicClient = await register({ grant_types: [CIBA_GRANT], token_endpoint_auth_method: 'none' })
    expect(publicClient.status).toBe(400)
  })

  it('#41 the host API: a ping client needs a notification endpoint (https or loopback http); a public client cannot have the CIBA grant', async () => {
    const ctx = await start()
    const base = { clientId: 'x', clientSecret: 'x-secret', permissions: [`gt:${CIBA_GRANT}`] }
    await expect(ctx.service.clients.ensure({ ...base, backchannelTokenDeliveryMode: 'ping' })).rejects.toThrow(
      /backchannelClientNotificationEndpoint/,
    )
    await expect(
      ctx.service.clients.ensure({
        ...base,
        backchannelTokenDeliveryMode: 'ping',
        backchannelClientNotificationEndpoint: 'http://agent.example.com/ping',
      }),
    ).rejects.toThrow(/https/)
    await expect(ctx.service.clients.ensure({ clientId: 'y', permissions: [`gt:${CIBA_GRANT}`] })).rejects.toThrow(
      /public client/,
    )
    await ctx.service.clients.ensure({
      ...base,
      backchannelTokenDeliveryMode: 'ping',
      backchannelClientNotificationEndpoint: 'http://127.0.0.1:9/ping',
    })
    expect(await ctx.service.clients.find('x')).toMatchObject({ backchannelTokenDeliveryMode: 'ping' })
  })
})

describe('#41 ciba.notifyUrl (the standalone server)', () => {
  it('#41 without a hook the request is POSTed as JSON to ciba.notifyUrl; the configuration file takes the key; a failure is an event', async () => {
    const posts: Array<{ url: string; body: Record<string, unknown> }> = []
    const work: Promise<unknown>[] = []
    let status = 204
    const ctx = await start({
      ciba: { notifyUrl: 'https://host.example.test/ciba' },
      waitUntil: (promise) => void work.push(promise),
      backchannelLogout: {
        fetch: async (url, init) => {
          posts.push({ url, body: JSON.parse(String(init.body)) as Record<string, unknown> })
          return new Response(null, { status })
        },
      },
    })
    const response = await cibaRequest(ctx, { scope: 'openid', login_hint: 'alice', binding_message: 'Deploy v2' })
    expect(response.status).toBe(200)
    await Promise.all(work)
    expect(posts).toHaveLength(1)
    expect(posts[0]?.url).toBe('https://host.example.test/ciba')
    expect(posts[0]?.body).toMatchObject({
      sub: 'user-1',
      client_id: 'agent',
      client_name: 'Travel Agent',
      scope: 'openid',
      binding_message: 'Deploy v2',
      expires_in: 300,
    })
    const approval = String(posts[0]?.body.approval_uri)
    expect(approval.startsWith(`${ISSUER}/connect/ciba/approve?ref=`)).toBe(true)
    expect(await decide(ctx, approval)).toBe('approved')
    status = 500
    expect((await cibaRequest(ctx, { scope: 'openid', login_hint: 'alice' })).status).toBe(200)
    await Promise.all(work)
    expect(ctx.events.find((event) => event.type === 'ciba.notification_failed')).toMatchObject({
      target: 'user',
      error: '500',
    })
    const file = parseConfigFile(
      JSON.stringify({ ciba: { notifyUrl: 'https://host.example.test/ciba' }, cibaTtl: 120 }),
    )
    expect(file).toMatchObject({ ciba: { notifyUrl: 'https://host.example.test/ciba' }, cibaTtl: 120 })
    expect(() => createTokenService({ issuer: ISSUER, ciba: { notifyUrl: 'http://host.example.test/ciba' } })).toThrow(
      /notifyUrl/,
    )
  })
})
