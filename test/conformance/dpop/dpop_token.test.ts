/**
 * X-05 X-06 TOK-03 RT-07 and RFC 9449 §5, §6.1, §10 at the token endpoint, driven by oauth4webapi
 * (`oauth.DPoP(client, keyPair)` passed as the `DPoP` option): DPoP-bound access tokens for
 * client_credentials, code and refresh; a public client's refresh tokens bound to its key, a
 * confidential client's not; codes bound with `dpop_jkt`; `requireDpop` clients; proofs refused
 * before any code is consumed.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { authorizationUrl, authorize, redeemCallback, webAuth, webClient } from '../../helpers/flow.ts'
import { safeDescription as wire } from '../../../src/errors.ts'
import { ISSUER, RU } from '../../helpers/service.ts'
import {
  SPA_CALLBACK,
  cnfOf,
  dpopKey,
  dpopSetup,
  handProof,
  redeemSpa,
  refreshSpa,
  serviceToken,
  spaClient,
  spaCode,
  spaTokens,
  tokenRequest,
  dpopClientCredentials,
  serviceClient,
  webTokensWithProof,
} from './dpop_fixtures.ts'

describe('RFC 9449 §5 client_credentials', () => {
  it('X-05 TOK-03 X-06 RFC 9449 §5 §6.1: a proof → token_type DPoP, cnf.jkt of the proof key, no-store', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const handle = oauth.DPoP({}, key.keyPair)
    const client = serviceClient
    const response = await dpopClientCredentials(ctx, handle)
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(response.headers.get('dpop-nonce')).toBeNull()
    const body = (await response.clone().json()) as Record<string, unknown>
    expect(body).toEqual({ access_token: expect.any(String), token_type: 'DPoP', expires_in: 3600 })
    const result = await oauth.processClientCredentialsResponse(ctx.as, client, response)
    expect(result.token_type).toBe('dpop')
    expect(cnfOf(result.access_token)).toEqual({ jkt: key.jkt })
    expect(key.jkt).toBe(await handle.calculateThumbprint())
  })

  it('X-05: without a DPoP header the token stays a Bearer token without cnf', async () => {
    const ctx = await dpopSetup()
    const body = (await (await serviceToken(ctx)).json()) as { access_token: string; token_type: string }
    expect(body.token_type).toBe('Bearer')
    expect(cnfOf(body.access_token)).toBeUndefined()
  })

  it.each(['EdDSA', 'PS256'] as const)('RFC 9449 §5: a %s proof key binds the token too', async (alg) => {
    const ctx = await dpopSetup()
    const key = await dpopKey(alg)
    const response = await dpopClientCredentials(ctx, oauth.DPoP({}, key.keyPair))
    const result = await oauth.processClientCredentialsResponse(ctx.as, serviceClient, response)
    expect(cnfOf(result.access_token)).toEqual({ jkt: key.jkt })
  })
})

describe('RFC 9449 §5 code and refresh: a public client', () => {
  it('RT-07 RFC 9449 §5: code and refresh with DPoP; the refresh token only works with the same key', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const handle = oauth.DPoP({}, key.keyPair)
    const tokens = await spaTokens(ctx, handle)
    expect(tokens.token_type).toBe('dpop')
    expect(cnfOf(tokens.access_token)).toEqual({ jkt: key.jkt })
    const refreshToken = tokens.refresh_token as string

    // Without a proof, or with another key's: invalid_grant, and the token is not burned.
    await expect(
      oauth.processRefreshTokenResponse(ctx.as, spaClient, await refreshSpa(ctx, refreshToken)),
    ).rejects.toMatchObject({ error: 'invalid_grant', status: 400 })
    const other = oauth.DPoP({}, (await dpopKey()).keyPair)
    await expect(
      oauth.processRefreshTokenResponse(ctx.as, spaClient, await refreshSpa(ctx, refreshToken, other)),
    ).rejects.toMatchObject({ error: 'invalid_grant', status: 400 })

    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      spaClient,
      await refreshSpa(ctx, refreshToken, handle),
    )
    expect(refreshed.token_type).toBe('dpop')
    expect(cnfOf(refreshed.access_token)).toEqual({ jkt: key.jkt })
    // The next generation is bound to the same key.
    const next = refreshed.refresh_token as string
    expect(next).not.toBe(refreshToken)
    await expect(
      oauth.processRefreshTokenResponse(ctx.as, spaClient, await refreshSpa(ctx, next, other)),
    ).rejects.toMatchObject({ error: 'invalid_grant' })
    await expect(
      oauth.processRefreshTokenResponse(ctx.as, spaClient, await refreshSpa(ctx, next, handle)),
    ).resolves.toMatchObject({ token_type: 'dpop' })
  })

  it('RFC 9449 §5: a public client refresh token issued without DPoP is not bound', async () => {
    const ctx = await dpopSetup()
    const tokens = await spaTokens(ctx)
    expect(tokens.token_type).toBe('bearer')
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      spaClient,
      await refreshSpa(ctx, tokens.refresh_token as string),
    )
    expect(refreshed.token_type).toBe('bearer')
  })

  it('RFC 9449 §10: a code bound with dpop_jkt needs that key: no proof or another key → invalid_grant', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const code = await spaCode(ctx, { dpop_jkt: key.jkt })
    for (const handle of [undefined, oauth.DPoP({}, (await dpopKey()).keyPair)]) {
      const response = await redeemSpa(ctx, code, handle)
      expect(response.status).toBe(400)
      expect(await response.json()).toMatchObject({ error: 'invalid_grant' })
    }
    // The failed redemptions consumed nothing: the rightful key redeems the code.
    const response = await redeemSpa(ctx, code, oauth.DPoP({}, key.keyPair))
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, spaClient, response, {
      expectedNonce: code.request.nonce as string,
    })
    expect(cnfOf(result.access_token)).toEqual({ jkt: key.jkt })
  })

  it('RFC 9449 §5 §4.3: an invalid proof at redemption → invalid_dpop_proof before the code is consumed', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const code = await spaCode(ctx)
    const params = {
      grant_type: 'authorization_code',
      client_id: 'spa',
      code: code.params.get('code') as string,
      redirect_uri: SPA_CALLBACK,
      code_verifier: code.request.verifier,
    }
    const bad = await handProof(ctx, key, { htm: 'PUT' })
    const refused = await tokenRequest(ctx, params, { proof: bad })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toEqual({
      error: 'invalid_dpop_proof',
      error_description: wire('DPoP proof "htm" does not match the request method'),
    })
    const redeemed = await tokenRequest(ctx, params, { proof: await handProof(ctx, key) })
    expect(redeemed.status).toBe(200)
    expect(await redeemed.json()).toMatchObject({ token_type: 'DPoP' })
  })
})

describe('RFC 9449 §5 code and refresh: a confidential client', () => {
  it('RFC 9449 §5: its refresh token is not bound; a proof on refresh still binds the new access token', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const tokens = await webTokensWithProof(ctx, key)
    expect(tokens.token_type).toBe('dpop')
    expect(cnfOf(tokens.access_token)).toEqual({ jkt: key.jkt })

    // Without a proof: a Bearer token.
    const plain = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, tokens.refresh_token as string, ctx.opts),
    )
    expect(plain.token_type).toBe('bearer')
    expect(cnfOf(plain.access_token)).toBeUndefined()
    // With another key's proof: a token bound to that key.
    const other = await dpopKey()
    const rebound = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, plain.refresh_token as string, {
        ...ctx.opts,
        DPoP: oauth.DPoP({}, other.keyPair),
      }),
    )
    expect(rebound.token_type).toBe('dpop')
    expect(cnfOf(rebound.access_token)).toEqual({ jkt: other.jkt })
    expect(decodeJwt(rebound.access_token)).toMatchObject({ iss: ISSUER, client_id: 'web' })
  })
})

describe('RFC 9449 §5.2: clients that must use DPoP', () => {
  it('RFC 9449 §5.2 §5: a requireDpop client without a proof → 400 invalid_dpop_proof; with one → DPoP', async () => {
    const ctx = await dpopSetup()
    await ctx.service.clients.ensure({
      clientId: 'bound',
      clientSecret: 'bound-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
      requireDpop: true,
    })
    const params = { grant_type: 'client_credentials', scope: 'api1' }
    const refused = await tokenRequest(ctx, params, { auth: ['bound', 'bound-secret'] })
    expect(refused.status).toBe(400)
    expect(refused.headers.get('dpop-nonce')).toBeNull()
    expect(await refused.json()).toEqual({
      error: 'invalid_dpop_proof',
      error_description: 'the client must send a DPoP proof',
    })
    const proof = await handProof(ctx, await dpopKey())
    const bound = await tokenRequest(ctx, params, { auth: ['bound', 'bound-secret'], proof })
    expect(await bound.json()).toMatchObject({ token_type: 'DPoP' })
  })

  it('RFC 9449 §5.2: a requireDpop code client: redemption without a proof is refused, consuming nothing', async () => {
    const ctx = await dpopSetup()
    await ctx.service.clients.ensure({
      clientId: 'bound-web',
      clientSecret: 'bound-web-secret',
      permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
      redirectUris: [RU],
      requireDpop: true,
    })
    const client: oauth.Client = { client_id: 'bound-web' }
    const auth = oauth.ClientSecretBasic('bound-web-secret')
    const request = await authorizationUrl(ctx.as, { clientId: 'bound-web', scope: 'openid' })
    const callback = await authorize(ctx.browser, request.url)
    const refused = await redeemCallback(ctx, callback, request, { client, auth })
    expect(refused.response.status).toBe(400)
    expect(await refused.response.json()).toMatchObject({ error: 'invalid_dpop_proof' })
    const key = await dpopKey()
    const withProof = { ...ctx, opts: { ...ctx.opts, DPoP: oauth.DPoP({}, key.keyPair) } }
    const { response } = await redeemCallback(withProof, callback, request, { client, auth })
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, client, response, {
      expectedNonce: request.nonce as string,
    })
    expect(cnfOf(tokens.access_token)).toEqual({ jkt: key.jkt })
  })
})

describe('RFC 9449 §4.3 refusals at the token endpoint', () => {
  it('RFC 9449 §11.1: a replayed proof → 400 invalid_dpop_proof', async () => {
    const ctx = await dpopSetup()
    const proof = await handProof(ctx, await dpopKey())
    expect((await serviceToken(ctx, proof)).status).toBe(200)
    const replayed = await serviceToken(ctx, proof)
    expect(replayed.status).toBe(400)
    expect(await replayed.json()).toEqual({
      error: 'invalid_dpop_proof',
      error_description: wire('DPoP proof "jti" has already been used'),
    })
  })

  it.each([
    ['htm GET', { htm: 'GET' }, 'DPoP proof "htm" does not match the request method'],
    [
      'htu of the userinfo endpoint',
      { htu: `${ISSUER}/connect/userinfo` },
      'DPoP proof "htu" does not match the request URL',
    ],
    [
      'htu of another host',
      { htu: 'https://evil.example.test/connect/token' },
      'DPoP proof "htu" does not match the request URL',
    ],
    ['an iat 10 minutes old', { iat: Math.floor(Date.now() / 1000) - 600 }, 'DPoP proof "iat" is too old'],
  ])('RFC 9449 §4.3: %s → 400 invalid_dpop_proof, no DPoP-Nonce', async (_, claims, description) => {
    const ctx = await dpopSetup()
    const response = await serviceToken(ctx, await handProof(ctx, await dpopKey(), claims))
    expect(response.status).toBe(400)
    expect(response.headers.get('dpop-nonce')).toBeNull()
    expect(await response.json()).toEqual({ error: 'invalid_dpop_proof', error_description: wire(description) })
  })

  it('RFC 9449 §4.3 (9): htu is the configured token endpoint, never the URL the request arrived at', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    // Routed on its path alone; a proof for the host it arrived at does not match the issuer's URL.
    const internal = 'http://10.0.0.7:8080/connect/token'
    const refused = await serviceToken(ctx, await handProof(ctx, key, { htu: internal }), internal)
    expect(await refused.json()).toMatchObject({ error: 'invalid_dpop_proof' })
    const accepted = await serviceToken(ctx, await handProof(ctx, key), internal)
    expect(await accepted.json()).toMatchObject({ token_type: 'DPoP' })
  })

  it('RFC 9449 §4.3 (1, 7): two DPoP headers, or a private key in jwk → invalid_dpop_proof', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const [a, b] = [await handProof(ctx, key), await handProof(ctx, key)]
    expect(await (await serviceToken(ctx, `${a}, ${b}`)).json()).toMatchObject({ error: 'invalid_dpop_proof' })
    const { generateKeyPair, exportJWK } = await import('jose')
    const extractable = await generateKeyPair('ES256', { extractable: true })
    const leaked = await handProof(
      ctx,
      { ...key, keyPair: extractable as CryptoKeyPair },
      {},
      {
        jwk: await exportJWK(extractable.privateKey),
      },
    )
    expect(await (await serviceToken(ctx, leaked)).json()).toEqual({
      error: 'invalid_dpop_proof',
      error_description: wire('DPoP proof "jwk" must be a public key'),
    })
  })
})
