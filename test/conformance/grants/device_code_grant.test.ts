/**
 * #29 the device authorization grant at the token endpoint (RFC 8628 §3.4, §3.5) through
 * oauth4webapi: authorization_pending, slow_down (the interval grows by 5 s; the injected clock,
 * never sleeping), access_denied, expired_token, the code flow's tokens once on approval, a replay
 * revoking them, another client's device code consuming nothing, DPoP-bound tokens, audit events.
 * The end-user's decision goes through test/helpers/device.ts (the store, until the pages land).
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent } from '../../../src/events/index.ts'
import {
  DEVICE_GRANT,
  DEVICE_SCOPES,
  MAIL,
  approveDevice,
  denyDevice,
  deviceClient,
  ensureDeviceClients,
  pollDevice,
  pollOnce,
  startDevice,
} from '../../helpers/device.ts'
import { setup } from '../../helpers/flow.ts'
import { ISSUER, clock } from '../../helpers/service.ts'
import { dpopKey } from '../dpop/dpop_fixtures.ts'

async function start(options: Parameters<typeof setup>[0] = {}) {
  const events: GatehouseEvent[] = []
  const ctx = await setup({ scopes: DEVICE_SCOPES, onEvent: (event) => void events.push(event), ...options })
  await ensureDeviceClients(ctx)
  return { ...ctx, events }
}
type Ctx = Awaited<ReturnType<typeof start>>

/** Tokens of a poll that must succeed. */
async function redeemed(ctx: Ctx, deviceCode: string, clientId = 'cli', options: Parameters<typeof pollOnce>[3] = {}) {
  const polled = await pollOnce(ctx, deviceCode, clientId, options)
  if (!polled.ok) throw new Error(`expected tokens, got ${polled.error}`)
  return polled.tokens
}

/** A poll that must fail with `error` (400 unless told). */
async function refusedPoll(ctx: Ctx, deviceCode: string, error: string, clientId = 'cli', status = 400) {
  const polled = await pollOnce(ctx, deviceCode, clientId)
  expect(polled).toMatchObject({ ok: false, error, status })
}

/** Whether `tv` (a confidential client with ept:introspection) sees the token as active. */
async function active(ctx: Ctx, token: string): Promise<boolean> {
  const { client, auth } = deviceClient('tv')
  const response = await oauth.introspectionRequest(ctx.as, client, auth, token, ctx.opts)
  return ((await response.json()) as { active: boolean }).active
}

