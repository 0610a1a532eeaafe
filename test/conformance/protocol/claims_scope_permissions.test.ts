/**
 * #39 item 4: the `claims` parameter (OpenID Connect Core §5.5) does not get around `scp:`
 * permissions. A claim that a scope releases (§5.4: `email` of `email`, `phone_number` of `phone`,
 * `address` of `address`, a host scope's claims) is asked for only by a client permitted that scope
 * (for a self-registered client, a scope it registered); any other is dropped from the request
 * without an error (§5.5: an essential claim that is not released is simply absent), so no consent
 * page lists it and neither the ID token (at redemption or refresh) nor userinfo carries it. A
 * permitted one still needs the end-user's consent as before. Permissions are read again when
 * claims are released, as they are for scopes (#17.4). CONFORMANCE: AUTHZ-32, IDT-10, UI-08.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { Page } from '../../helpers/browser.ts'
import { authorizationUrl, expectErrorRedirect, redeemCallback, setup } from '../../helpers/flow.ts'
import { PAR_URL, push, requestUriUrl } from '../../helpers/par.ts'
import { ISSUER, RU } from '../../helpers/service.ts'

type Ctx = Awaited<ReturnType<typeof setup>>

/** The review's request, exactly: email, phone and address at userinfo, email (essential) in the ID token. */
const REVIEW_CLAIMS = {
  userinfo: { email: null, phone_number: null, address: null },
  id_token: { email: { essential: true } },
}
/** The review's request plus profile claims, for a client permitted `profile`. */
const WITH_PROFILE = {
  userinfo: { ...REVIEW_CLAIMS.userinfo, given_name: null },
  id_token: { ...REVIEW_CLAIMS.id_token, name: { essential: true } },
}
const HIDDEN = ['email', 'email_verified', 'phone_number', 'phone_number_verified', 'address']

const ALICE = {
  sub: 'u1',
  username: 'alice',
  password: 'alice-password',
  name: 'Alice Liddell',
  given_name: 'Alice',
  email: 'alice@example.com',
  email_verified: true,
  phone_number: '+1 555 0100',
  phone_number_verified: true,
  address: { country: 'GB', locality: 'Oxford' },
  shoe_size: '38',
}

/** A client of the flow: its oauth4webapi identity, authentication and redirect URI. */
interface FlowClient {
  client: oauth.Client
  auth: oauth.ClientAuth
  redirectUri: string
}

const WEB2: FlowClient = {
  client: { client_id: 'web2' }, // scp:openid scp:profile only (test/helpers/service.ts)
  auth: oauth.ClientSecretBasic('web2-secret'),
  redirectUri: 'https://rp2.example.test/cb',
}

const claimsParam = (value: unknown) => ({ claims: JSON.stringify(value) })

type Request = Awaited<ReturnType<typeof authorizationUrl>>

/** The authorization request of `who` for scope openid with `claims`. */
function requestOf(ctx: Ctx, who: FlowClient, claims: unknown): Promise<Request> {
  return authorizationUrl(ctx.as, {
    clientId: who.client.client_id,
    redirectUri: who.redirectUri,
    scope: 'openid',
    extra: claimsParam(claims),
  })
}

/**
 * Signs alice in for `who` with `claims` (or sends `prepared.url` for `prepared.request`),
 * allowing the consent page if one is shown: the tokens and the consent page's HTML ('' if none).
 */
async function flow(ctx: Ctx, who: FlowClient, claims: unknown, prepared?: { url: URL; request: Request }) {
  const request = prepared?.request ?? (await requestOf(ctx, who, claims))
  const first = await ctx.browser.navigate((prepared?.url ?? request.url).href)
  let step = first.callback ? first : await ctx.browser.signIn(first.page as Page, 'alice', 'alice-password')
  let consentHtml = ''
  if (!step.callback) {
    consentHtml = (step.page as Page).html
    step = await ctx.browser.submit(step.page as Page, { decision: 'allow' })
  }
  const { response } = await redeemCallback(ctx, step.callback as URL, request, who)
  const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, who.client, response, {
    expectedNonce: request.nonce as string,
  })
  return { tokens, consentHtml }
}

async function userinfo(ctx: Ctx, who: FlowClient, accessToken: string): Promise<Record<string, unknown>> {
  const response = await oauth.userInfoRequest(ctx.as, who.client, accessToken, ctx.opts)
  return (await oauth.processUserInfoResponse(ctx.as, who.client, 'u1', response)) as Record<string, unknown>
}

async function refresh(ctx: Ctx, who: FlowClient, refreshToken: string) {
  const response = await oauth.refreshTokenGrantRequest(ctx.as, who.client, who.auth, refreshToken, ctx.opts)
  return oauth.processRefreshTokenResponse(ctx.as, who.client, response)
}

