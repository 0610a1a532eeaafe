/**
 * The `fapi2-security` profile at the PAR and authorization endpoints (FAPI 2.0 Security Profile
 * §5.3.2): pushed requests only, PKCE S256 for every client (no `plain`), codes of at most 60
 * seconds, and only private_key_jwt clients (others are refused at authentication by PAR and with
 * unauthorized_client by the authorization endpoint). RFC 9207 `iss` on every redirect.
 */
import { exportJWK, generateKeyPair } from 'jose'
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
import { CLIENTS, ISSUER, basic, form } from '../../helpers/service.ts'

const BANK_RU = 'https://rp.example.test/bank'

/** A fapi2 service with `bank`, a private_key_jwt client allowed plain PKCE and 300 s codes (both overridden). */
async function fapiSetup() {
  const ctx = await parSetup({ profile: 'fapi2-security' })
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
  await ctx.service.clients.ensure({
    clientId: 'bank',
    permissions: CLIENTS.web?.permissions ?? [],
    redirectUris: [BANK_RU],
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwks: { keys: [{ ...(await exportJWK(publicKey)), kty: 'EC', alg: 'ES256', kid: 'bank-1' }] },
    allowPlainPkce: true,
    lifetimes: { authorizationCode: 300 },
  })
  const bank: oauth.Client = {
    client_id: 'bank',
    [oauth.clockSkew]: ctx.clock.now() - Math.floor(Date.now() / 1000),
  }
  const auth = oauth.PrivateKeyJwt({ key: privateKey, kid: 'bank-1' })
  return { ...ctx, bank, auth }
}

function go(ctx: ParContext, url: URL): Promise<Response> {
  return ctx.service.fetch(new Request(url, { redirect: 'manual' }))
}

describe('profile fapi2-security: pushed authorization requests', () => {
  it('a private_key_jwt client pushes with DPoP; the code lives at most 60 seconds and is redeemed', async () => {
    const ctx = await fapiSetup()
    expect(ctx.as.require_pushed_authorization_requests).toBe(true)
    const dpop = oauth.DPoP(ctx.bank, await oauth.generateKeyPair('ES256'))
    const { params, verifier, state, nonce } = await requestParams({ clientId: 'bank', redirectUri: BANK_RU })
    const { request_uri } = await push(ctx, params, ctx.bank, ctx.auth, { DPoP: dpop })
    const callback = await authorize(ctx.browser, requestUriUrl(ctx.as, 'bank', request_uri))
    expect(callback.searchParams.get('iss')).toBe(ISSUER)
    const code = await storedCode(ctx, callback)
    expect(code?.clientId).toBe('bank')
    expect((code?.expiresAt ?? 0) - (code?.issuedAt ?? 0)).toBe(60)
    const validated = oauth.validateAuthResponse(ctx.as, ctx.bank, callback, state)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      ctx.bank,
      ctx.auth,
      validated,
      BANK_RU,
      verifier,
      {
        ...ctx.opts,
        DPoP: dpop,
      },
    )
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, ctx.bank, response, { expectedNonce: nonce })
    expect(result.token_type).toBe('dpop')
  })

  it('PKCE is required of a confidential client, and plain refused even where the client allows it', async () => {
    const ctx = await fapiSetup()
    const without = await requestParams({ clientId: 'bank', redirectUri: BANK_RU })
    without.params.delete('code_challenge')
    without.params.delete('code_challenge_method')
    await expect(push(ctx, without.params, ctx.bank, ctx.auth)).rejects.toMatchObject({
      error: 'invalid_request',
      status: 400,
    })
    const plain = await requestParams({ clientId: 'bank', redirectUri: BANK_RU })
    plain.params.set('code_challenge', 'x'.repeat(43))
    plain.params.set('code_challenge_method', 'plain')
    await expect(push(ctx, plain.params, ctx.bank, ctx.auth)).rejects.toMatchObject({
      error: 'invalid_request',
      status: 400,
    })
  })

  it('an authorization request that was not pushed → invalid_request redirect with iss', async () => {
    const ctx = await fapiSetup()
    const { url, state } = await authorizationUrl(ctx.as, { clientId: 'bank', redirectUri: BANK_RU, state: 's' })
    const location = new URL((await go(ctx, url)).headers.get('location') as string)
    expectErrorRedirect(location, BANK_RU, 'invalid_request', state)
  })
})

describe('profile fapi2-security: clients the profile does not admit', () => {
  it('at PAR, a client_secret client fails client authentication (401 invalid_client)', async () => {
    const ctx = await fapiSetup()
    const { params } = await requestParams()
    const response = await ctx.service.fetch(
      form(PAR_URL, Object.fromEntries(params), { authorization: basic('web', 'web-secret') }),
    )
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('at the authorization endpoint → unauthorized_client redirect with state and iss', async () => {
    const ctx = await fapiSetup()
    for (const [clientId, redirectUri] of [
      ['web', 'https://rp.example.test/cb'],
      ['spa', 'https://spa.example.test/callback'],
    ] as const) {
      const { url, state } = await authorizationUrl(ctx.as, { clientId, redirectUri, state: 's' })
      const location = new URL((await go(ctx, url)).headers.get('location') as string)
      expectErrorRedirect(location, redirectUri, 'unauthorized_client', state)
    }
  })
})
