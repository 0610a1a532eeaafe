/**
 * Resource indicators (RFC 8707, issue #19) through oauth4webapi: `resource` at the authorization
 * endpoint and at every grant of the token endpoint. A resource is the audience of a scope; the
 * access token's `aud` is exactly the requested resources and its `scope` only their scopes (plus
 * identity scopes). AUTHZ-04 (iss on error redirects), TOK-06 (repeated parameters), RT-05
 * (refresh narrows, never widens), INT-02 (introspection reflects `aud`), X-06 (RFC 9068 claims).
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { authorizationUrl, authorize, setup } from '../../helpers/flow.ts'
import { ISSUER, RU, basic, clock, form } from '../../helpers/service.ts'

const MCP = 'https://mcp.example.com/mcp'
const CAL = 'https://calendar.example.com/'
const HIDDEN = 'https://hidden.example.com/'

const SCOPES = [
  { name: 'mcp:tools', audience: MCP },
  { name: 'mcp:prompts', audience: MCP },
  { name: 'calendar.read', audience: CAL },
  { name: 'hidden', audience: HIDDEN }, // no client holds scp:hidden
]

const AGENT: ClientRegistration = {
  clientId: 'agent',
  clientSecret: 'agent-secret',
  displayName: 'Agent',
  permissions: [
    'ept:authorization',
    'ept:token',
    'ept:introspection',
    'gt:authorization_code',
    'gt:refresh_token',
    'gt:client_credentials',
    'rst:code',
    'scp:openid',
    'scp:profile',
    'scp:api1',
    'scp:mcp:tools',
    'scp:mcp:prompts',
    'scp:calendar.read',
  ],
  redirectUris: [RU],
}

const agent: oauth.Client = { client_id: 'agent' }
const agentAuth = oauth.ClientSecretBasic('agent-secret')

type Ctx = Awaited<ReturnType<typeof start>>

async function start() {
  const ctx = await setup({ scopes: SCOPES })
  await ctx.service.clients.ensure(AGENT)
  return ctx
}

/** An authorization request as `agent` with these `resource` values; the callback URL. */
async function authorizeWith(ctx: Ctx, scope: string | undefined, resources: string[]) {
  const request = await authorizationUrl(ctx.as, { clientId: 'agent', scope: scope ?? '' })
  if (scope === undefined) request.url.searchParams.delete('scope')
  for (const resource of resources) request.url.searchParams.append('resource', resource)
  const callback = await authorize(ctx.browser, request.url)
  return { request, callback }
}

/** The code exchange with these `resource` values: the raw token response. */
async function redeem(ctx: Ctx, flow: Awaited<ReturnType<typeof authorizeWith>>, resources: string[] = []) {
  const params = oauth.validateAuthResponse(ctx.as, agent, flow.callback, flow.request.state as string)
  return oauth.authorizationCodeGrantRequest(ctx.as, agent, agentAuth, params, RU, flow.request.verifier, {
    ...ctx.opts,
    additionalParameters: resources.map((resource) => ['resource', resource]),
  })
}

async function tokens(ctx: Ctx, response: Response, nonce?: string) {
  return oauth.processAuthorizationCodeResponse(ctx.as, agent, response, {
    expectedNonce: nonce ?? oauth.expectNoNonce,
    requireIdToken: false,
  })
}

async function refresh(ctx: Ctx, refreshToken: string, resources: string[] = [], scope?: string) {
  const additionalParameters: string[][] = resources.map((resource) => ['resource', resource])
  if (scope !== undefined) additionalParameters.push(['scope', scope])
  return oauth.refreshTokenGrantRequest(ctx.as, agent, agentAuth, refreshToken, { ...ctx.opts, additionalParameters })
}

async function clientCredentials(ctx: Ctx, parameters: string[][]) {
  return oauth.clientCredentialsGrantRequest(ctx.as, agent, agentAuth, parameters, ctx.opts)
}

const claims = (token: string) => decodeJwt(token) as { aud: string | string[]; scope: string }

