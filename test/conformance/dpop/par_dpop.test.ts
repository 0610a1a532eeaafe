/**
 * DPoP at authorization (RFC 9449 §10): a proof sent with the push (§10.1) or a `dpop_jkt`
 * parameter binds the authorization code to a key (`CodeRecord.dpopJkt`, read from the store here;
 * the token endpoint checks it at redemption). Proofs at the PAR endpoint are checked as at the
 * token endpoint: htm, htu, one-time jti, server nonces when required.
 */
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { authorizationUrl, authorize, expectErrorRedirect } from '../../helpers/flow.ts'
import {
  PAR_URL,
  type ParContext,
  parSetup,
  push,
  requestParams,
  requestUriUrl,
  storedCode,
} from '../../helpers/par.ts'
import { ISSUER, RU, basic, form } from '../../helpers/service.ts'

const webAuth = oauth.ClientSecretBasic('web-secret')

/** The client as oauth4webapi sees it, its clock set to the service's (proofs carry `iat`). */
function webClient(ctx: ParContext): oauth.Client {
  return { client_id: 'web', [oauth.clockSkew]: ctx.clock.now() - Math.floor(Date.now() / 1000) }
}

/** A DPoP handle with a fresh ES256 key, and that key's thumbprint. */
async function dpopKey(ctx: ParContext) {
  const handle = oauth.DPoP(webClient(ctx), await oauth.generateKeyPair('ES256'))
  return { handle, jkt: await handle.calculateThumbprint() }
}

