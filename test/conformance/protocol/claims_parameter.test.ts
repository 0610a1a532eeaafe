/**
 * #30 The `claims` request parameter (OpenID Connect Core §5.5; AUTHZ-32): requested `userinfo`
 * and `id_token` members, essential or not, are released where the end-user has them and agreed
 * (claims of the granted scopes, or claims consented to on their own); bad JSON is
 * invalid_request; the claims request is kept with the grant (refresh, userinfo); the host's
 * `findAccount` is told which claims it asks for; discovery says `claims_parameter_supported`.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { AccountRequest, PendingInteraction } from '../../../src/index.ts'
import type { Page } from '../../helpers/browser.ts'
import { authorize, authorizationUrl, redeemCallback, setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'

type Ctx = Awaited<ReturnType<typeof setup>>

async function userinfo(ctx: Ctx, accessToken: string, sub: string, client: oauth.Client = webClient) {
  const response = await oauth.userInfoRequest(ctx.as, client, accessToken, ctx.opts)
  return (await oauth.processUserInfoResponse(ctx.as, client, sub, response)) as Record<string, unknown>
}

const claimsParam = (value: unknown) => ({ claims: JSON.stringify(value) })

describe('#30 the claims request parameter (Core §5.5)', () => {
  it('#30 AUTHZ-32 oidcc-claims-essential: userinfo name (essential) is at userinfo and not in the ID token', async () => {
    const ctx = await setup({
      users: [{ sub: 'u1', username: 'alice', password: 'alice-password', name: 'Alice Liddell' }],
    })
    expect(ctx.as.claims_parameter_supported).toBe(true)
    const { result } = await signIn(ctx, {
      scope: 'openid',
      extra: claimsParam({ userinfo: { name: { essential: true } } }),
    })
    const claims = oauth.getValidatedIdTokenClaims(result) as oauth.IDToken
    expect(claims.name).toBeUndefined()
    expect(await userinfo(ctx, result.access_token, 'u1')).toEqual({ sub: 'u1', name: 'Alice Liddell' })
  })

  it('#30 id_token members are in the ID token (even with idTokenClaims minimal), not at userinfo', async () => {
    const ctx = await setup({ idTokenClaims: 'minimal' })
    const { result } = await signIn(ctx, {
      scope: 'openid',
      extra: claimsParam({
        id_token: { email: null, email_verified: { essential: true }, auth_time: { essential: true } },
      }),
    })
    const claims = oauth.getValidatedIdTokenClaims(result) as oauth.IDToken
    expect(claims.email).toBe('alice@example.com')
    expect(claims.email_verified).toBe(true)
    expect(await userinfo(ctx, result.access_token, 'user-1')).toEqual({ sub: 'user-1' })
  })

  it('#30 a claim the end-user does not have is absent (essential or not), and no unsupported claim is released', async () => {
    const ctx = await setup({
      users: [{ sub: 'u1', username: 'alice', password: 'alice-password', internal_role: 'admin' }],
    })
    const requested = { userinfo: { phone_number: { essential: true }, internal_role: null, password: null } }
    const { result } = await signIn(ctx, { scope: 'openid', extra: claimsParam(requested) })
    expect(await userinfo(ctx, result.access_token, 'u1')).toEqual({ sub: 'u1' })
  })

  it('#30 malformed claims → invalid_request with state (bad JSON, not an object, a bad member)', async () => {
    const ctx = await setup()
    for (const value of [
      '{',
      '[]',
      '"x"',
      '{"userinfo":{"name":5}}',
      '{"id_token":{"name":{"essential":"yes"}}}',
      '{"userinfo":[]}',
    ]) {
      const request = await authorizationUrl(ctx.as, { extra: { claims: value } })
      const response = await ctx.browser.request(request.url.href)
      expect(response.status, value).toBe(303)
      const location = new URL(response.headers.get('location') as string)
      expect(location.searchParams.get('error'), value).toBe('invalid_request')
      expect(location.searchParams.get('state')).toBe(request.state)
    }
  })

  it('#30 the grant keeps the claims request: refreshed tokens release the same claims', async () => {
    const ctx = await setup({ users: [{ sub: 'u1', username: 'alice', password: 'alice-password', name: 'Alice' }] })
    const requested = { userinfo: { name: null }, id_token: { name: null } }
    const { result } = await signIn(ctx, { scope: 'openid', extra: claimsParam(requested) })
    expect((oauth.getValidatedIdTokenClaims(result) as oauth.IDToken).name).toBe('Alice')
    const response = await oauth.refreshTokenGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      result.refresh_token as string,
      ctx.opts,
    )
    const refreshed = await oauth.processRefreshTokenResponse(ctx.as, webClient, response)
    expect((oauth.getValidatedIdTokenClaims(refreshed) as oauth.IDToken).name).toBe('Alice')
    expect(await userinfo(ctx, refreshed.access_token, 'u1')).toEqual({ sub: 'u1', name: 'Alice' })
  })

  it("#30 the host's findAccount gets the requested claim names, by use", async () => {
    const calls: Array<AccountRequest | undefined> = []
    const ctx = await setup({
      accounts: {
        findAccount: async (sub, request) => {
          calls.push(request)
          return { sub, name: 'Host Name', given_name: 'Host', email: 'h@example.com', phone_number: '+1 555 0199' }
        },
      },
      interaction: () => ({ login: { sub: 'h1' } }),
    })
    const request = await authorizationUrl(ctx.as, {
      scope: 'openid email',
      // #39 item 4: phone_number (scope phone, which web may not request) is dropped before findAccount.
      extra: claimsParam({
        userinfo: { name: { essential: true } },
        id_token: { given_name: null, phone_number: null },
      }),
    })
    const callback = await authorize(ctx.browser, request.url, undefined)
    const { response } = await redeemCallback(ctx, callback, request)
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
      expectedNonce: request.nonce as string,
    })
    expect(calls.at(-1)).toEqual({ use: 'id_token', scopes: ['openid', 'email'], claims: ['given_name'] })
    const idToken = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken
    expect(idToken.given_name).toBe('Host')
    expect(idToken.phone_number).toBeUndefined()
    const info = await userinfo(ctx, tokens.access_token, 'h1')
    expect(calls.at(-1)).toEqual({ use: 'userinfo', scopes: ['openid', 'email'], claims: ['name'] })
    expect(info).toEqual({ sub: 'h1', name: 'Host Name', email: 'h@example.com' })
  })
})

describe('#30 claims requested on their own need consent (explicit-consent clients)', () => {
  const consentClient: oauth.Client = { client_id: 'consent' }
  const consentAuth = oauth.ClientSecretBasic('consent-secret')
  const CONSENT_RU = 'https://consent.example.test/cb'

  async function consentFlow(ctx: Ctx, claims: unknown) {
    const request = await authorizationUrl(ctx.as, {
      clientId: 'consent',
      redirectUri: CONSENT_RU,
      scope: 'openid',
      extra: claimsParam(claims),
    })
    return request
  }

  async function tokensOf(ctx: Ctx, callback: URL, request: Awaited<ReturnType<typeof authorizationUrl>>) {
    const { response } = await redeemCallback(ctx, callback, request, {
      client: consentClient,
      auth: consentAuth,
      redirectUri: CONSENT_RU,
    })
    return oauth.processAuthorizationCodeResponse(ctx.as, consentClient, response, {
      expectedNonce: request.nonce as string,
    })
  }

  // The consent client may request scope email (scp:email), not profile: its claims requests name
  // email claims (#39 item 4: a claim of a scope the client may not request is dropped, unlisted).
  it('#30 the built-in consent page lists the claims no granted scope releases; Allow releases them; the session remembers', async () => {
    const ctx = await setup({
      users: [
        {
          sub: 'u1',
          username: 'alice',
          password: 'alice-password',
          name: 'Alice',
          email: 'a@example.com',
          email_verified: true,
        },
      ],
    })
    const request = await consentFlow(ctx, { userinfo: { email: { essential: true } } })
    const first = await ctx.browser.navigate(request.url.href)
    const consent = await ctx.browser.signIn(first.page as Page, 'alice', 'alice-password')
    expect(consent.page?.html).toContain('data-claim="email"')
    const allowed = await ctx.browser.submit(consent.page as Page, { decision: 'allow' })
    const tokens = await tokensOf(ctx, allowed.callback as URL, request)
    expect(await userinfo(ctx, tokens.access_token, 'u1', consentClient)).toEqual({ sub: 'u1', email: 'a@example.com' })
    // Consented before: no consent page for the same claim; a new claim asks again.
    const again = await consentFlow(ctx, { userinfo: { email: null } })
    expect((await ctx.browser.navigate(again.url.href)).callback).toBeDefined()
    const more = await consentFlow(ctx, { userinfo: { email: null, email_verified: null } })
    const page = (await ctx.browser.navigate(more.url.href)).page
    expect(page?.html).toContain('data-claim="email_verified"')
  })

  it('#30 a host consent without consent.claims releases none of them; with consent.claims, those', async () => {
    const seen: PendingInteraction[] = []
    let consentClaims: string[] | undefined
    const ctx = await setup({
      accounts: { findAccount: async (sub) => ({ sub, name: 'N', email: 'e@example.com', email_verified: true }) },
      interaction: (_request, pending) => {
        seen.push(pending)
        return {
          login: { sub: 'h1' },
          consent: { scopes: pending.scopes, ...(consentClaims ? { claims: consentClaims } : {}) },
        }
      },
    })
    const claims = { userinfo: { email_verified: null, email: null } }
    const request = await consentFlow(ctx, claims)
    const tokens = await tokensOf(ctx, (await ctx.browser.navigate(request.url.href)).callback as URL, request)
    expect(seen[0]?.claims).toEqual({ userinfo: ['email_verified', 'email'], idToken: [] })
    expect(await userinfo(ctx, tokens.access_token, 'h1', consentClient)).toEqual({ sub: 'h1' })
    consentClaims = ['email']
    const second = await consentFlow(ctx, claims)
    const tokens2 = await tokensOf(ctx, (await ctx.browser.navigate(second.url.href)).callback as URL, second)
    expect(await userinfo(ctx, tokens2.access_token, 'h1', consentClient)).toEqual({
      sub: 'h1',
      email: 'e@example.com',
    })
  })
})
