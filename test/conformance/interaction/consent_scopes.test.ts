/**
 * #17.1: the code and its tokens carry exactly the scopes the end-user consented to (host
 * interaction API and built-in consent page alike); a consent to nothing is access_denied.
 * CONFORMANCE: RFC 6749 §3.3 (the issued scope may differ from the requested one, and then the
 * response names it), §4.1.2.1 (access_denied), OIDC Core §5.4 (claims by scope at userinfo).
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { InteractionResult } from '../../../src/index.ts'
import { RU, authorizationUrl, redeemCallback, setup, webClient } from '../../helpers/flow.ts'

type Ctx = Awaited<ReturnType<typeof setup>>

async function redeem(ctx: Ctx, callback: URL, request: Awaited<ReturnType<typeof authorizationUrl>>) {
  const { response } = await redeemCallback(ctx, callback, request)
  return oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
    expectedNonce: request.nonce as string,
  })
}

async function hostConsent(result: InteractionResult, scope = 'openid profile email api1') {
  const ctx = await setup({ interaction: () => result })
  const request = await authorizationUrl(ctx.as, { scope })
  const response = await ctx.browser.request(request.url.href)
  return { ctx, request, callback: new URL(response.headers.get('location') as string) }
}

describe('#17.1 consent decides the granted scopes', () => {
  it('#17.1 a host consent to openid api1 yields tokens with exactly those scopes, and no email/profile claims at userinfo', async () => {
    const { ctx, request, callback } = await hostConsent({
      login: { sub: 'user-1' },
      consent: { scopes: ['openid', 'api1'] },
    })
    const tokens = await redeem(ctx, callback, request)
    expect(tokens.scope).toBe('openid api1')
    const claims = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken
    expect(claims.email).toBeUndefined()
    const userinfo = await oauth.userInfoRequest(ctx.as, webClient, tokens.access_token, ctx.opts)
    const info = await oauth.processUserInfoResponse(ctx.as, webClient, 'user-1', userinfo)
    expect(info).toEqual({ sub: 'user-1' })
  })

  it('#17.1 identity scopes are granted only when consented: without openid there is no ID token', async () => {
    const { ctx, request, callback } = await hostConsent({
      login: { sub: 'user-1' },
      consent: { scopes: ['api1'] },
    })
    const { response } = await redeemCallback(ctx, callback, request)
    const body = (await response.json()) as Record<string, unknown>
    expect(body.scope).toBe('api1')
    expect(body.id_token).toBeUndefined()
  })

  it('#17.1 a consent never adds a scope the request did not ask for', async () => {
    const { ctx, request, callback } = await hostConsent(
      { login: { sub: 'user-1' }, consent: { scopes: ['openid', 'email', 'api1'] } },
      'openid email',
    )
    const tokens = await redeem(ctx, callback, request)
    expect(tokens.scope).toBe('openid email')
  })

  it('#17.1 a consent to no scope is access_denied, with no code', async () => {
    const { callback, request } = await hostConsent({ login: { sub: 'user-1' }, consent: { scopes: [] } })
    expect(callback.origin + callback.pathname).toBe(RU)
    expect(callback.searchParams.get('error')).toBe('access_denied')
    expect(callback.searchParams.get('code')).toBeNull()
    expect(callback.searchParams.get('state')).toBe(request.state)
  })

  it('#17.1 the session remembers only the consented scopes: asking again for the rest shows consent again', async () => {
    const seen: string[] = []
    const ctx = await setup({
      interaction: (_request, pending) => {
        seen.push(pending.prompt)
        return { login: { sub: 'user-1' }, consent: { scopes: ['openid'] } }
      },
    })
    await ctx.service.clients.update('web', { consentType: 'explicit' })
    const first = await authorizationUrl(ctx.as, { scope: 'openid email' })
    await ctx.browser.request(first.url.href)
    const second = await authorizationUrl(ctx.as, { scope: 'openid email' })
    await ctx.browser.request(second.url.href)
    expect(seen).toEqual(['login', 'consent'])
  })

  it('#17.1 the built-in consent page lists each scope it grants and grants exactly those', async () => {
    const ctx = await setup()
    const consentClient: oauth.Client = { client_id: 'consent' }
    const request = await authorizationUrl(ctx.as, {
      clientId: 'consent',
      redirectUri: 'https://consent.example.test/cb',
      scope: 'openid email',
    })
    const first = await ctx.browser.navigate(request.url.href)
    const signedIn = await ctx.browser.signIn(first.page as never, 'alice', 'alice-password')
    const html = signedIn.page?.html ?? ''
    expect(html).toContain('data-scope="openid"')
    expect(html).toContain('data-scope="email"')
    expect(html).toContain('<code>email</code>')
    const allowed = await ctx.browser.submit(signedIn.page as never, { decision: 'allow' })
    const { response } = await redeemCallback(ctx, allowed.callback as URL, request, {
      client: consentClient,
      auth: oauth.ClientSecretBasic('consent-secret'),
      redirectUri: 'https://consent.example.test/cb',
    })
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, consentClient, response, {
      expectedNonce: request.nonce as string,
    })
    expect(tokens.scope).toBe('openid email')
  })
})
