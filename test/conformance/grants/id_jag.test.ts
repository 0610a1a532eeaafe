/**
 * #45 identity provider side: token exchange (RFC 8693) issuing an Identity Assertion JWT
 * Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant §4.3) for an ID token this
 * service issued to the requesting client. Over HTTP, as a client sends it, on memory and
 * PostgreSQL. docs/security.md "ID-JAGs (identity provider side)" is the threat model.
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent, IdentityAssertionRequest } from '../../../src/index.ts'
import { createResourceServer } from '../../../src/resource_server/index.ts'
import { Browser } from '../../helpers/browser.ts'
import { ISSUER, basic, form } from '../../helpers/service.ts'
import {
  AT,
  type Ctx,
  ID_JAG,
  ID_JAG_STORES,
  MCP_AS,
  MCP_RESOURCE,
  WIKI_AS,
  answer,
  exchangeRequest,
  idJagParams,
  signInTo,
  startPerTest,
} from './id_jag_fixtures.ts'

describe.each(ID_JAG_STORES)('#45 ID-JAG issuance, identity provider side ($name store)', (kind) => {
  const start = startPerTest(kind)
  /** The request must fail with `error` (400 unless told). */
  async function refused(ctx: Ctx, params: Record<string, string> | string[][], error: string, clientId?: string) {
    const { status, body } = await answer(await exchangeRequest(ctx, params, clientId))
    expect({ status, error: body.error }).toEqual({ status: 400, error })
  }

  it('#45 IdP: an ID token of the client becomes an ID-JAG: typ, signature, claims, exp - iat = lifetime, N_A, no-store', async () => {
    const events: GatehouseEvent[] = []
    const ctx = await start({ onEvent: (event) => void events.push(event) })
    const user = await signInTo(ctx, 'mcp-client', 'openid email')
    const response = await exchangeRequest(
      ctx,
      idJagParams(user.id_token, MCP_AS, { scope: 'tools.call', resource: MCP_RESOURCE }),
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const body = (await response.clone().json()) as Record<string, unknown>
    expect(body).toEqual({
      access_token: expect.any(String),
      issued_token_type: ID_JAG,
      token_type: 'N_A',
      expires_in: 300,
      scope: 'tools.call',
    })
    // A client library processes it as an RFC 8693 response (N_A: a token type of its own, RFC 8693 §2.2.1).
    const processed = await oauth.processGenericTokenEndpointResponse(ctx.as, { client_id: 'mcp-client' }, response, {
      recognizedTokenTypes: { n_a: () => {} },
    })
    expect(processed.issued_token_type).toBe(ID_JAG)
    const jag = body.access_token as string
    expect(decodeProtectedHeader(jag)).toMatchObject({ typ: 'oauth-id-jag+jwt', alg: 'RS256', kid: expect.any(String) })
    // Verified with this issuer's published keys, as the target authorization server does.
    const jwks = (await (await ctx.service.fetch(new Request(ctx.as.jwks_uri as string))).json()) as {
      keys: never[]
    }
    const { payload } = await jwtVerify(jag, createLocalJWKSet(jwks), {
      typ: 'oauth-id-jag+jwt',
      issuer: ISSUER,
      audience: MCP_AS,
      currentDate: new Date(ctx.time.now() * 1000),
    })
    const idToken = decodeJwt(user.id_token as string)
    expect(payload).toEqual({
      iss: ISSUER,
      sub: 'user-1',
      aud: MCP_AS,
      client_id: 'mcp-client-at-mcp',
      jti: expect.any(String),
      iat: ctx.time.now(),
      exp: ctx.time.now() + 300,
      scope: 'tools.call',
      resource: MCP_RESOURCE,
      auth_time: idToken.auth_time,
      email: 'alice@example.com',
    })
    expect((payload.exp as number) - (payload.iat as number)).toBe(300)
    expect(events.filter((event) => event.type === 'identity_assertion.issued')).toEqual([
      expect.objectContaining({
        clientId: 'mcp-client',
        sub: 'user-1',
        audience: MCP_AS,
        jti: payload.jti,
        scope: 'tools.call',
        resource: MCP_RESOURCE,
        grantId: idToken.gid,
      }),
    ])
    // Each request is a new ID-JAG (a new jti): the target accepts each once.
    const again = await answer(await exchangeRequest(ctx, idJagParams(user.id_token)))
    expect(decodeJwt(again.body.access_token as string).jti).not.toBe(payload.jti)
  })

  it('#45 IdP: email only when the grant at the requesting client holds the email scope; no scope asked is all the audience allows', async () => {
    const ctx = await start({ identityAssertion: { lifetime: 120 } })
    const user = await signInTo(ctx, 'mcp-client', 'openid profile')
    const { status, body } = await answer(await exchangeRequest(ctx, idJagParams(user.id_token)))
    expect(status).toBe(200)
    expect(body.expires_in).toBe(120)
    expect(body.scope).toBe('tools.read tools.call')
    const claims = decodeJwt(body.access_token as string)
    expect(claims.email).toBeUndefined()
    expect(claims.resource).toBeUndefined()
    expect(claims.scope).toBe('tools.read tools.call')
    expect((claims.exp as number) - (claims.iat as number)).toBe(120)
  })

  it('#45 IdP: an unknown audience is invalid_target; none or two audiences invalid_request', async () => {
    const ctx = await start()
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    await refused(ctx, idJagParams(user.id_token, 'https://unknown-as.example.test'), 'invalid_target')
    // The issuer is compared exactly (RFC 8414 §3.3).
    await refused(ctx, idJagParams(user.id_token, `${MCP_AS}/`), 'invalid_target')
    const { audience: _, ...none } = idJagParams(user.id_token)
    await refused(ctx, none, 'invalid_request')
    await refused(ctx, [...Object.entries(idJagParams(user.id_token)), ['audience', WIKI_AS]], 'invalid_request')
  })

  it('#45 IdP: a resource the audience does not list is invalid_target; an audience listing none passes one through', async () => {
    const ctx = await start()
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    const resource = 'https://elsewhere.example.test/api'
    await refused(ctx, idJagParams(user.id_token, MCP_AS, { resource }), 'invalid_target')
    await refused(ctx, idJagParams(user.id_token, MCP_AS, { resource: `${MCP_RESOURCE}#x` }), 'invalid_target')
    await refused(
      ctx,
      [...Object.entries(idJagParams(user.id_token)), ['resource', MCP_RESOURCE], ['resource', MCP_RESOURCE]],
      'invalid_target',
    )
    const wiki = await answer(await exchangeRequest(ctx, idJagParams(user.id_token, WIKI_AS, { resource })))
    expect(wiki.status).toBe(200)
    expect(decodeJwt(wiki.body.access_token as string)).toMatchObject({ aud: WIKI_AS, resource, scope: 'wiki.read' })
  })

  it("#45 IdP: a scope beyond the audience's scopes is invalid_scope", async () => {
    const ctx = await start()
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    await refused(ctx, idJagParams(user.id_token, MCP_AS, { scope: 'tools.call admin' }), 'invalid_scope')
    // Another audience's scope, and a scope of this server, are not the target's.
    await refused(ctx, idJagParams(user.id_token, MCP_AS, { scope: 'wiki.read' }), 'invalid_scope')
    await refused(ctx, idJagParams(user.id_token, MCP_AS, { scope: 'openid' }), 'invalid_scope')
  })

  it('#45 IdP: an ID token of another client is invalid_request, even where tokenExchange.idTokenSubjects lists the pair', async () => {
    const ctx = await start({ tokenExchange: { idTokenSubjects: { 'mcp-client': ['other-app'] } } })
    const other = await signInTo(ctx, 'other-app', 'openid email')
    await refused(ctx, idJagParams(other.id_token), 'invalid_request')
    // other-app's own ID token is its own to exchange, but the audience entry is mcp-client's (#45 review item 1).
    await refused(ctx, idJagParams(other.id_token), 'invalid_target', 'other-app')
  })

  it('#45 IdP: an ID token whose grant was revoked, or whose session ended, is invalid_request', async () => {
    const ctx = await start()
    const revoked = await signInTo(ctx, 'mcp-client', 'openid offline_access')
    expect((await exchangeRequest(ctx, idJagParams(revoked.id_token))).status).toBe(200)
    const revocation = await ctx.service.fetch(
      form(
        ctx.as.revocation_endpoint as string,
        { token: revoked.refresh_token as string },
        { authorization: basic('mcp-client', 'mcp-client-secret') },
      ),
    )
    expect(revocation.status).toBe(200)
    await refused(ctx, idJagParams(revoked.id_token), 'invalid_request')

    const browser = new Browser(ctx.service.fetch)
    const ended = await signInTo(ctx, 'mcp-client', 'openid', browser)
    expect((await exchangeRequest(ctx, idJagParams(ended.id_token))).status).toBe(200)
    const logout = new URL(ctx.as.end_session_endpoint as string)
    logout.searchParams.set('id_token_hint', ended.id_token as string)
    expect((await browser.request(logout.href)).status).toBeLessThan(400)
    await refused(ctx, idJagParams(ended.id_token), 'invalid_request')
  })

  it('#45 IdP: an access token (or an ID-JAG) as subject with id-jag requested is invalid_request; an expired ID token too', async () => {
    const ctx = await start()
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    await refused(ctx, { ...idJagParams(user.access_token), subject_token_type: AT }, 'invalid_request')
    // An access token sent as if it were an ID token fails its verification.
    await refused(ctx, idJagParams(user.access_token), 'invalid_request')
    const jag = (await answer(await exchangeRequest(ctx, idJagParams(user.id_token)))).body.access_token as string
    await refused(ctx, idJagParams(jag), 'invalid_request')
    await refused(
      ctx,
      {
        ...idJagParams(user.id_token),
        actor_token: user.id_token as string,
        actor_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      },
      'invalid_request',
    )
    ctx.time.advance((decodeJwt(user.id_token as string).exp as number) - ctx.time.now() + 1)
    await refused(ctx, idJagParams(user.id_token), 'invalid_request')
  })

  it('#45 IdP: the identityAssertion.authorize hook sees the request, refuses (access_denied) or narrows the scopes', async () => {
    const seen: IdentityAssertionRequest[] = []
    const ctx = await start({
      identityAssertion: {
        authorize: (request) => {
          seen.push(request)
          if (request.audience === WIKI_AS) return false
          return request.scopes.includes('tools.call') ? { scopes: ['tools.read'] } : true
        },
      },
    })
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    await refused(ctx, idJagParams(user.id_token, WIKI_AS), 'access_denied')
    const narrowed = await answer(
      await exchangeRequest(ctx, idJagParams(user.id_token, MCP_AS, { resource: MCP_RESOURCE })),
    )
    expect(narrowed.body.scope).toBe('tools.read')
    expect(decodeJwt(narrowed.body.access_token as string).scope).toBe('tools.read')
    await refused(ctx, idJagParams(user.id_token, MCP_AS, { scope: 'tools.call' }), 'invalid_scope')
    expect(seen[0]).toEqual({ sub: 'user-1', clientId: 'mcp-client', audience: WIKI_AS, scopes: ['wiki.read'] })
    expect(seen[1]).toEqual({
      sub: 'user-1',
      clientId: 'mcp-client',
      audience: MCP_AS,
      scopes: ['tools.read', 'tools.call'],
      resource: MCP_RESOURCE,
    })
  })

  it('#45 IdP: a client without the token-exchange permission is unauthorized_client', async () => {
    const ctx = await start()
    const user = await signInTo(ctx, 'no-exchange', 'openid')
    await refused(ctx, idJagParams(user.id_token), 'unauthorized_client', 'no-exchange')
  })

  it('#45 IdP: an ID-JAG is never an access token here: userinfo, introspection and the resource-server helper refuse it', async () => {
    const ctx = await start()
    const user = await signInTo(ctx, 'mcp-client', 'openid email')
    const jag = (await answer(await exchangeRequest(ctx, idJagParams(user.id_token)))).body.access_token as string
    const userinfo = await ctx.service.fetch(
      new Request(ctx.as.userinfo_endpoint as string, { headers: { authorization: `Bearer ${jag}` } }),
    )
    expect(userinfo.status).toBe(401)
    const introspection = await ctx.service.fetch(
      form(
        ctx.as.introspection_endpoint as string,
        { token: jag },
        { authorization: basic('mcp-client', 'mcp-client-secret') },
      ),
    )
    expect(await introspection.json()).toEqual({ active: false })
    // Even a resource server whose audience is the target issuer: the typ is not at+jwt.
    const rs = createResourceServer({
      issuer: ISSUER,
      audience: MCP_AS,
      fetch: (url, init) => ctx.service.fetch(new Request(url, init)),
    })
    const verified = await rs.verify(
      new Request('https://mcp.example.test/mcp', { headers: { authorization: `Bearer ${jag}` } }),
    )
    expect(verified).toMatchObject({ ok: false, error: 'invalid_token' })
    // Its own access token, by contrast, passes the same helper (for its audience).
    const own = createResourceServer({
      issuer: ISSUER,
      audience: String(decodeJwt(user.access_token).aud),
      fetch: (url, init) => ctx.service.fetch(new Request(url, init)),
    })
    const ok = await own.verify(
      new Request('https://api.example.test/', { headers: { authorization: `Bearer ${user.access_token}` } }),
    )
    expect(ok.ok).toBe(true)
  })

  it('#45 IdP: with no audiences configured every ID-JAG request is invalid_target', async () => {
    const ctx = await start({ identityAssertion: { audiences: [] } })
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    await refused(ctx, idJagParams(user.id_token), 'invalid_target')
  })
})
