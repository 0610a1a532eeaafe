/**
 * #18: by default (`idTokenClaims: 'scopes'`) the ID token carries the end-user claims of the
 * granted identity scopes, the same set userinfo returns for that grant, so clients that read the
 * profile from the ID token (Auth.js's default OIDC provider) see the user; `'minimal'` keeps them
 * at userinfo only. The claims follow the consented scopes (#17.1) and the client's permissions at
 * redemption and refresh (#17.4), refresh-issued ID tokens included.
 * CONFORMANCE: IDT-10 (scope=openid alone: no profile claims), IDT-11, UI-04, UI-08, RT-06;
 * OpenID Connect Core §5.4 (either place is allowed), §12.2.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { InteractionResult } from '../../../src/index.ts'
import { authorizationUrl, authorize, redeemCallback, setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { CLIENTS, USERS } from '../../helpers/service.ts'

type Ctx = Awaited<ReturnType<typeof setup>>

const ALICE_PROFILE = { given_name: 'Alice', family_name: 'Example', preferred_username: 'alice' }
const ALICE_EMAIL = { email: 'alice@example.com', email_verified: true }
const PROTOCOL = ['iss', 'sub', 'aud', 'azp', 'exp', 'iat', 'auth_time', 'nonce', 'sid', 'gid', 'at_hash', 'amr', 'acr']

/** The ID token's end-user claims: everything but the protocol claims. */
function userClaims(claims: oauth.IDToken): Record<string, unknown> {
  return Object.fromEntries(Object.entries(claims).filter(([name]) => !PROTOCOL.includes(name)))
}

async function userinfo(ctx: Ctx, accessToken: string, sub = 'user-1') {
  const response = await oauth.userInfoRequest(ctx.as, webClient, accessToken, ctx.opts)
  const { sub: _sub, ...rest } = await oauth.processUserInfoResponse(ctx.as, webClient, sub, response)
  return rest
}

async function refresh(ctx: Ctx, token: string, scope?: string) {
  const response = await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, token, {
    ...ctx.opts,
    ...(scope !== undefined ? { additionalParameters: { scope } } : {}),
  })
  return oauth.processRefreshTokenResponse(ctx.as, webClient, response)
}

const idClaims = (tokens: oauth.TokenEndpointResponse) => oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken

describe('#18 ID token claims by granted scope (default idTokenClaims: scopes)', () => {
  it('#18 IDT-11 UI-08: openid profile email → the ID token has exactly the claims userinfo returns', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid profile email' })
    const claims = userClaims(idClaims(result))
    expect(claims).toEqual({ ...ALICE_PROFILE, ...ALICE_EMAIL })
    expect(await userinfo(ctx, result.access_token)).toEqual(claims)
  })

  it('#18 IDT-10: scope=openid alone → no profile or email claims in the ID token', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid' })
    expect(userClaims(idClaims(result))).toEqual({})
    expect(await userinfo(ctx, result.access_token)).toEqual({})
  })

  it('#18 only the claims of the granted scopes: email without profile', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid email' })
    expect(userClaims(idClaims(result))).toEqual(ALICE_EMAIL)
  })

  it('#18 claims the user record lacks are absent (bob has no name), and address/phone follow their scopes', async () => {
    const ctx = await setup({
      scopes: ['address', 'phone'],
      users: [
        ...USERS,
        {
          sub: 'user-3',
          username: 'carol',
          password: 'carol-password',
          email: 'carol@example.com',
          phone_number: '+33 1 23 45 67 89',
          address: { country: 'FR', locality: 'Paris' },
        },
      ],
    })
    await ctx.service.clients.update('web', {
      permissions: [...(CLIENTS.web?.permissions ?? []), 'scp:address', 'scp:phone'],
    })
    const bob = await signIn(ctx, {
      scope: 'openid profile email',
      credentials: { username: 'bob', password: 'bob-password' },
    })
    expect(userClaims(idClaims(bob.result))).toEqual({
      preferred_username: 'bob',
      email: 'bob@example.com',
      email_verified: false,
    })
    ctx.browser.cookies.clear()
    const carol = await signIn(ctx, {
      scope: 'openid address phone',
      credentials: { username: 'carol', password: 'carol-password' },
    })
    const claims = userClaims(idClaims(carol.result))
    expect(claims).toEqual({ phone_number: '+33 1 23 45 67 89', address: { country: 'FR', locality: 'Paris' } })
    expect(await userinfo(ctx, carol.result.access_token, 'user-3')).toEqual(claims)
  })

  it('#18 RT-06: a refresh-issued ID token carries the same claims; a narrowed refresh carries only its scopes', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid profile email' })
    ctx.clock.advance(5)
    const refreshed = await refresh(ctx, result.refresh_token as string)
    expect(userClaims(idClaims(refreshed))).toEqual({ ...ALICE_PROFILE, ...ALICE_EMAIL })
    const narrowed = await refresh(ctx, refreshed.refresh_token as string, 'openid email')
    expect(userClaims(idClaims(narrowed))).toEqual(ALICE_EMAIL)
    expect(await userinfo(ctx, narrowed.access_token)).toEqual(ALICE_EMAIL)
  })

  it('#18 the claims are read from the account at issue time (a changed email shows on refresh)', async () => {
    const accounts = new Map<string, Record<string, unknown>>([['user-1', { sub: 'user-1', email: 'old@example.com' }]])
    const ctx = await setup({
      accounts: { findAccount: async (sub) => accounts.get(sub) },
      interaction: () => ({ login: { sub: 'user-1' } }),
    })
    const request = await authorizationUrl(ctx.as, { scope: 'openid email' })
    const callback = new URL((await ctx.browser.request(request.url.href)).headers.get('location') as string)
    const { response } = await redeemCallback(ctx, callback, request)
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: request.nonce as string,
    })
    expect(idClaims(tokens).email).toBe('old@example.com')
    accounts.set('user-1', { sub: 'user-1', email: 'new@example.com' })
    expect(idClaims(await refresh(ctx, tokens.refresh_token as string)).email).toBe('new@example.com')
  })

  it('#18 an account or custom scope never supplies protocol claims (acr, amr, nonce, iss)', async () => {
    const accounts = new Map<string, Record<string, unknown>>([
      ['user-1', { sub: 'user-1', acr: 'urn:fake:mfa', amr: ['hwk'], iss: 'https://evil.example', shoe_size: 42 }],
    ])
    const ctx = await setup({
      scopes: [{ name: 'extra', claims: ['acr', 'amr', 'iss', 'shoe_size'] }],
      accounts: { findAccount: async (sub) => accounts.get(sub) },
      interaction: () => ({ login: { sub: 'user-1' } }),
    })
    await ctx.service.clients.update('web', { permissions: [...(CLIENTS.web?.permissions ?? []), 'scp:extra'] })
    const request = await authorizationUrl(ctx.as, { scope: 'openid extra' })
    const callback = new URL((await ctx.browser.request(request.url.href)).headers.get('location') as string)
    const { response } = await redeemCallback(ctx, callback, request)
    const claims = idClaims(
      await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
        expectedNonce: request.nonce as string,
      }),
    )
    expect(claims.shoe_size).toBe(42)
    expect(claims.iss).toBe(ctx.as.issuer)
    expect(claims.acr).toBeUndefined()
    expect(claims.amr).toBeUndefined()
  })
})

