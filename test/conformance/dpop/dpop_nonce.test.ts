/**
 * X-05 and RFC 9449 §8, §9 with `dpop: { requireNonce: true }`: the token endpoint answers a proof
 * without a nonce with 400 `use_dpop_nonce` and a `DPoP-Nonce` header, userinfo with 401 and a
 * single `DPoP error="use_dpop_nonce"` challenge; oauth4webapi (`isDPoPNonceError`, the nonce it
 * caches) retries with it; successful responses carry the next nonce (§8.2).
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { ISSUER } from '../../helpers/service.ts'
import {
  type DpopContext,
  cnfOf,
  dpopKey,
  dpopSetup,
  handProof,
  redeemSpa,
  serviceToken,
  spaClient,
  spaCode,
  dpopClientCredentials,
  serviceClient,
} from './dpop_fixtures.ts'

function nonceSetup(): Promise<DpopContext> {
  return dpopSetup({ dpop: { requireNonce: true } })
}

describe('RFC 9449 §8 nonces at the token endpoint', () => {
  it('X-05 RFC 9449 §8: first request → 400 use_dpop_nonce + DPoP-Nonce; the retry with it → 200 DPoP', async () => {
    const ctx = await nonceSetup()
    const key = await dpopKey()
    const handle = oauth.DPoP({}, key.keyPair)
    const first = await dpopClientCredentials(ctx, handle)
    expect(first.status).toBe(400)
    const nonce = first.headers.get('dpop-nonce')
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(first.headers.get('cache-control')).toBe('no-store')
    const error = await oauth.processClientCredentialsResponse(ctx.as, serviceClient, first).catch((e: unknown) => e)
    expect(oauth.isDPoPNonceError(error)).toBe(true)
    expect(error).toMatchObject({ error: 'use_dpop_nonce', status: 400 })

    // oauth4webapi cached the nonce from the response: the retry carries it.
    const retry = await dpopClientCredentials(ctx, handle)
    expect(retry.status).toBe(200)
    // RFC 9449 §8.2: the success carries the nonce to use next.
    expect(retry.headers.get('dpop-nonce')).toBe(nonce)
    const result = await oauth.processClientCredentialsResponse(ctx.as, serviceClient, retry)
    expect(result.token_type).toBe('dpop')
    expect(cnfOf(result.access_token)).toEqual({ jkt: key.jkt })
  })

  it('RFC 9449 §8: a stale nonce (two windows later) → use_dpop_nonce with a fresh one', async () => {
    const ctx = await nonceSetup()
    const key = await dpopKey()
    const first = await serviceToken(ctx, await handProof(ctx, key))
    const nonce = first.headers.get('dpop-nonce') as string
    expect(await first.json()).toMatchObject({ error: 'use_dpop_nonce' })
    expect((await serviceToken(ctx, await handProof(ctx, key, { nonce }))).status).toBe(200)
    ctx.clock.advance(121)
    const stale = await serviceToken(ctx, await handProof(ctx, key, { nonce }))
    expect(stale.status).toBe(400)
    expect(await stale.json()).toEqual({
      error: 'use_dpop_nonce',
      error_description: 'the DPoP nonce is invalid or has expired',
    })
    expect(stale.headers.get('dpop-nonce')).not.toBe(nonce)
  })

  it('X-05: a request without DPoP needs no nonce and gets no DPoP-Nonce', async () => {
    const ctx = await nonceSetup()
    const response = await serviceToken(ctx)
    expect(response.status).toBe(200)
    expect(response.headers.get('dpop-nonce')).toBeNull()
    expect(await response.json()).toMatchObject({ token_type: 'Bearer' })
  })

  it('X-05: only nonce errors carry DPoP-Nonce (an invalid proof does not)', async () => {
    const ctx = await nonceSetup()
    const response = await serviceToken(ctx, await handProof(ctx, await dpopKey(), { htm: 'GET' }))
    expect(await response.json()).toMatchObject({ error: 'invalid_dpop_proof' })
    expect(response.headers.get('dpop-nonce')).toBeNull()
  })
})

describe('RFC 9449 §9 nonces at userinfo', () => {
  it('X-05 RFC 9449 §9: 401 with one DPoP challenge error="use_dpop_nonce" + DPoP-Nonce; the retry → 200', async () => {
    const ctx = await nonceSetup()
    const key = await dpopKey()
    // The code flow through oauth4webapi's nonce retry: the nonce demand consumed nothing, the
    // same code is redeemed by the retry.
    const tokenHandle = oauth.DPoP({}, key.keyPair)
    const code = await spaCode(ctx)
    const refused = await redeemSpa(ctx, code, tokenHandle)
    const process = (response: Response) =>
      oauth.processAuthorizationCodeResponse(ctx.as, spaClient, response, {
        expectedNonce: code.request.nonce as string,
      })
    expect(oauth.isDPoPNonceError(await process(refused).catch((err: unknown) => err))).toBe(true)
    const tokens = await process(await redeemSpa(ctx, code, tokenHandle))
    expect(tokens.token_type).toBe('dpop')
    // A fresh handle for the same key knows no nonce: userinfo asks for one.
    const handle = oauth.DPoP({}, key.keyPair)
    const first = await oauth.userInfoRequest(ctx.as, spaClient, tokens.access_token, { ...ctx.opts, DPoP: handle })
    expect(first.status).toBe(401)
    expect(first.headers.get('dpop-nonce')).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(first.headers.get('www-authenticate')).toMatch(
      new RegExp(
        `^DPoP realm="${ISSUER}", error="use_dpop_nonce", error_description="a DPoP nonce is required", algs="`,
      ),
    )
    const error = await oauth.processUserInfoResponse(ctx.as, spaClient, 'user-1', first).catch((err: unknown) => err)
    expect(oauth.isDPoPNonceError(error)).toBe(true)
    const retry = await oauth.userInfoRequest(ctx.as, spaClient, tokens.access_token, { ...ctx.opts, DPoP: handle })
    expect(retry.status).toBe(200)
    expect(await oauth.processUserInfoResponse(ctx.as, spaClient, 'user-1', retry)).toMatchObject({ sub: 'user-1' })
  })
})