/** #27 item 4: userinfo answers 401 invalid_token with the RFC 6750 challenge, naming nothing of the token. */
async function expectRefusedAtUserinfo(ctx: Ctx, accessToken: string, init: { DPoP?: oauth.DPoPHandle } = {}) {
  const response = await oauth.userInfoRequest(ctx.as, agent, accessToken, { ...ctx.opts, ...init })
  expect(response.status).toBe(401)
  const description = 'the access token was issued for another resource'
  const scheme = init.DPoP ? 'DPoP' : 'Bearer'
  const challenge = response.headers.get('www-authenticate') ?? ''
  expect(
    challenge.startsWith(`${scheme} realm="${ISSUER}", error="invalid_token", error_description="${description}"`),
  ).toBe(true)
  expect(await response.json()).toEqual({ error: 'invalid_token', error_description: description })
  for (const part of accessToken.split('.')) expect(challenge).not.toContain(part)
}

describe('RFC 8707 resource indicators: the access token is for exactly the requested resources', () => {
  it('one resource at authorize and token: aud is that resource, scope its scopes (MCP SDK shape)', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools', [MCP])
    const result = await tokens(ctx, await redeem(ctx, flow, [MCP]))
    expect(claims(result.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools' })
    expect(result.scope).toBe('mcp:tools')
    // the MCP SDK refreshes with the resource too
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, result.refresh_token as string, [MCP]),
    )
    expect(claims(refreshed.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools' })
  })

  it('one resource among the scopes of two: aud is only that resource, scope only its scopes', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools calendar.read', [MCP])
    const result = await tokens(ctx, await redeem(ctx, flow, [MCP]))
    expect(claims(result.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools' })
    expect(result.scope).toBe('mcp:tools')
  })

  it('two resources: aud is exactly both; without resource at the token request, all of the code', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools calendar.read', [MCP, CAL])
    const result = await tokens(ctx, await redeem(ctx, flow))
    expect(claims(result.access_token)).toMatchObject({ aud: [MCP, CAL], scope: 'mcp:tools calendar.read' })
  })

  it('a resource given twice counts once', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools', [MCP, MCP])
    const result = await tokens(ctx, await redeem(ctx, flow, [MCP, MCP]))
    expect(claims(result.access_token).aud).toBe(MCP)
  })

  it('resource by form POST at the authorization endpoint may repeat too', async () => {
    const ctx = await start()
    const { url, state, verifier } = await authorizationUrl(ctx.as, { clientId: 'agent', scope: 'mcp:tools' })
    const body = new URLSearchParams(url.searchParams)
    body.append('resource', MCP)
    body.append('resource', CAL)
    const first = await ctx.browser.navigate(url.origin + url.pathname, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    })
    const page = first.page
    if (!page) throw new Error('expected the sign-in page')
    const done = await ctx.browser.signIn(page, 'alice', 'alice-password')
    const callback = done.callback as URL
    expect(callback.searchParams.get('error')).toBeNull()
    const result = await tokens(
      ctx,
      await redeem(ctx, { request: { url, state, verifier, nonce: undefined }, callback }),
    )
    // calendar.read was not asked for: the token is for both resources, with the one scope asked
    expect(claims(result.access_token)).toMatchObject({ aud: [MCP, CAL], scope: 'mcp:tools' })
  })

  it('#27 item 4 identity scopes stay with the resource scopes (but userinfo refuses the token); other API scopes are dropped', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'openid profile api1 mcp:tools', [MCP])
    const result = await tokens(ctx, await redeem(ctx, flow), flow.request.nonce)
    expect(claims(result.access_token)).toMatchObject({ aud: MCP, scope: 'openid profile mcp:tools' })
    await expectRefusedAtUserinfo(ctx, result.access_token)
    // The grant itself holds no api1 (decision: dropped at authorize, see authorize.ts): a refresh
    // without resource still has no api1 and is still for MCP only.
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, result.refresh_token as string),
    )
    expect(claims(refreshed.access_token)).toMatchObject({ aud: MCP, scope: 'openid profile mcp:tools' })
    // …and asking for api1 there is invalid_scope (it was never granted)
    await expect(
      oauth.processRefreshTokenResponse(
        ctx.as,
        agent,
        await refresh(ctx, refreshed.refresh_token as string, [], 'api1'),
      ),
    ).rejects.toMatchObject({ error: 'invalid_scope', status: 400 })
  })

  it('resource without scope: the scopes of that resource the client is permitted', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, undefined, [MCP])
    const result = await tokens(ctx, await redeem(ctx, flow, [MCP]))
    expect(claims(result.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools mcp:prompts' })
  })

  it('without resource nothing changes: aud from the scopes (api1), scope as requested', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools api1', [])
    const result = await tokens(ctx, await redeem(ctx, flow))
    expect(claims(result.access_token)).toMatchObject({ aud: [MCP, 'api1'], scope: 'mcp:tools api1' })
    // and a scope-less request without resource is still invalid_scope
    const request = await authorizationUrl(ctx.as, { clientId: 'agent' })
    request.url.searchParams.delete('scope')
    const callback = await authorize(ctx.browser, request.url)
    expect(callback.searchParams.get('error')).toBe('invalid_scope')
  })

  it('INT-02: introspection reports the same aud', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools calendar.read', [MCP, CAL])
    const result = await tokens(ctx, await redeem(ctx, flow, [CAL]))
    expect(claims(result.access_token)).toMatchObject({ aud: CAL, scope: 'calendar.read' })
    const response = await oauth.introspectionRequest(ctx.as, agent, agentAuth, result.access_token, ctx.opts)
    expect(await oauth.processIntrospectionResponse(ctx.as, agent, response)).toMatchObject({
      active: true,
      aud: CAL,
      scope: 'calendar.read',
    })
  })
})

