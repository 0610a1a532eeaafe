/**
 * #42 item 4: the Grant Management API (Grant Management for OAuth 2.0 §6), GET and DELETE
 * {issuer}/connect/grants/{grant_id}, driven by oauth4webapi as the client: its own client
 * credentials token with `grant_management_query` / `grant_management_revoke` (Bearer or DPoP)
 * queries and revokes the grants a user gave it; every other caller and every grant it may not
 * see is refused with nothing revealed. Runs on memory and on PostgreSQL / Redis / SQLite where
 * available.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { type Instance, authorizationUrl, redeemCallback } from '../../helpers/flow.ts'
import { ISSUER, RU, clock, discover, inProcess, makeService } from '../../helpers/service.ts'
import { Browser } from '../../helpers/browser.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const MCP = 'https://mcp.example.com/mcp'
const GM = `${ISSUER}/connect/grants`

/** A confidential client of the code flow that may also manage its grants (client credentials). */
function app(clientId: string, scopes: string[]): ClientRegistration {
  return {
    clientId,
    clientSecret: `${clientId}-secret`,
    permissions: [
      'ept:authorization',
      'ept:token',
      'ept:introspection',
      'ept:revocation',
      'gt:authorization_code',
      'gt:refresh_token',
      'gt:client_credentials',
      `gt:${TOKEN_EXCHANGE}`,
      'rst:code',
      'scp:openid',
      'scp:profile',
      'scp:email',
      'scp:api1',
      'scp:mcp:tools',
      ...scopes.map((scope) => `scp:${scope}`),
    ],
    redirectUris: [RU],
  }
}

const BOTH = ['grant_management_query', 'grant_management_revoke']
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'

type Ctx = Instance & { time: ReturnType<typeof clock> }

type Init = oauth.CustomFetchOptions<string, oauth.ProtectedResourceRequestBody>

/** oauth4webapi's resource requests, sent to `url` (default: where it asked) on the service in process. */
function resourceFetch(ctx: Ctx, url?: string) {
  return (asked: string, init: Init): Promise<Response> =>
    ctx.service.fetch(
      new Request(url ?? asked, { method: init.method, headers: init.headers, body: init.body as BodyInit }),
    )
}