/** A proof signed by hand: `claims` override the valid ones for POST at the PAR endpoint. */
async function handProof(ctx: ParContext, claims: Record<string, unknown> = {}) {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const jwk = await exportJWK(publicKey)
  const proof = await new SignJWT({
    jti: crypto.randomUUID(),
    htm: 'POST',
    htu: PAR_URL,
    iat: ctx.clock.now(),
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
    .sign(privateKey)
  return { proof, jkt: await calculateJwkThumbprint(jwk, 'sha256') }
}

async function pushWithProof(ctx: ParContext, proof: string, extra: Record<string, string> = {}) {
  const { params } = await requestParams({ extra })
  return ctx.service.fetch(
    form(PAR_URL, Object.fromEntries(params), { authorization: basic('web', 'web-secret'), dpop: proof }),
  )
}

describe('RFC 9449 §10: the code is bound to a DPoP key', () => {
  it('§10.1: a proof with the push binds the code, across the sign-in interaction', async () => {
    const ctx = await parSetup()
    const { handle, jkt } = await dpopKey(ctx)
    const { params } = await requestParams()
    const { request_uri } = await push(ctx, params, webClient(ctx), webAuth, { DPoP: handle })
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    expect(callback.searchParams.get('iss')).toBe(ISSUER)
    expect(await storedCode(ctx, callback)).toMatchObject({ clientId: 'web', dpopJkt: jkt })
  })

  it('§10.1: the bound code is redeemed with that key only (DPoP token)', async () => {
    const ctx = await parSetup()
    const { handle } = await dpopKey(ctx)
    const { params, verifier, state, nonce } = await requestParams()
    const client = webClient(ctx)
    const { request_uri } = await push(ctx, params, client, webAuth, { DPoP: handle })
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    const validated = oauth.validateAuthResponse(ctx.as, client, callback, state)
    const redeem = (options: oauth.TokenEndpointRequestOptions = {}) =>
      oauth.authorizationCodeGrantRequest(ctx.as, client, webAuth, validated, RU, verifier, { ...ctx.opts, ...options })
    const other = await dpopKey(ctx)
    expect(await (await redeem({ DPoP: other.handle })).json()).toMatchObject({ error: 'invalid_grant' })
    expect(await (await redeem()).json()).toMatchObject({ error: 'invalid_grant' })
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, client, await redeem({ DPoP: handle }), {
      expectedNonce: nonce,
    })
    expect(result.token_type).toBe('dpop')
  })

  it('§10.1: the proof and a matching dpop_jkt together bind the code', async () => {
    const ctx = await parSetup()
    const { handle, jkt } = await dpopKey(ctx)
    const { params } = await requestParams({ extra: { dpop_jkt: jkt } })
    const { request_uri } = await push(ctx, params, webClient(ctx), webAuth, { DPoP: handle })
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    expect((await storedCode(ctx, callback))?.dpopJkt).toBe(jkt)
  })

  it('§10: dpop_jkt pushed without a proof binds the code', async () => {
    const ctx = await parSetup()
    const { jkt } = await dpopKey(ctx)
    const { params } = await requestParams({ extra: { dpop_jkt: jkt } })
    const { request_uri } = await push(ctx, params)
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    expect((await storedCode(ctx, callback))?.dpopJkt).toBe(jkt)
  })

  it('§10: dpop_jkt at the authorization endpoint (no push) binds the code', async () => {
    const ctx = await parSetup()
    const { jkt } = await dpopKey(ctx)
    const { url } = await authorizationUrl(ctx.as, { extra: { dpop_jkt: jkt } })
    const callback = await authorize(ctx.browser, url)
    expect((await storedCode(ctx, callback))?.dpopJkt).toBe(jkt)
  })

  it('without DPoP the code is not bound', async () => {
    const ctx = await parSetup()
    const { params } = await requestParams()
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', (await push(ctx, params)).request_uri))
    const code = await storedCode(ctx, callback)
    expect(code).toBeDefined()
    expect(code?.dpopJkt).toBeUndefined()
  })

  it('§10: a malformed dpop_jkt at the authorization endpoint → invalid_request redirect with iss', async () => {
    const ctx = await parSetup()
    const { url, state } = await authorizationUrl(ctx.as, { state: 's', extra: { dpop_jkt: 'x'.repeat(42) } })
    const response = await ctx.service.fetch(new Request(url, { redirect: 'manual' }))
    const location = new URL(response.headers.get('location') as string)
    expectErrorRedirect(location, RU, 'invalid_request', state)
  })
})

describe('RFC 9449 §10.1: the proof at the PAR endpoint', () => {
  it('a dpop_jkt of another key than the proof → 400 invalid_request', async () => {
    const ctx = await parSetup()
    const { handle } = await dpopKey(ctx)
    const other = await dpopKey(ctx)
    const { params } = await requestParams({ extra: { dpop_jkt: other.jkt } })
    await expect(push(ctx, params, webClient(ctx), webAuth, { DPoP: handle })).rejects.toMatchObject({
      error: 'invalid_request',
      status: 400,
    })
  })

  it('a proof for another URL → 400 invalid_dpop_proof', async () => {
    const ctx = await parSetup()
    const { proof } = await handProof(ctx, { htu: `${ISSUER}/connect/token` })
    const response = await pushWithProof(ctx, proof)
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_dpop_proof' })
  })

  it('a proof used twice → 400 invalid_dpop_proof the second time', async () => {
    const ctx = await parSetup()
    const { proof, jkt } = await handProof(ctx)
    const first = await pushWithProof(ctx, proof)
    expect(first.status).toBe(201)
    const { request_uri } = await first.json()
    const second = await pushWithProof(ctx, proof)
    expect(second.status).toBe(400)
    expect(await second.json()).toMatchObject({ error: 'invalid_dpop_proof' })
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    expect((await storedCode(ctx, callback))?.dpopJkt).toBe(jkt)
  })

  it('dpop.requireNonce: use_dpop_nonce with a DPoP-Nonce, and oauth4webapi retries with it', async () => {
    const ctx = await parSetup({ dpop: { requireNonce: true } })
    const { handle, jkt } = await dpopKey(ctx)
    const { params } = await requestParams()
    const client = webClient(ctx)
    const options = { ...ctx.opts, DPoP: handle }
    const first = await oauth.pushedAuthorizationRequest(ctx.as, client, webAuth, params, options)
    expect(first.status).toBe(400)
    expect(first.headers.get('dpop-nonce')).toMatch(/^[A-Za-z0-9_-]{32}$/)
    const error = await oauth.processPushedAuthorizationResponse(ctx.as, client, first).catch((err: unknown) => err)
    expect(oauth.isDPoPNonceError(error)).toBe(true)
    const second = await oauth.pushedAuthorizationRequest(ctx.as, client, webAuth, params, options)
    expect(second.status).toBe(201)
    // A fresh nonce for the token request that follows (RFC 9449 §8.2).
    expect(second.headers.get('dpop-nonce')).toMatch(/^[A-Za-z0-9_-]{32}$/)
    const { request_uri } = await oauth.processPushedAuthorizationResponse(ctx.as, client, second)
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'web', request_uri))
    expect((await storedCode(ctx, callback))?.dpopJkt).toBe(jkt)
  })

  it('dpop.requireNonce: a push without a DPoP header needs no nonce', async () => {
    const ctx = await parSetup({ dpop: { requireNonce: true } })
    const { params } = await requestParams()
    const response = await ctx.service.fetch(
      form(PAR_URL, Object.fromEntries(params), { authorization: basic('web', 'web-secret') }),
    )
    expect(response.status).toBe(201)
    expect(response.headers.get('dpop-nonce')).toBeNull()
  })
})