describe('#27 item 4 UserInfo refuses a token issued for other resources', () => {
  it('#27 item 4 UI-01: a token for resource=MCP (code and refresh, Bearer) is refused; the ID token still names the user', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'openid profile mcp:tools', [MCP])
    const result = await tokens(ctx, await redeem(ctx, flow), flow.request.nonce)
    expect(claims(result.access_token)).toMatchObject({ aud: MCP })
    await expectRefusedAtUserinfo(ctx, result.access_token)
    // asked for the resource at the token request too (the MCP SDK shape), and after a refresh
    const again = await authorizeWith(ctx, 'openid mcp:tools', [MCP])
    const named = await tokens(ctx, await redeem(ctx, again, [MCP]), again.request.nonce)
    await expectRefusedAtUserinfo(ctx, named.access_token)
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, named.refresh_token as string),
    )
    await expectRefusedAtUserinfo(ctx, refreshed.access_token)
    expect(oauth.getValidatedIdTokenClaims(result)?.sub).toBe('user-1')
  })

  it('#27 item 4 UI-01: two resources, neither the issuer: refused', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'openid mcp:tools calendar.read', [MCP, CAL])
    const result = await tokens(ctx, await redeem(ctx, flow), flow.request.nonce)
    expect(claims(result.access_token)).toMatchObject({ aud: [MCP, CAL] })
    await expectRefusedAtUserinfo(ctx, result.access_token)
  })

  it('#27 item 4 UI-01 RFC 9449 §7.1: a DPoP-bound token for resource=MCP is refused with a DPoP challenge', async () => {
    // oauth4webapi puts the real time in a proof's iat: the service on a live clock
    const ctx = await setup({ scopes: SCOPES, now: clock(Math.floor(Date.now() / 1000)).now })
    await ctx.service.clients.ensure(AGENT)
    const handle = oauth.DPoP(agent, await oauth.generateKeyPair('ES256'))
    const flow = await authorizeWith(ctx, 'openid mcp:tools', [MCP])
    const params = oauth.validateAuthResponse(ctx.as, agent, flow.callback, flow.request.state as string)
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      agent,
      agentAuth,
      params,
      RU,
      flow.request.verifier,
      {
        ...ctx.opts,
        DPoP: handle,
      },
    )
    const result = await oauth.processAuthorizationCodeResponse(ctx.as, agent, response, {
      expectedNonce: flow.request.nonce as string,
    })
    expect(result.token_type).toBe('dpop')
    await expectRefusedAtUserinfo(ctx, result.access_token, { DPoP: handle })
  })

  it("#27 item 4 UI-01: tokens issued without resource keep working, whatever their scopes' audiences", async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'openid profile mcp:tools', [])
    const result = await tokens(ctx, await redeem(ctx, flow), flow.request.nonce)
    expect(claims(result.access_token)).toMatchObject({ aud: MCP, scope: 'openid profile mcp:tools' })
    const info = await oauth.userInfoRequest(ctx.as, agent, result.access_token, ctx.opts)
    expect(info.status).toBe(200)
    expect((await info.json()).sub).toBe('user-1')
  })

  it('#27 item 4 UI-01: a token whose resources include the issuer itself works at userinfo', async () => {
    const ctx = await setup({ scopes: [...SCOPES, { name: 'account', audience: ISSUER }] })
    await ctx.service.clients.ensure({ ...AGENT, permissions: [...AGENT.permissions, 'scp:account'] })
    const flow = await authorizeWith(ctx, 'openid mcp:tools account', [MCP, ISSUER])
    const result = await tokens(ctx, await redeem(ctx, flow), flow.request.nonce)
    expect(claims(result.access_token)).toMatchObject({ aud: [MCP, ISSUER] })
    const info = await oauth.userInfoRequest(ctx.as, agent, result.access_token, ctx.opts)
    expect(info.status).toBe(200)
    // the same grant, a token asked for MCP alone: refused
    const narrowed = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, result.refresh_token as string, [MCP]),
    )
    expect(claims(narrowed.access_token)).toMatchObject({ aud: MCP })
    await expectRefusedAtUserinfo(ctx, narrowed.access_token)
  })
})

