/**
 * The `onEvent` audit hook (issue #6): one typed event per security-relevant step, carrying client
 * id, subject, grant id, jti and request id, and never a secret, password or token value.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent } from '../../../src/index.ts'
import { setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { ISSUER, basic, form } from '../../helpers/service.ts'

function collector() {
  const events: GatehouseEvent[] = []
  return { events, onEvent: (event: GatehouseEvent) => void events.push(event) }
}

const byType = (events: GatehouseEvent[], type: GatehouseEvent['type']) => events.filter((e) => e.type === type)

describe('audit events', () => {
  it('client_credentials: token.issued with client, jti and the request id sent as X-Request-Id', async () => {
    const { events, onEvent } = collector()
    const ctx = await setup({ onEvent })
    const request = form(
      `${ISSUER}/connect/token`,
      { grant_type: 'client_credentials' },
      { authorization: basic('service', 'service-secret'), 'x-request-id': 'req-42' },
    )
    const body = (await (await ctx.service.fetch(request, { address: '10.0.0.5' })).json()) as { access_token: string }
    const [issued] = byType(events, 'token.issued')
    const jti = JSON.parse(atob((body.access_token.split('.')[1] ?? '').replace(/-/g, '+').replace(/_/g, '/'))).jti
    expect(issued).toEqual({
      type: 'token.issued',
      grantType: 'client_credentials',
      clientId: 'service',
      sub: 'service',
      jti,
      scope: 'api1',
      time: ctx.clock.now(),
      requestId: 'req-42',
      address: '10.0.0.5',
    })
  })

  it('code flow: sign-in, code redeemed, token issued, refreshed, introspected, revoked, session ended', async () => {
    const { events, onEvent } = collector()
    const ctx = await setup({ onEvent })
    const { result } = await signIn(ctx)
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, result.refresh_token as string, ctx.opts),
    )
    await oauth.processIntrospectionResponse(
      ctx.as,
      webClient,
      await oauth.introspectionRequest(ctx.as, webClient, webAuth, refreshed.access_token, ctx.opts),
    )
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(ctx.as, webClient, webAuth, refreshed.refresh_token as string, ctx.opts),
    )
    const logout = new URL(ctx.as.end_session_endpoint as string)
    logout.searchParams.set('id_token_hint', refreshed.id_token as string)
    await ctx.browser.navigate(logout.href)

    expect(events.map((e) => e.type)).toEqual([
      'signin.succeeded',
      'code.redeemed',
      'token.issued',
      'token.refreshed',
      'token.introspected',
      'token.revoked',
      'session.ended',
    ])
    const grantId = (byType(events, 'code.redeemed')[0] as { grantId: string }).grantId
    expect(grantId).toMatch(/^[A-Za-z0-9_-]{16,}$/)
    for (const type of ['code.redeemed', 'token.issued', 'token.refreshed', 'token.introspected', 'token.revoked']) {
      expect(byType(events, type as GatehouseEvent['type'])[0], type).toMatchObject({
        clientId: 'web',
        sub: 'user-1',
        grantId,
      })
    }
    expect(byType(events, 'token.introspected')[0]).toMatchObject({ active: true, jti: expect.any(String) })
    expect(byType(events, 'token.revoked')[0]).toMatchObject({ tokenType: 'refresh_token' })
    expect(byType(events, 'session.ended')[0]).toMatchObject({ sub: 'user-1', sid: expect.any(String) })
    for (const event of events) expect(event.requestId).toMatch(/^[0-9a-f-]{36}$/)
    // No token value, secret or password in any event.
    const all = JSON.stringify(events)
    for (const value of [
      result.access_token,
      result.refresh_token,
      result.id_token,
      refreshed.access_token,
      refreshed.refresh_token,
      'web-secret',
      'alice-password',
    ]) {
      expect(all).not.toContain(value as string)
    }
  })

  it('replays: code.replay_detected and refresh_token.reuse_detected name the revoked grant', async () => {
    const { events, onEvent } = collector()
    const ctx = await setup({ onEvent })
    const { result, params, request } = await signIn(ctx)
    const replay = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      params,
      'https://rp.example.test/cb',
      request.verifier,
      ctx.opts,
    )
    expect(replay.status).toBe(400)
    const grantId = (byType(events, 'code.redeemed')[0] as { grantId: string }).grantId
    expect(byType(events, 'code.replay_detected')).toEqual([
      expect.objectContaining({ clientId: 'web', sub: 'user-1', grantId }),
    ])

    const second = await setup({ onEvent })
    const signed = await signIn(second)
    const rt = signed.result.refresh_token as string
    const use = () => oauth.refreshTokenGrantRequest(second.as, webClient, webAuth, rt, second.opts)
    expect((await use()).status).toBe(200)
    expect((await use()).status).toBe(400)
    expect(byType(events, 'refresh_token.reuse_detected')).toHaveLength(1)
    void result
  })

  it('key.rotated names the new keys; a throwing hook never fails the request', async () => {
    const { events, onEvent } = collector()
    const ctx = await setup({ onEvent })
    const created = await ctx.service.keys.rotate()
    expect(byType(events, 'key.rotated')).toEqual([
      expect.objectContaining({ kids: created.map((k) => k.kid), algorithms: created.map((k) => k.alg) }),
    ])

    const errors: unknown[] = []
    const failing = await setup({
      onEvent: () => {
        throw new Error('audit sink down')
      },
      logger: { warn() {}, error: (message) => void errors.push(message) },
    })
    const rejecting = await setup({ onEvent: () => Promise.reject(new Error('audit sink down')) })
    for (const service of [failing.service, rejecting.service]) {
      const response = await service.fetch(
        form(
          `${ISSUER}/connect/token`,
          { grant_type: 'client_credentials' },
          {
            authorization: basic('service', 'service-secret'),
          },
        ),
      )
      expect(response.status).toBe(200)
    }
    expect(errors).toContain('onEvent hook failed')
  })
})