describe.each(STORES)('#42 item 4 the grant management endpoint on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start(): Promise<Ctx> {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const { service } = await makeService({
      store: opened.store,
      now: time.now,
      scopes: [{ name: 'mcp:tools', audience: MCP }],
      authorizationDetailsTypes: ['payment_initiation'],
    })
    await service.clients.ensure({ ...app('owner', BOTH), authorizationDetailsTypes: ['payment_initiation'] })
    await service.clients.ensure(app('stranger', BOTH))
    await service.clients.ensure(app('plain', []))
    const as = await discover(service.fetch)
    return { service, clock: time, time, as, browser: new Browser(service.fetch), opts: inProcess(service.fetch) }
  }

  const client = (id: string): oauth.Client => ({ client_id: id })
  const auth = (id: string) => oauth.ClientSecretBasic(`${id}-secret`)

  /** The authorization request in alice's browser: signs in when asked, allows on a consent page. */
  async function authorizeAllowing(ctx: Ctx, url: URL): Promise<URL> {
    let shown = await ctx.browser.navigate(url.href)
    if (shown.page?.html.includes('name="password"'))
      shown = await ctx.browser.signIn(shown.page, 'alice', 'alice-password')
    if (shown.page) shown = await ctx.browser.submit(shown.page, { decision: 'allow' })
    if (!shown.callback) throw new Error(`no callback: ${shown.page?.status}`)
    return shown.callback
  }

  /** Alice's grant to `clientId` through the code flow (signing in on the built-in page): its tokens and id. */
  async function userGrant(ctx: Ctx, clientId: string, scope: string, extra: Record<string, string> = {}) {
    const request = await authorizationUrl(ctx.as, { clientId, scope, extra })
    const callback = await authorizeAllowing(ctx, request.url)
    const { response } = await redeemCallback(ctx, callback, request, {
      client: client(clientId),
      auth: auth(clientId),
    })
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, client(clientId), response, {
      expectedNonce: request.nonce as string,
    })
    return { tokens, grantId: (decodeJwt(tokens.access_token) as { gid: string }).gid }
  }

  /** `clientId`'s own token from the client credentials grant (DPoP-bound with `dpop`). */
  async function ccToken(ctx: Ctx, clientId: string, scope: string, dpop?: oauth.DPoPHandle): Promise<string> {
    const response = await oauth.clientCredentialsGrantRequest(
      ctx.as,
      client(clientId),
      auth(clientId),
      { scope },
      {
        ...ctx.opts,
        ...(dpop ? { DPoP: dpop } : {}),
      },
    )
    return (await oauth.processClientCredentialsResponse(ctx.as, client(clientId), response)).access_token
  }

  /** The grant's resource URL, called with `token` (a raw response: refusals are read, not thrown). */
  function call(ctx: Ctx, method: string, grantId: string, token: string, scheme = 'Bearer'): Promise<Response> {
    return ctx.service.fetch(
      new Request(`${GM}/${grantId}`, { method, headers: { authorization: `${scheme} ${token}` } }),
    )
  }

  async function expectUnknown(response: Response): Promise<void> {
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual({ error: 'invalid_grant_id', error_description: 'no such grant' })
  }

  it('#42 item 4: discovery lists grant_management_endpoint, the five actions, action_required false and the two scopes', async () => {
    const ctx = await start()
    expect(ctx.as).toMatchObject({
      grant_management_endpoint: GM,
      grant_management_actions_supported: ['query', 'revoke', 'create', 'merge', 'replace'],
      grant_management_action_required: false,
    })
    expect(ctx.as.scopes_supported).toEqual(expect.arrayContaining(BOTH))
    const oauthMetadata = await ctx.service.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`))
    expect(await oauthMetadata.json()).toMatchObject({ grant_management_endpoint: GM })
  })

  it('#42 item 4: the built-in scopes come through scp: permissions and client credentials, with the issuer as audience', async () => {
    const ctx = await start()
    const token = decodeJwt(await ccToken(ctx, 'owner', 'grant_management_query grant_management_revoke'))
    expect(token).toMatchObject({ scope: 'grant_management_query grant_management_revoke', aud: ISSUER, sub: 'owner' })
    const refused = await oauth.clientCredentialsGrantRequest(
      ctx.as,
      client('plain'),
      auth('plain'),
      { scope: 'grant_management_query' },
      ctx.opts,
    )
    await expect(oauth.processClientCredentialsResponse(ctx.as, client('plain'), refused)).rejects.toMatchObject({
      error: 'invalid_scope',
    })
  })

  it('#42 item 4: GET answers the grant: scopes with resources, claim names, created_at, expires_at; no-store', async () => {
    const ctx = await start()
    const createdAt = ctx.time.now()
    const claims = JSON.stringify({ userinfo: { name: null, email: null }, id_token: { email: null } })
    const { grantId } = await userGrant(ctx, 'owner', 'openid profile email offline_access mcp:tools', {
      resource: MCP,
      claims,
    })
    const token = await ccToken(ctx, 'owner', 'grant_management_query')
    const response = await oauth.protectedResourceRequest(
      token,
      'GET',
      new URL(`${GM}/${grantId}`),
      undefined,
      undefined,
      {
        [oauth.customFetch]: resourceFetch(ctx),
      },
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toContain('no-store')
    const body = (await response.json()) as Record<string, unknown>
    expect(body).toEqual({
      scopes: [{ scope: 'openid profile email offline_access mcp:tools', resource: [MCP] }],
      claims: ['name', 'email'],
      created_at: createdAt,
      expires_at: expect.any(Number),
    })
    expect(body.expires_at as number).toBeGreaterThan(createdAt)
  })

  it('#42 item 4: GET answers the authorization details the user approved (RFC 9396)', async () => {
    const ctx = await start()
    const detail = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '12.00' } }
    const { grantId } = await userGrant(ctx, 'owner', 'openid', { authorization_details: JSON.stringify([detail]) })
    const response = await call(ctx, 'GET', grantId, await ccToken(ctx, 'owner', 'grant_management_query'))
    expect(await response.json()).toEqual({
      scopes: [{ scope: 'openid' }],
      authorization_details: [detail],
      created_at: expect.any(Number),
      expires_at: expect.any(Number),
    })
  })

  it('#42 item 4: a grant without resources or claims request answers its scopes alone', async () => {
    const ctx = await start()
    const { grantId } = await userGrant(ctx, 'owner', 'openid api1')
    const response = await call(ctx, 'GET', grantId, await ccToken(ctx, 'owner', 'grant_management_query'))
    expect(await response.json()).toEqual({
      scopes: [{ scope: 'openid api1' }],
      created_at: expect.any(Number),
      expires_at: expect.any(Number),
    })
  })

  it('#42 item 4: DELETE → 204; then the access token is inactive, refused at userinfo, the refresh token refused, the grant 404', async () => {
    const ctx = await start()
    const { tokens, grantId } = await userGrant(ctx, 'owner', 'openid profile offline_access')
    expect(tokens.refresh_token).toBeTypeOf('string')
    const revoke = await ccToken(ctx, 'owner', 'grant_management_revoke')
    const deleted = await call(ctx, 'DELETE', grantId, revoke)
    expect(deleted.status).toBe(204)
    expect(await deleted.text()).toBe('')

    const introspected = await oauth.introspectionRequest(
      ctx.as,
      client('owner'),
      auth('owner'),
      tokens.access_token,
      ctx.opts,
    )
    expect(await introspected.json()).toEqual({ active: false })
    const userinfo = await oauth.userInfoRequest(ctx.as, client('owner'), tokens.access_token, ctx.opts).then(
      (response) => response.status,
      (err: unknown) => (err as oauth.WWWAuthenticateChallengeError).status,
    )
    expect(userinfo).toBe(401)
    const refreshed = await oauth.refreshTokenGrantRequest(
      ctx.as,
      client('owner'),
      auth('owner'),
      tokens.refresh_token as string,
      ctx.opts,
    )
    await expect(oauth.processRefreshTokenResponse(ctx.as, client('owner'), refreshed)).rejects.toMatchObject({
      error: 'invalid_grant',
    })
    expect(await opened?.store.grants.get(grantId, ctx.time.now())).toBeUndefined()
    await expectUnknown(await call(ctx, 'GET', grantId, await ccToken(ctx, 'owner', 'grant_management_query')))
    await expectUnknown(await call(ctx, 'DELETE', grantId, revoke))
  })

  it("#42 item 4: another client's grant, an unknown, a malformed and an expired grant id are the same 404, and nothing is revoked", async () => {
    const ctx = await start()
    const { tokens, grantId } = await userGrant(ctx, 'owner', 'openid profile')
    const stranger = await ccToken(ctx, 'stranger', 'grant_management_query grant_management_revoke')
    await expectUnknown(await call(ctx, 'GET', grantId, stranger))
    await expectUnknown(await call(ctx, 'DELETE', grantId, stranger))
    const introspected = await oauth.introspectionRequest(
      ctx.as,
      client('owner'),
      auth('owner'),
      tokens.access_token,
      ctx.opts,
    )
    expect(await introspected.json()).toMatchObject({ active: true })

    const own = await ccToken(ctx, 'owner', 'grant_management_query grant_management_revoke')
    for (const id of ['AAAAAAAAAAAAAAAAAAAAAA', 'not%20a%20grant', 'a.b', `${grantId}/extra`, 'x'.repeat(200), '']) {
      await expectUnknown(await call(ctx, 'GET', id, own))
      await expectUnknown(await call(ctx, 'DELETE', id, own))
    }
    // The endpoint itself names no grant: the API lists none (§6).
    await expectUnknown(await ctx.service.fetch(new Request(GM, { headers: { authorization: `Bearer ${own}` } })))
    ctx.time.advance(3600 * 24 * 400)
    await expectUnknown(await call(ctx, 'GET', grantId, await ccToken(ctx, 'owner', 'grant_management_query')))
  })

  it("#42 item 4: a user's access token, an ID token, a refresh token, a token without the scope: 401 invalid_token / 403 insufficient_scope with WWW-Authenticate", async () => {
    const ctx = await start()
    const { tokens, grantId } = await userGrant(ctx, 'owner', 'openid profile offline_access api1')
    const expectChallenge = async (response: Response, status: number, error: string) => {
      expect(response.status).toBe(status)
      expect((await response.json()) as Record<string, unknown>).toMatchObject({ error })
      expect(response.headers.get('www-authenticate')).toMatch(new RegExp(`^Bearer .*error="${error}"`))
    }
    for (const token of [tokens.access_token, tokens.id_token as string, tokens.refresh_token as string, 'garbage']) {
      await expectChallenge(await call(ctx, 'GET', grantId, token), 401, 'invalid_token')
    }
    const queryOnly = await ccToken(ctx, 'owner', 'grant_management_query')
    const revokeOnly = await ccToken(ctx, 'owner', 'grant_management_revoke')
    const api = await ccToken(ctx, 'owner', 'api1')
    await expectChallenge(await call(ctx, 'GET', grantId, api), 403, 'insufficient_scope')
    await expectChallenge(await call(ctx, 'GET', grantId, revokeOnly), 403, 'insufficient_scope')
    const refusedDelete = await call(ctx, 'DELETE', grantId, queryOnly)
    expect(refusedDelete.headers.get('www-authenticate')).toContain('scope="grant_management_revoke"')
    await expectChallenge(refusedDelete, 403, 'insufficient_scope')
    // The grant is still there.
    expect((await call(ctx, 'GET', grantId, queryOnly)).status).toBe(200)

    const none = await ctx.service.fetch(new Request(`${GM}/${grantId}`))
    expect(none.status).toBe(401)
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="${ISSUER}"`)
  })

  it("#42 item 4: a token with the scope that is not the client's own client credentials token (a user's, an exchanged one) → 401 invalid_token", async () => {
    const ctx = await start()
    // An end-user cannot grant them (they are the client's own): the authorization request is refused.
    const refused = await authorizationUrl(ctx.as, { clientId: 'owner', scope: `openid ${BOTH.join(' ')}` })
    const answer = await ctx.service.fetch(new Request(refused.url))
    const location = new URL(answer.headers.get('location') as string)
    expect(location.searchParams.get('error')).toBe('invalid_scope')
    // A user's token of another grant, and an exchanged client credentials token with the scopes.
    const { tokens, grantId } = await userGrant(ctx, 'owner', 'openid')
    const exchange = await oauth.genericTokenEndpointRequest(
      ctx.as,
      client('owner'),
      auth('owner'),
      TOKEN_EXCHANGE,
      {
        subject_token: await ccToken(ctx, 'owner', BOTH.join(' ')),
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      },
      ctx.opts,
    )
    const exchanged = (await oauth.processGenericTokenEndpointResponse(ctx.as, client('owner'), exchange)).access_token
    expect(decodeJwt(exchanged).scope).toBe(BOTH.join(' '))
    for (const token of [tokens.access_token, exchanged]) {
      for (const method of ['GET', 'DELETE']) {
        const response = await call(ctx, method, grantId, token)
        expect(response.status).toBe(401)
        expect(await response.json()).toMatchObject({ error: 'invalid_token' })
      }
    }
  })

  it('#42 item 4: a client whose scp: permission was withdrawn is refused with its still-valid token (403)', async () => {
    const ctx = await start()
    const { grantId } = await userGrant(ctx, 'owner', 'openid')
    const token = await ccToken(ctx, 'owner', 'grant_management_query')
    await ctx.service.clients.update('owner', { permissions: app('owner', []).permissions })
    const response = await call(ctx, 'GET', grantId, token)
    expect(response.status).toBe(403)
  })

  it('#42 item 4: a DPoP-bound client token needs the DPoP scheme and a proof for the grant URL (oauth4webapi)', async () => {
    const ctx = await start()
    const { grantId } = await userGrant(ctx, 'owner', 'openid')
    const dpop = oauth.DPoP(client('owner'), await oauth.generateKeyPair('ES256'))
    const token = await ccToken(ctx, 'owner', 'grant_management_query', dpop)
    const to = { [oauth.customFetch]: resourceFetch(ctx) }
    const ok = await oauth.protectedResourceRequest(token, 'GET', new URL(`${GM}/${grantId}`), undefined, undefined, {
      DPoP: dpop,
      ...to,
    })
    expect(ok.status).toBe(200)
    // As a Bearer token: refused (RFC 9449 §7.2).
    const bearer = await call(ctx, 'GET', grantId, token)
    expect(bearer.status).toBe(401)
    expect(bearer.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_token"/)
    // A proof for another URL: refused.
    const proofForOther = await oauth
      .protectedResourceRequest(token, 'GET', new URL(`${ISSUER}/connect/userinfo`), undefined, undefined, {
        DPoP: dpop,
        [oauth.customFetch]: resourceFetch(ctx, `${GM}/${grantId}`),
      })
      .catch((err: unknown) => err)
    expect(proofForOther).toBeInstanceOf(oauth.WWWAuthenticateChallengeError)
  })

  it('#42 item 4: other methods → 405 with Allow: GET, DELETE', async () => {
    const ctx = await start()
    const token = await ccToken(ctx, 'owner', 'grant_management_query')
    for (const method of ['POST', 'PUT', 'PATCH']) {
      const response = await call(ctx, method, 'AAAAAAAAAAAAAAAAAAAAAA', token)
      expect(response.status).toBe(405)
      expect(response.headers.get('allow')).toBe('GET, DELETE')
    }
  })
})