describe('RFC 8707 §2: a resource that is not acceptable is invalid_target', () => {
  const bad: Array<[string, string]> = [
    ['unknown resource', 'https://unknown.example.com/'],
    ['the audience of a scope the client may not request', HIDDEN],
    ['a relative URI', '/mcp'],
    ['a URI with a fragment', `${MCP}#frag`],
    ['an audience that is no absolute URI (api1)', 'api1'],
    ['a near miss (trailing slash)', `${MCP}/`],
  ]

  it.each(bad)('AUTHZ-04 at authorize, %s: redirected with error, state and iss', async (_name, resource) => {
    const ctx = await start()
    const request = await authorizationUrl(ctx.as, { clientId: 'agent', scope: 'mcp:tools' })
    request.url.searchParams.append('resource', MCP)
    request.url.searchParams.append('resource', resource)
    const response = await ctx.service.fetch(new Request(request.url, { redirect: 'manual' }))
    expect(response.status).toBe(303)
    const location = new URL(response.headers.get('location') as string)
    expect(location.origin + location.pathname).toBe(RU)
    expect(Object.fromEntries(location.searchParams)).toEqual({
      error: 'invalid_target',
      error_description: expect.not.stringContaining(resource),
      state: request.state,
      iss: ISSUER,
    })
    // what oauth4webapi makes of it
    expect(() => oauth.validateAuthResponse(ctx.as, agent, location, request.state as string)).toThrow(
      expect.objectContaining({ error: 'invalid_target' }),
    )
  })

  it.each(bad)('at the token endpoint (client_credentials), %s: 400', async (_name, resource) => {
    const ctx = await start()
    const response = await clientCredentials(ctx, [['resource', resource]])
    expect(response.status).toBe(400)
    const body = await response.json()
    expect(body).toEqual({ error: 'invalid_target', error_description: expect.any(String) })
    expect(body.error_description).not.toContain(resource)
  })

  it('at the token endpoint (code exchange), an unknown resource: 400, and the code still works', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools', [MCP])
    await expect(tokens(ctx, await redeem(ctx, flow, ['https://unknown.example.com/']))).rejects.toMatchObject({
      error: 'invalid_target',
      status: 400,
    })
    const result = await tokens(ctx, await redeem(ctx, flow, [MCP]))
    expect(claims(result.access_token).aud).toBe(MCP)
  })

  it('a scope that names none of the resources is invalid_scope at authorize', async () => {
    const ctx = await start()
    const request = await authorizationUrl(ctx.as, { clientId: 'agent', scope: 'api1' })
    request.url.searchParams.append('resource', MCP)
    const callback = await authorize(ctx.browser, request.url)
    expect(callback.searchParams.get('error')).toBe('invalid_scope')
    expect(callback.searchParams.get('iss')).toBe(ISSUER)
  })

  it('huge or odd values never give a 500', async () => {
    const ctx = await start()
    for (const value of ['%00', 'a'.repeat(5000), 'https://x/%ZZ', 'http://[::1', ':', 'https:']) {
      const response = await ctx.service.fetch(
        form(
          `${ISSUER}/connect/token`,
          { grant_type: 'client_credentials' },
          { authorization: basic('agent', 'agent-secret') },
        ),
      )
      expect(response.status).toBe(200)
      const raw = new Request(`${ISSUER}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('agent', 'agent-secret') },
        body: `grant_type=client_credentials&resource=${value}`,
      })
      const bad = await ctx.service.fetch(raw)
      expect(bad.status).toBe(400)
      expect(['invalid_target', 'invalid_request']).toContain((await bad.json()).error)
    }
  })
})

describe('RFC 8707 §2.2: the token request narrows the grant, never widens it', () => {
  it('code exchange: a subset of the authorization request resources is fine', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools calendar.read', [MCP, CAL])
    const result = await tokens(ctx, await redeem(ctx, flow, [MCP]))
    expect(claims(result.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools' })
    expect(result.scope).toBe('mcp:tools')
    // the refresh token keeps the whole grant: both resources without resource at refresh
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, result.refresh_token as string),
    )
    expect(claims(refreshed.access_token)).toMatchObject({ aud: [MCP, CAL], scope: 'mcp:tools calendar.read' })
  })

  it('code exchange: a permitted resource the authorization request did not name is invalid_target', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools', [MCP])
    await expect(tokens(ctx, await redeem(ctx, flow, [MCP, CAL]))).rejects.toMatchObject({
      error: 'invalid_target',
      status: 400,
    })
  })

  it('code exchange: a code without resources takes none at the token endpoint', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools', [])
    await expect(tokens(ctx, await redeem(ctx, flow, [MCP]))).rejects.toMatchObject({
      error: 'invalid_target',
      status: 400,
    })
  })

  it('RT-05 refresh: a subset of the grant resources is fine, and the family keeps them all', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools calendar.read', [MCP, CAL])
    const first = await tokens(ctx, await redeem(ctx, flow))
    const narrow = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, first.refresh_token as string, [CAL]),
    )
    expect(claims(narrow.access_token)).toMatchObject({ aud: CAL, scope: 'calendar.read' })
    expect(narrow.scope).toBe('calendar.read')
    const again = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, narrow.refresh_token as string, [MCP]),
    )
    expect(claims(again.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools' })
    // resource and scope together: the scope, then only the resource's part of it
    const both = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, again.refresh_token as string, [MCP], 'mcp:tools calendar.read'),
    )
    expect(claims(both.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools' })
  })

  it('RT-05 refresh: any other resource is invalid_target, and the refresh token is not burnt', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools', [MCP])
    const first = await tokens(ctx, await redeem(ctx, flow))
    for (const resource of [CAL, 'https://unknown.example.com/', `${MCP}#x`]) {
      await expect(
        oauth.processRefreshTokenResponse(ctx.as, agent, await refresh(ctx, first.refresh_token as string, [resource])),
      ).rejects.toMatchObject({ error: 'invalid_target', status: 400 })
    }
    const ok = await oauth.processRefreshTokenResponse(ctx.as, agent, await refresh(ctx, first.refresh_token as string))
    expect(claims(ok.access_token).aud).toBe(MCP)
  })

  it('refresh of a grant made without resources: unchanged, and any resource is invalid_target', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'mcp:tools', [])
    const first = await tokens(ctx, await redeem(ctx, flow))
    await expect(
      oauth.processRefreshTokenResponse(ctx.as, agent, await refresh(ctx, first.refresh_token as string, [MCP])),
    ).rejects.toMatchObject({ error: 'invalid_target', status: 400 })
    const ok = await oauth.processRefreshTokenResponse(ctx.as, agent, await refresh(ctx, first.refresh_token as string))
    expect(claims(ok.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools' })
  })
})

