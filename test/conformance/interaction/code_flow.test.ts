import * as oauth from 'oauth4webapi'
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import { ISSUER, PLRU } from '../../helpers/service.ts'
import { authorizationUrl, setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'

describe('authorization code flow with PKCE, as oauth4webapi sees it', () => {
  it('AUTHZ-01 CODE-01 IDT-01..08: signs in through the built-in page and redeems the code', async () => {
    const ctx = await setup()
    const { result, callback } = await signIn(ctx)
    expect(callback.searchParams.get('iss')).toBe(ISSUER)
    expect(callback.searchParams.get('code')?.length).toBeGreaterThanOrEqual(43)
    expect(result.token_type.toLowerCase()).toBe('bearer')
    expect(result.scope).toBe('openid profile email')
    expect(typeof result.refresh_token).toBe('string')
    const idToken = result.id_token as string
    const header = decodeProtectedHeader(idToken)
    expect(header.alg).toBe('RS256')
    expect(header.kid).toBeTypeOf('string')
    const jwks = createLocalJWKSet((await ctx.service.keys.jwks()) as never)
    const { payload } = await jwtVerify(idToken, jwks, { issuer: ISSUER, audience: 'web' })
    expect(payload).toMatchObject({ sub: 'user-1', azp: 'web', iss: ISSUER })
    expect(payload.auth_time).toBeTypeOf('number')
    expect(payload.sid).toBeTypeOf('string')
    expect(payload.at_hash).toBeTypeOf('string')
    // #18: the granted scopes' claims are in the ID token too (idTokenClaims: 'scopes', the default);
    // IDT-10 (scope=openid alone: none) and 'minimal' are in ../tokens/id_token_claims.test.ts
    expect(payload.email).toBe('alice@example.com')
    expect(payload.given_name).toBe('Alice')
  })

  it('UI-01 UI-04 UI-08: userinfo returns the claims of the granted scopes', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const claims = oauth.getValidatedIdTokenClaims(result) as oauth.IDToken
    const response = await oauth.userInfoRequest(ctx.as, webClient, result.access_token, ctx.opts)
    const info = await oauth.processUserInfoResponse(ctx.as, webClient, claims.sub, response)
    expect(info).toEqual({
      sub: 'user-1',
      email: 'alice@example.com',
      email_verified: true,
      given_name: 'Alice',
      family_name: 'Example',
      preferred_username: 'alice',
    })
  })

  it('RT-01 RT-06: refresh rotates the refresh token and returns a consistent ID token', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const first = oauth.getValidatedIdTokenClaims(result) as oauth.IDToken
    ctx.clock.advance(5)
    const response = await oauth.refreshTokenGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      result.refresh_token as string,
      ctx.opts,
    )
    expect(response.headers.get('cache-control')).toContain('no-store')
    const refreshed = await oauth.processRefreshTokenResponse(ctx.as, webClient, response)
    expect(refreshed.refresh_token).toBeTypeOf('string')
    expect(refreshed.refresh_token).not.toBe(result.refresh_token)
    const second = oauth.getValidatedIdTokenClaims(refreshed) as oauth.IDToken
    for (const claim of ['iss', 'sub', 'aud', 'azp', 'auth_time'] as const) expect(second[claim]).toEqual(first[claim])
    expect(second.iat).toBeGreaterThan(first.iat)
    expect(second.nonce).toBeUndefined()
  })

  it('REV-01 REV-06 REV-07: revoking the refresh token kills the family, access tokens included', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const revoked = await oauth.revocationRequest(ctx.as, webClient, webAuth, result.refresh_token as string, ctx.opts)
    await oauth.processRevocationResponse(revoked)
    const refresh = await oauth.refreshTokenGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      result.refresh_token as string,
      ctx.opts,
    )
    await expect(oauth.processRefreshTokenResponse(ctx.as, webClient, refresh)).rejects.toMatchObject({
      error: 'invalid_grant',
      status: 400,
    })
    const info = await oauth.userInfoRequest(ctx.as, webClient, result.access_token, ctx.opts)
    expect(info.status).toBe(401)
    expect(info.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/)
    const introspection = await oauth.introspectionRequest(ctx.as, webClient, webAuth, result.access_token, ctx.opts)
    expect(await oauth.processIntrospectionResponse(ctx.as, webClient, introspection)).toEqual({ active: false })
  })

  it('LO-03: logout with id_token_hint redirects to the registered URI with state and ends the session', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx)
    const url = new URL(ctx.as.end_session_endpoint as string)
    url.searchParams.set('id_token_hint', result.id_token as string)
    url.searchParams.set('post_logout_redirect_uri', PLRU)
    url.searchParams.set('state', 'logout-state')
    url.searchParams.set('client_id', 'web')
    const response = await ctx.browser.request(url.href)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`${PLRU}?state=logout-state`)
    // afterwards prompt=none fails: the session is gone
    const { url: again, state } = await authorizationUrl(ctx.as, { extra: { prompt: 'none' } })
    const after = await ctx.browser.navigate(again.href)
    expect(after.callback?.searchParams.get('error')).toBe('login_required')
    expect(after.callback?.searchParams.get('state')).toBe(state)
  })

  it('the access token of a user grant is an RFC 9068 JWT with the grant scopes', async () => {
    const ctx = await setup()
    const { result } = await signIn(ctx, { scope: 'openid api1' })
    const header = decodeProtectedHeader(result.access_token)
    expect(header.typ).toBe('at+jwt')
    const claims = decodeJwt(result.access_token)
    expect(claims).toMatchObject({ iss: ISSUER, sub: 'user-1', client_id: 'web', scope: 'openid api1', aud: 'api1' })
  })
})

describe('ID token claims option', () => {
  it("idTokenClaims: 'minimal' keeps the granted scope claims out of the ID token", async () => {
    const ctx = await setup({ idTokenClaims: 'minimal' })
    const { result } = await signIn(ctx, { scope: 'openid email' })
    const claims = decodeJwt(result.id_token as string)
    expect(claims.email).toBeUndefined()
    expect(claims.email_verified).toBeUndefined()
  })
})