const idTokenOf = (tokens: oauth.TokenEndpointResponse) =>
  oauth.getValidatedIdTokenClaims(tokens) as Record<string, unknown>

function expectNoneOf(claims: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) expect(claims[name], name).toBeUndefined()
}

function expectNotListed(consentHtml: string, names: readonly string[]): void {
  for (const name of names) expect(consentHtml, name).not.toContain(`data-claim="${name}"`)
}

describe('#39 item 4: the claims parameter releases only claims of scopes the client is permitted', () => {
  it('#39 item 4: scp:openid scp:profile only: scope email is invalid_scope, and the review’s claims request releases no email, phone or address (ID token, userinfo, refresh)', async () => {
    const ctx = await setup({ users: [ALICE] })
    const denied = await authorizationUrl(ctx.as, {
      clientId: 'web2',
      redirectUri: WEB2.redirectUri,
      scope: 'openid email',
    })
    const location = (await ctx.browser.navigate(denied.url.href)).callback as URL
    expectErrorRedirect(location, WEB2.redirectUri, 'invalid_scope', denied.state)

    const { tokens, consentHtml } = await flow(ctx, WEB2, REVIEW_CLAIMS)
    expect(consentHtml).toBe('') // an implicit-consent client, as in the review
    expectNoneOf(idTokenOf(tokens), HIDDEN)
    expect(await userinfo(ctx, WEB2, tokens.access_token)).toEqual({ sub: 'u1' })
    const refreshed = await refresh(ctx, WEB2, tokens.refresh_token as string)
    expectNoneOf(idTokenOf(refreshed), HIDDEN)
    expect(await userinfo(ctx, WEB2, refreshed.access_token)).toEqual({ sub: 'u1' })
  })

  it('#39 item 4: the same client still gets the profile claims it may request, where it asked for them', async () => {
    const ctx = await setup({ users: [ALICE] })
    const { tokens } = await flow(ctx, WEB2, WITH_PROFILE)
    const idToken = idTokenOf(tokens)
    expect(idToken.name).toBe('Alice Liddell')
    expectNoneOf(idToken, [...HIDDEN, 'given_name'])
    expect(await userinfo(ctx, WEB2, tokens.access_token)).toEqual({ sub: 'u1', given_name: 'Alice' })
    const refreshed = await refresh(ctx, WEB2, tokens.refresh_token as string)
    expect(idTokenOf(refreshed).name).toBe('Alice Liddell')
    expectNoneOf(idTokenOf(refreshed), HIDDEN)
  })

  it('#39 item 4: an explicit-consent client with scp:openid scp:profile: the consent page lists the profile claims, not email, phone or address', async () => {
    const ctx = await setup({ users: [ALICE] })
    await ctx.service.clients.ensure({
      clientId: 'profile-explicit',
      clientSecret: 'profile-explicit-secret',
      consentType: 'explicit',
      permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid', 'scp:profile'],
      redirectUris: [RU],
    })
    const who: FlowClient = {
      client: { client_id: 'profile-explicit' },
      auth: oauth.ClientSecretBasic('profile-explicit-secret'),
      redirectUri: RU,
    }
    const { tokens, consentHtml } = await flow(ctx, who, WITH_PROFILE)
    expect(consentHtml).toContain('data-claim="name"')
    expect(consentHtml).toContain('data-claim="given_name"')
    expectNotListed(consentHtml, HIDDEN)
    expect(idTokenOf(tokens).name).toBe('Alice Liddell')
    expectNoneOf(idTokenOf(tokens), HIDDEN)
    expect(await userinfo(ctx, who, tokens.access_token)).toEqual({ sub: 'u1', given_name: 'Alice' })
  })

  it('#39 item 4: a self-registered client registered for openid: the consent page lists none of them and no token or userinfo answer carries them; auth_time (no scope’s) still is', async () => {
    const ctx = await setup({
      users: [ALICE],
      dynamicClientRegistration: { scopes: ['openid', 'profile', 'email', 'address', 'phone'] },
    })
    const registration = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          redirect_uris: [RU],
          client_name: 'Self',
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          scope: 'openid',
        }),
      }),
      { address: '203.0.113.7' },
    )
    expect(registration.status).toBe(201)
    const { client_id } = (await registration.json()) as { client_id: string }
    const who: FlowClient = {
      client: { client_id, token_endpoint_auth_method: 'none' },
      auth: oauth.None(),
      redirectUri: RU,
    }
    const claims = { ...WITH_PROFILE, id_token: { ...WITH_PROFILE.id_token, auth_time: { essential: true } } }
    const { tokens, consentHtml } = await flow(ctx, who, claims)
    expect(consentHtml).toContain('registered itself') // the consent page was shown
    expectNotListed(consentHtml, [...HIDDEN, 'name', 'given_name']) // not registered for profile either
    const idToken = idTokenOf(tokens)
    expectNoneOf(idToken, [...HIDDEN, 'name'])
    expect(idToken.auth_time).toEqual(expect.any(Number))
    expect(await userinfo(ctx, who, tokens.access_token)).toEqual({ sub: 'u1' })
    const refreshed = await refresh(ctx, who, tokens.refresh_token as string)
    expectNoneOf(idTokenOf(refreshed), [...HIDDEN, 'name'])
  })

  it('#39 item 4: a client with scp:email still gets email through the claims parameter, after consent; phone and address stay out', async () => {
    const ctx = await setup({ users: [ALICE] })
    const who: FlowClient = {
      client: { client_id: 'consent' }, // explicit consent, scp:openid scp:email
      auth: oauth.ClientSecretBasic('consent-secret'),
      redirectUri: 'https://consent.example.test/cb',
    }
    const { tokens, consentHtml } = await flow(ctx, who, REVIEW_CLAIMS)
    expect(consentHtml).toContain('data-claim="email"')
    expectNotListed(consentHtml, ['phone_number', 'address'])
    expect(idTokenOf(tokens).email).toBe('alice@example.com')
    expectNoneOf(idTokenOf(tokens), ['phone_number', 'address'])
    expect(await userinfo(ctx, who, tokens.access_token)).toEqual({ sub: 'u1', email: 'alice@example.com' })
  })

  it('#39 item 4: permissions are read again at release: after scp:email is taken away, userinfo (even with the earlier access token) and refreshed ID tokens drop email', async () => {
    const ctx = await setup({ users: [ALICE] })
    const web: FlowClient = {
      client: { client_id: 'web' },
      auth: oauth.ClientSecretBasic('web-secret'),
      redirectUri: RU,
    }
    const { tokens } = await flow(ctx, web, { userinfo: { email: null }, id_token: { email: null } })
    expect(idTokenOf(tokens).email).toBe('alice@example.com')
    expect(await userinfo(ctx, web, tokens.access_token)).toEqual({ sub: 'u1', email: 'alice@example.com' })
    await ctx.service.clients.update('web', {
      permissions: [
        'ept:authorization',
        'ept:token',
        'gt:authorization_code',
        'gt:refresh_token',
        'rst:code',
        'scp:openid',
        'scp:profile',
      ],
    })
    expect(await userinfo(ctx, web, tokens.access_token)).toEqual({ sub: 'u1' })
    const refreshed = await refresh(ctx, web, tokens.refresh_token as string)
    expectNoneOf(idTokenOf(refreshed), HIDDEN)
    expect(await userinfo(ctx, web, refreshed.access_token)).toEqual({ sub: 'u1' })
  })

  it('#39 item 4: a pushed request (RFC 9126) is held to the same rule', async () => {
    const ctx = await setup({ users: [ALICE] })
    expect(ctx.as.pushed_authorization_request_endpoint).toBe(PAR_URL)
    const request = await requestOf(ctx, WEB2, WITH_PROFILE)
    const { request_uri } = await push(ctx, request.url.searchParams, WEB2.client, WEB2.auth)
    const { tokens } = await flow(ctx, WEB2, undefined, { url: requestUriUrl(ctx.as, 'web2', request_uri), request })
    expectNoneOf(idTokenOf(tokens), HIDDEN)
    expect(idTokenOf(tokens).name).toBe('Alice Liddell')
    expect(await userinfo(ctx, WEB2, tokens.access_token)).toEqual({ sub: 'u1', given_name: 'Alice' })
  })

  it('#39 item 4: a host scope’s claims need scp: of that scope; the host’s hook and findAccount never see a dropped claim', async () => {
    const seen: unknown[] = []
    const asked: unknown[] = []
    const ctx = await setup({
      scopes: [{ name: 'shoes', claims: ['shoe_size'] }],
      accounts: {
        findAccount: async (sub, request) => {
          asked.push(request?.claims)
          return { ...ALICE, sub, password: undefined }
        },
      },
      interaction: (_request, pending) => {
        seen.push(pending.claims)
        return { login: { sub: 'u1' } }
      },
    })
    const claims = { userinfo: { shoe_size: null, phone_number: null, given_name: null }, id_token: { email: null } }
    const { tokens } = await flow(ctx, WEB2, claims)
    expect(seen).toEqual([{ userinfo: ['given_name'], idToken: [] }])
    expect(asked).toEqual([[]]) // the ID token lookup: email was dropped
    expect(await userinfo(ctx, WEB2, tokens.access_token)).toEqual({ sub: 'u1', given_name: 'Alice' })
    expect(asked.at(-1)).toEqual(['given_name'])
    await ctx.service.clients.update('web2', {
      permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid', 'scp:shoes'],
    })
    const second = await flow(ctx, WEB2, claims)
    expect(await userinfo(ctx, WEB2, second.tokens.access_token)).toEqual({ sub: 'u1', shoe_size: '38' })
  })
})