describe('#17.4 permissions at use apply to resources too', () => {
  it('a resource whose scopes the client lost: out of the refreshed token; none left is invalid_grant', async () => {
    const ctx = await start()
    const flow = await authorizeWith(ctx, 'openid mcp:tools calendar.read', [MCP, CAL])
    const first = await tokens(ctx, await redeem(ctx, flow), flow.request.nonce)
    const without = (...drop: string[]) => (AGENT.permissions ?? []).filter((p) => !drop.includes(p))
    await ctx.service.clients.update('agent', { permissions: without('scp:calendar.read') })
    // naming it is invalid_target (no longer the audience of a scope the client may request)…
    await expect(
      oauth.processRefreshTokenResponse(ctx.as, agent, await refresh(ctx, first.refresh_token as string, [CAL])),
    ).rejects.toMatchObject({ error: 'invalid_target', status: 400 })
    // …and without resource the token is for what is left
    const second = await oauth.processRefreshTokenResponse(
      ctx.as,
      agent,
      await refresh(ctx, first.refresh_token as string),
    )
    expect(claims(second.access_token)).toMatchObject({ aud: MCP, scope: 'openid mcp:tools' })
    await ctx.service.clients.update('agent', {
      permissions: without('scp:calendar.read', 'scp:mcp:tools', 'scp:mcp:prompts'),
    })
    await expect(
      oauth.processRefreshTokenResponse(ctx.as, agent, await refresh(ctx, second.refresh_token as string)),
    ).rejects.toMatchObject({ error: 'invalid_grant', status: 400 })
  })
})

