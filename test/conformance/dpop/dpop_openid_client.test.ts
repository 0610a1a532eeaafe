/**
 * X-05 RT-07 UI-01 and RFC 9449 §5, §7.1, §8 with openid-client v6: `client.getDPoPHandle(config,
 * keyPair)` passed to clientCredentialsGrant, authorizationCodeGrant, refreshTokenGrant and
 * fetchUserInfo, its automatic retry on `use_dpop_nonce`; in process (the https test issuer) and
 * over real HTTP (an http issuer on 127.0.0.1, allowed with `allowInsecureRequests`).
 */
import type { Server } from 'node:http'
import * as client from 'openid-client'
import { afterEach, describe, expect, it } from 'vitest'
import { serveNode } from '../../../adapters/node.ts'
import { createTokenService } from '../../../src/index.ts'
import { authorize } from '../../helpers/flow.ts'
import { CLIENTS, ISSUER, clock } from '../../helpers/service.ts'
import { freePort } from '../../runtime/server.ts'
import { SPA_CALLBACK, cnfOf, type DpopContext, dpopKey, dpopSetup } from './dpop_fixtures.ts'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** openid-client's configuration for `clientId`, discovered in process. */
async function configure(ctx: DpopContext, clientId: string, auth: client.ClientAuth): Promise<client.Configuration> {
  const fetch: client.CustomFetch = (url, options) => ctx.service.fetch(new Request(url, options as RequestInit))
  const config = await client.discovery(new URL(ISSUER), clientId, undefined, auth, { [client.customFetch]: fetch })
  config[client.customFetch] = fetch
  return config
}

describe('RFC 9449 with openid-client v6', () => {
  it('X-05 RFC 9449 §5: clientCredentialsGrant with a DPoP handle → token_type dpop, cnf.jkt', async () => {
    const ctx = await dpopSetup()
    const config = await configure(ctx, 'service', client.ClientSecretPost('service-secret'))
    const key = await dpopKey()
    const DPoP = client.getDPoPHandle(config, key.keyPair)
    const tokens = await client.clientCredentialsGrant(config, { scope: 'api1' }, { DPoP })
    expect(tokens.token_type).toBe('dpop')
    expect(cnfOf(tokens.access_token)).toEqual({ jkt: key.jkt })
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({
      active: true,
      token_type: 'DPoP',
      cnf: { jkt: key.jkt },
    })
  })

  it('RT-07 UI-01 RFC 9449 §5 §7.1: a public client: code, userinfo and refresh with DPoP; refresh needs the key', async () => {
    const ctx = await dpopSetup()
    const config = await configure(ctx, 'spa', client.None())
    const key = await dpopKey()
    const DPoP = client.getDPoPHandle(config, key.keyPair)
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const nonce = client.randomNonce()
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: SPA_CALLBACK,
      scope: 'openid profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    })
    const callback = await authorize(ctx.browser, url)
    const tokens = await client.authorizationCodeGrant(
      config,
      callback,
      { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce },
      undefined,
      { DPoP },
    )
    expect(tokens.token_type).toBe('dpop')
    expect(cnfOf(tokens.access_token)).toEqual({ jkt: key.jkt })
    expect(await client.fetchUserInfo(config, tokens.access_token, 'user-1', { DPoP })).toMatchObject({
      sub: 'user-1',
      given_name: 'Alice',
    })

    const refreshToken = tokens.refresh_token as string
    await expect(client.refreshTokenGrant(config, refreshToken)).rejects.toMatchObject({ error: 'invalid_grant' })
    const other = client.getDPoPHandle(config, (await dpopKey()).keyPair)
    await expect(client.refreshTokenGrant(config, refreshToken, undefined, { DPoP: other })).rejects.toMatchObject({
      error: 'invalid_grant',
    })
    const refreshed = await client.refreshTokenGrant(config, refreshToken, undefined, { DPoP })
    expect(refreshed.token_type).toBe('dpop')
    expect(cnfOf(refreshed.access_token)).toEqual({ jkt: key.jkt })
  })

  it('X-05 RFC 9449 §8: with requireNonce, openid-client retries on use_dpop_nonce by itself', async () => {
    const ctx = await dpopSetup({ dpop: { requireNonce: true } })
    const config = await configure(ctx, 'service', client.ClientSecretPost('service-secret'))
    const key = await dpopKey()
    const tokens = await client.clientCredentialsGrant(
      config,
      { scope: 'api1' },
      { DPoP: client.getDPoPHandle(config, key.keyPair) },
    )
    expect(tokens.token_type).toBe('dpop')
    expect(cnfOf(tokens.access_token)).toEqual({ jkt: key.jkt })
  })

  it('X-05 over real HTTP: an http issuer on 127.0.0.1 (allowInsecureRequests), nonces demanded', async () => {
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    const time = clock(Math.floor(Date.now() / 1000))
    const service = createTokenService({
      issuer,
      now: time.now,
      secretHashIterations: 1000,
      logger: { warn() {}, error() {} },
      dpop: { requireNonce: true },
    })
    await service.clients.ensure(CLIENTS.service as NonNullable<(typeof CLIENTS)['service']>)
    await service.ready()
    const server: Server = await serveNode(service.fetch, { port, hostname: '127.0.0.1' })
    closers.push(() => new Promise((resolve) => server.close(() => resolve())))

    const config = await client.discovery(
      new URL(issuer),
      'service',
      undefined,
      client.ClientSecretBasic('service-secret'),
      { execute: [client.allowInsecureRequests] },
    )
    const key = await dpopKey()
    const DPoP = client.getDPoPHandle(config, key.keyPair)
    for (let i = 0; i < 2; i++) {
      const tokens = await client.clientCredentialsGrant(config, { scope: 'api1' }, { DPoP })
      expect(tokens.token_type).toBe('dpop')
      expect(cnfOf(tokens.access_token)).toEqual({ jkt: key.jkt })
    }
    await service.close()
  })
})