describe('#29 device_code grant', () => {
  it('#29 authorization_pending until the end-user decides (400 JSON, no-store); the first poll is never slow_down', async () => {
    const ctx = await start()
    const device = await startDevice(ctx)
    const response = await pollDevice(ctx, device.device_code)
    expect(response.status).toBe(400)
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(await response.json()).toMatchObject({ error: 'authorization_pending' })
    expect(device.interval).toBe(5)
    ctx.clock.advance(5)
    await refusedPoll(ctx, device.device_code, 'authorization_pending')
  })

  it('#29 slow_down when polled sooner than the interval: it grows by 5 s, and a poll after the new interval is pending again', async () => {
    const ctx = await start()
    const device = await startDevice(ctx)
    expect(device.interval).toBe(5)
    await refusedPoll(ctx, device.device_code, 'authorization_pending')
    ctx.clock.advance(1)
    await refusedPoll(ctx, device.device_code, 'slow_down') // interval now 10
    ctx.clock.advance(5) // the old interval: too soon for the new one
    await refusedPoll(ctx, device.device_code, 'slow_down') // interval now 15
    ctx.clock.advance(15)
    await refusedPoll(ctx, device.device_code, 'authorization_pending')
    ctx.clock.advance(15)
    await refusedPoll(ctx, device.device_code, 'authorization_pending')
  })

  it('#29 access_denied after the end-user denies; it stays so', async () => {
    const ctx = await start()
    const device = await startDevice(ctx)
    await denyDevice(ctx.service.store, device.user_code, ctx.clock.now())
    await refusedPoll(ctx, device.device_code, 'access_denied')
    ctx.clock.advance(5)
    await refusedPoll(ctx, device.device_code, 'access_denied')
  })

  it('#29 expired_token after deviceCodeTtl, approved or not', async () => {
    const ctx = await start({ deviceCodeTtl: 120 })
    const pending = await startDevice(ctx)
    const approved = await startDevice(ctx)
    await approveDevice(ctx.service.store, approved.user_code, ctx.clock.now())
    ctx.clock.advance(120)
    await refusedPoll(ctx, pending.device_code, 'expired_token')
    await refusedPoll(ctx, approved.device_code, 'expired_token')
    ctx.clock.advance(3000)
    await refusedPoll(ctx, pending.device_code, 'expired_token')
  })

  it('#29 an unknown device_code is invalid_grant; none is invalid_request; a client without the grant or ept:token is unauthorized_client', async () => {
    const ctx = await start()
    await refusedPoll(ctx, 'not-a-device-code', 'invalid_grant')
    const missing = await oauth.genericTokenEndpointRequest(
      ctx.as,
      { client_id: 'cli' },
      oauth.None(),
      DEVICE_GRANT,
      {},
      ctx.opts,
    )
    expect(missing.status).toBe(400)
    expect(await missing.json()).toMatchObject({ error: 'invalid_request' })
    const device = await startDevice(ctx)
    await refusedPoll(ctx, device.device_code, 'unauthorized_client', 'no-grant')
    await refusedPoll(ctx, device.device_code, 'unauthorized_client', 'no-token')
  })

  it('#29 approval → the code flow tokens once: access token, ID token with openid (auth_time, no nonce, no sid), refresh token', async () => {
    const ctx = await start()
    const device = await startDevice(ctx, { scope: 'openid profile api1' })
    await refusedPoll(ctx, device.device_code, 'authorization_pending')
    const authTime = ctx.clock.now() - 30
    await approveDevice(ctx.service.store, device.user_code, ctx.clock.now(), { sub: 'user-1', authTime, amr: ['pwd'] })
    ctx.clock.advance(5)
    const tokens = await redeemed(ctx, device.device_code)
    expect(tokens.token_type).toBe('bearer')
    expect(tokens.scope).toBe('openid profile api1')
    expect(tokens.refresh_token).toBeTypeOf('string')
    const access = decodeJwt(tokens.access_token)
    expect(access).toMatchObject({ sub: 'user-1', client_id: 'cli', scope: 'openid profile api1', auth_time: authTime })
    expect(access.sid).toBeUndefined()
    const id = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken
    expect(id).toMatchObject({ iss: ISSUER, sub: 'user-1', aud: 'cli', auth_time: authTime, amr: ['pwd'] })
    expect(id.nonce).toBeUndefined()
    expect(id.sid).toBeUndefined()
    expect(id.given_name).toBe('Alice')
    // The refresh token works like the code flow's.
    const { client, auth } = deviceClient('cli')
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      client,
      await oauth.refreshTokenGrantRequest(ctx.as, client, auth, tokens.refresh_token as string, ctx.opts),
    )
    expect(refreshed.scope).toBe('openid profile api1')
  })

  it('#29 no ID token without openid; with requireOfflineAccess a refresh token only with offline_access', async () => {
    const ctx = await start({ requireOfflineAccess: true })
    const plain = await startDevice(ctx, { scope: 'api1' })
    const offline = await startDevice(ctx, { scope: 'openid api1 offline_access' })
    await approveDevice(ctx.service.store, plain.user_code, ctx.clock.now())
    await approveDevice(ctx.service.store, offline.user_code, ctx.clock.now())
    const without = await redeemed(ctx, plain.device_code)
    expect(without.id_token).toBeUndefined()
    expect(without.refresh_token).toBeUndefined()
    expect(without.scope).toBe('api1')
    const withOffline = await redeemed(ctx, offline.device_code)
    expect(withOffline.id_token).toBeTypeOf('string')
    expect(withOffline.refresh_token).toBeTypeOf('string')
  })

  it('#29 a second redemption is invalid_grant and revokes the first tokens (introspection inactive, refresh refused)', async () => {
    const ctx = await start()
    const device = await startDevice(ctx, { scope: 'openid api1' }, 'tv')
    await approveDevice(ctx.service.store, device.user_code, ctx.clock.now())
    const first = await redeemed(ctx, device.device_code, 'tv')
    expect(await active(ctx, first.access_token)).toBe(true)
    ctx.clock.advance(5)
    await refusedPoll(ctx, device.device_code, 'invalid_grant', 'tv')
    expect(await active(ctx, first.access_token)).toBe(false)
    const { client, auth } = deviceClient('tv')
    const refreshed = await oauth.refreshTokenGrantRequest(
      ctx.as,
      client,
      auth,
      first.refresh_token as string,
      ctx.opts,
    )
    expect(refreshed.status).toBe(400)
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' })
    const replay = ctx.events.find((event) => event.type === 'code.replay_detected')
    expect(replay).toMatchObject({ clientId: 'tv', sub: 'user-1' })
  })

  it("#29 another client's device_code is invalid_grant and consumes nothing: no poll counted, the owner redeems it", async () => {
    const ctx = await start()
    const device = await startDevice(ctx, { scope: 'openid' }, 'tv')
    await refusedPoll(ctx, device.device_code, 'authorization_pending', 'tv')
    ctx.clock.advance(1)
    // Polled too soon by the owner this would be slow_down: another client's poll is no poll.
    await refusedPoll(ctx, device.device_code, 'invalid_grant', 'cli')
    ctx.clock.advance(4)
    await refusedPoll(ctx, device.device_code, 'authorization_pending', 'tv')
    await approveDevice(ctx.service.store, device.user_code, ctx.clock.now())
    ctx.clock.advance(5)
    await refusedPoll(ctx, device.device_code, 'invalid_grant', 'cli')
    expect((await redeemed(ctx, device.device_code, 'tv')).access_token).toBeTypeOf('string')
    expect(ctx.events.some((event) => event.type === 'code.replay_detected')).toBe(false)
  })

  it('#29 resource: the tokens are for the requested resource; one not in the authorization is invalid_target and consumes nothing', async () => {
    const ctx = await start()
    const device = await startDevice(ctx, [
      ['scope', 'openid mail.read api1'],
      ['resource', MAIL],
    ])
    await approveDevice(ctx.service.store, device.user_code, ctx.clock.now())
    const wrong = await pollOnce(ctx, device.device_code, 'cli', {
      additionalParameters: { resource: 'https://auth.example.test/api1' },
    })
    expect(wrong).toMatchObject({ ok: false, error: 'invalid_target' })
    const tokens = await redeemed(ctx, device.device_code, 'cli', { additionalParameters: { resource: MAIL } })
    expect(tokens.scope).toBe('openid mail.read')
    expect(decodeJwt(tokens.access_token).aud).toBe(MAIL)
  })

  it("#29 DPoP: a poll with a proof gets DPoP-bound tokens (cnf.jkt; a public client's refresh token bound too)", async () => {
    const time = clock(Math.floor(Date.now() / 1000))
    const ctx = await start({ now: time.now })
    const key = await dpopKey()
    const { client } = deviceClient('cli')
    const device = await startDevice(ctx, { scope: 'openid api1' })
    await approveDevice(ctx.service.store, device.user_code, time.now())
    const tokens = await redeemed(ctx, device.device_code, 'cli', { DPoP: oauth.DPoP(client, key.keyPair) })
    expect(tokens.token_type).toBe('dpop')
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt: key.jkt })
    // Without the key's proof, the refresh token is refused.
    const response = await oauth.refreshTokenGrantRequest(
      ctx.as,
      client,
      oauth.None(),
      tokens.refresh_token as string,
      ctx.opts,
    )
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_grant' })
  })

  it('#29 audit events: device.authorization_started, then device.redeemed and token.issued with the device_code grant type', async () => {
    const ctx = await start()
    const device = await startDevice(ctx, { scope: 'openid api1' })
    await approveDevice(ctx.service.store, device.user_code, ctx.clock.now())
    const tokens = await redeemed(ctx, device.device_code)
    const started = ctx.events.find((event) => event.type === 'device.authorization_started')
    const grantId = (started as { grantId: string }).grantId
    expect(started).toMatchObject({ clientId: 'cli', scope: 'openid api1' })
    expect(ctx.events.find((event) => event.type === 'device.redeemed')).toMatchObject({
      clientId: 'cli',
      sub: 'user-1',
      grantId,
    })
    expect(ctx.events.find((event) => event.type === 'token.issued')).toMatchObject({
      grantType: DEVICE_GRANT,
      clientId: 'cli',
      sub: 'user-1',
      grantId,
      jti: decodeJwt(tokens.access_token).jti,
      scope: 'openid api1',
    })
  })
})