describe('#18 the ID token claims follow consent (#17.1) and permissions at use (#17.4)', () => {
  async function hostConsent(result: InteractionResult, scope = 'openid profile email api1') {
    const ctx = await setup({ interaction: () => result })
    const request = await authorizationUrl(ctx.as, { scope })
    const response = await ctx.browser.request(request.url.href)
    const callback = new URL(response.headers.get('location') as string)
    const { response: tokenResponse } = await redeemCallback(ctx, callback, request)
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, tokenResponse, {
      expectedNonce: request.nonce as string,
    })
    return { ctx, tokens }
  }

  it('#18 #17.1 consent to openid email (of openid profile email) → email claims only', async () => {
    const { ctx, tokens } = await hostConsent({ login: { sub: 'user-1' }, consent: { scopes: ['openid', 'email'] } })
    expect(tokens.scope).toBe('openid email')
    expect(userClaims(idClaims(tokens))).toEqual(ALICE_EMAIL)
    expect(await userinfo(ctx, tokens.access_token)).toEqual(ALICE_EMAIL)
  })

  it('#18 #17.1 consent to openid api1 → no end-user claims in the ID token', async () => {
    const { tokens } = await hostConsent({ login: { sub: 'user-1' }, consent: { scopes: ['openid', 'api1'] } })
    expect(userClaims(idClaims(tokens))).toEqual({})
  })

  const FULL = [
    'ept:authorization',
    'ept:token',
    'ept:revocation',
    'gt:authorization_code',
    'gt:refresh_token',
    'rst:code',
  ]

  it('#18 #17.4 a scope permission removed before redemption → its claims are not in the ID token', async () => {
    const ctx = await setup()
    const request = await authorizationUrl(ctx.as, { scope: 'openid profile email' })
    const callback = await authorize(ctx.browser, request.url)
    await ctx.service.clients.update('web', { permissions: [...FULL, 'scp:openid', 'scp:profile'] })
    const { response } = await redeemCallback(ctx, callback, request)
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: request.nonce as string,
    })
    expect(tokens.scope).toBe('openid profile')
    expect(userClaims(idClaims(tokens))).toEqual(ALICE_PROFILE)
  })

  it('#18 #17.4 a scope permission removed before a refresh → the refreshed ID token drops its claims', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid profile email' })
    await ctx.service.clients.update('web', { permissions: [...FULL, 'scp:openid', 'scp:email'] })
    const refreshed = await refresh(ctx, result.refresh_token as string)
    expect(refreshed.scope).toBe('openid email')
    expect(userClaims(idClaims(refreshed))).toEqual(ALICE_EMAIL)
  })
})

describe("#18 idTokenClaims: 'minimal'", () => {
  it("#18 IDT-10: 'minimal' keeps the ID token to sub and protocol claims; userinfo still has them", async () => {
    const ctx = await setup({ idTokenClaims: 'minimal' })
    const { result } = await signIn(ctx, { scope: 'openid profile email' })
    expect(userClaims(idClaims(result))).toEqual({})
    expect(await userinfo(ctx, result.access_token)).toEqual({ ...ALICE_PROFILE, ...ALICE_EMAIL })
    const refreshed = await refresh(ctx, result.refresh_token as string)
    expect(userClaims(idClaims(refreshed))).toEqual({})
  })

  it.each([
    [{ idTokenIncludesClaims: false }, {}],
    [{ idTokenIncludesClaims: true }, ALICE_EMAIL],
    [{ idTokenIncludesClaims: false, idTokenClaims: 'scopes' as const }, ALICE_EMAIL],
    [{ idTokenIncludesClaims: true, idTokenClaims: 'minimal' as const }, {}],
  ])('#18 the deprecated idTokenIncludesClaims still works; idTokenClaims wins (%o)', async (options, expected) => {
    const ctx = await setup(options)
    const { result } = await signIn(ctx, { scope: 'openid email' })
    expect(userClaims(idClaims(result))).toEqual(expected)
  })
})