describe('RFC 8707 with client_credentials', () => {
  it('X-06 one resource: aud is it, scope the permitted scopes of it', async () => {
    const ctx = await start()
    const response = await clientCredentials(ctx, [['resource', MCP]])
    const result = await oauth.processClientCredentialsResponse(ctx.as, agent, response)
    expect(claims(result.access_token)).toMatchObject({ aud: MCP, scope: 'mcp:tools mcp:prompts' })
    const introspected = await oauth.introspectionRequest(ctx.as, agent, agentAuth, result.access_token, ctx.opts)
    expect(await oauth.processIntrospectionResponse(ctx.as, agent, introspected)).toMatchObject({
      active: true,
      aud: MCP,
    })
  })

  it('two resources and a scope: aud exactly both, scope only what belongs to them', async () => {
    const ctx = await start()
    const response = await clientCredentials(ctx, [
      ['resource', MCP],
      ['resource', CAL],
      ['scope', 'mcp:tools calendar.read api1'],
    ])
    const result = await oauth.processClientCredentialsResponse(ctx.as, agent, response)
    expect(claims(result.access_token)).toMatchObject({ aud: [MCP, CAL], scope: 'mcp:tools calendar.read' })
  })

  it('TOK-06: resource may repeat, other parameters still may not', async () => {
    const ctx = await start()
    const response = await clientCredentials(ctx, [
      ['resource', MCP],
      ['resource', CAL],
      ['scope', 'mcp:tools'],
      ['scope', 'mcp:tools'],
    ])
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({
      error: 'invalid_request',
      error_description: 'parameter scope is repeated',
    })
  })

  it('an empty resource is absent (RFC 6749 §3.1)', async () => {
    const ctx = await start()
    const response = await clientCredentials(ctx, [
      ['resource', ''],
      ['scope', 'api1'],
    ])
    const result = await oauth.processClientCredentialsResponse(ctx.as, agent, response)
    expect(claims(result.access_token).aud).toBe('api1')
  })
})
