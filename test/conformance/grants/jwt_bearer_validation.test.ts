/**
 * #45 resource authorization server side: every validation rule of an ID-JAG presented with the
 * jwt-bearer grant (RFC 7523 §3, draft-ietf-oauth-identity-assertion-authz-grant §4.3), each
 * refusal `invalid_grant` (RFC 7521 §4.1.1) whose description names the rule and never echoes the
 * token; the signing keys inline and at a jwksUri on 127.0.0.1 (refetched once for an unknown kid);
 * the jti used once, also by concurrent presentations. Runs on memory, and on PostgreSQL / Redis /
 * SQLite where available.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { ISSUER } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import { jwksServer } from '../client_auth/private_key_jwt_fixtures.ts'
import {
  IDP,
  type JagCtx,
  MCP_CLIENT,
  NO_GRANT_CLIENT,
  accessClaims,
  idpKey,
  jagService,
  redeem,
  signIdJag,
} from './jwt_bearer_fixtures.ts'

describe.each(STORES)('#45 jwt-bearer grant with an ID-JAG: validation ($name store)', (kind) => {
  let opened: TestStore | undefined
  let closing: Array<() => Promise<void>> = []
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
    for (const close of closing) await close()
    closing = []
  })

  async function start(setup: Parameters<typeof jagService>[1] = {}): Promise<JagCtx> {
    opened = await kind.create(() => Math.floor(Date.now() / 1000))
    return jagService(opened.store, setup)
  }

  /** Refused as invalid_grant with a description matching `rule`, never containing the assertion. */
  async function expectRefused(ctx: JagCtx, assertion: string, rule: RegExp, params: Record<string, string> = {}) {
    const { status, body } = await redeem(ctx, assertion, params)
    expect({ status, error: body.error }).toEqual({ status: 400, error: 'invalid_grant' })
    expect(String(body.error_description)).toMatch(rule)
    for (const part of assertion.split('.')) expect(String(body.error_description)).not.toContain(part)
  }

  it('#45 a valid ID-JAG: an access token for alice (email mapping), aud the resource, no refresh token; the audit event names the issuer', async () => {
    const ctx = await start()
    const { status, body } = await redeem(ctx, await signIdJag(ctx.key, ctx.time.now()))
    expect(status).toBe(200)
    expect(body).toMatchObject({ token_type: 'Bearer', scope: 'mcp:tools' })
    expect(body.refresh_token).toBeUndefined()
    expect(body.id_token).toBeUndefined()
    const claims = accessClaims(body)
    expect(claims).toMatchObject({ sub: 'user-1', aud: 'https://mcp.example.test/mcp', client_id: 'mcp-client' })
    expect(claims.auth_time).toBe(ctx.time.now() - 60)
    const event = ctx.events.find((e) => e.type === 'token.issued')
    expect(event).toMatchObject({ grantType: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertionIssuer: IDP })
    expect(event).toMatchObject({ sub: 'user-1', clientId: 'mcp-client', jti: claims.jti })
  })

  it.each([
    ['JWT', { typ: 'JWT' }],
    ['absent', { typ: undefined }],
    ['an ID token (no typ)', { typ: undefined }],
    ['a logout token', { typ: 'logout+jwt' }],
    ['an access token', { typ: 'at+jwt' }],
    ['a client assertion', { typ: 'client-authentication+jwt' }],
  ])('#45 typ %s is not an ID-JAG → invalid_grant', async (_name, header) => {
    const ctx = await start()
    await expectRefused(ctx, await signIdJag(ctx.key, ctx.time.now(), {}, header), /typ must be oauth-id-jag\+jwt/)
  })

  it('#45 an untrusted iss → invalid_grant (even signed with the trusted key)', async () => {
    const ctx = await start()
    const assertion = await signIdJag(ctx.key, ctx.time.now(), { iss: 'https://evil.example.test' })
    await expectRefused(ctx, assertion, /issuer is not trusted/)
  })

  it("#45 a bad signature (another key under the trusted key's kid) → invalid_grant", async () => {
    const ctx = await start()
    const forger = await idpKey(ctx.key.kid)
    await expectRefused(ctx, await signIdJag(forger, ctx.time.now()), /signature does not verify/)
  })

  it('#45 an alg the issuer may not use → invalid_grant', async () => {
    const key = await idpKey()
    const ctx = await start({
      key,
      issuers: [{ issuer: IDP, jwks: { keys: [key.jwk as never] }, algorithms: ['RS256'] }],
    })
    await expectRefused(ctx, await signIdJag(ctx.key, ctx.time.now()), /alg is not one its issuer may use/)
  })

  it('#45 jwksUri: an unknown kid refetches the key set once; a kid still unknown → invalid_grant', async () => {
    const first = await idpKey()
    const second = await idpKey()
    const server = await jwksServer([first.jwk])
    closing.push(server.close)
    const ctx = await start({ key: first, issuers: [{ issuer: IDP, jwksUri: server.url }] })
    expect((await redeem(ctx, await signIdJag(first, ctx.time.now()))).status).toBe(200)
    expect(server.fetches).toBe(1)
    // The identity provider rotates: the new kid is fetched (the last fetch is 30 s old).
    server.serve([first.jwk, second.jwk])
    ctx.time.advance(31)
    expect((await redeem(ctx, await signIdJag(second, ctx.time.now()))).status).toBe(200)
    expect(server.fetches).toBe(2)
    // A made-up kid right after: no fetch within 30 s, refused.
    const stranger = await idpKey()
    await expectRefused(ctx, await signIdJag(stranger, ctx.time.now()), /no key of the assertion's issuer matches/)
    expect(server.fetches).toBe(2)
  })

  it('#45 aud other than this issuer → invalid_grant', async () => {
    const ctx = await start()
    for (const aud of ['https://other-as.example.test', `${ISSUER}/connect/token`]) {
      await expectRefused(
        ctx,
        await signIdJag(ctx.key, ctx.time.now(), { aud }),
        /audience is not this authorization server/,
      )
    }
  })

  it('#45 a client_id of another client, or none → invalid_grant', async () => {
    const ctx = await start()
    const other = await signIdJag(ctx.key, ctx.time.now(), { client_id: 'web' })
    await expectRefused(ctx, other, /issued to another client/)
    await expectRefused(ctx, await signIdJag(ctx.key, ctx.time.now(), { client_id: undefined }), /lacks the client_id/)
  })

  it('#45 expired, or iat in the future (beyond the skew), or no iat → invalid_grant', async () => {
    const ctx = await start()
    const now = ctx.time.now()
    await expectRefused(ctx, await signIdJag(ctx.key, now, { iat: now - 400, exp: now - 60 }), /has expired/)
    await expectRefused(ctx, await signIdJag(ctx.key, now, { iat: now + 120, exp: now + 400 }), /iat is in the future/)
    await expectRefused(ctx, await signIdJag(ctx.key, now, { iat: undefined }), /lacks the iat claim/)
    // Within the skew: accepted.
    expect((await redeem(ctx, await signIdJag(ctx.key, now, { iat: now + 10 }))).status).toBe(200)
  })

  it('#45 a replayed jti → invalid_grant; a refusal before it leaves the ID-JAG usable', async () => {
    const ctx = await start()
    const assertion = await signIdJag(ctx.key, ctx.time.now())
    expect((await redeem(ctx, assertion, { scope: 'mcp:admin' })).body.error).toBe('invalid_scope')
    expect((await redeem(ctx, assertion)).status).toBe(200)
    await expectRefused(ctx, assertion, /already been used/)
  })

  it('#45 eight concurrent presentations of one ID-JAG: exactly one token', async () => {
    const ctx = await start()
    const assertion = await signIdJag(ctx.key, ctx.time.now())
    const all = await Promise.all(Array.from({ length: 8 }, () => redeem(ctx, assertion)))
    expect(all.filter((r) => r.status === 200)).toHaveLength(1)
    expect(all.filter((r) => r.body.error === 'invalid_grant')).toHaveLength(7)
  })

  it("#45 a resource that is not this server's → invalid_grant; a requested resource outside the ID-JAG's → invalid_target", async () => {
    const ctx = await start()
    const foreign = await signIdJag(ctx.key, ctx.time.now(), { resource: 'https://elsewhere.example.test/mcp' })
    await expectRefused(ctx, foreign, /resource this server does not serve/)
    const { body } = await redeem(ctx, await signIdJag(ctx.key, ctx.time.now()), { resource: 'api1' })
    expect(body.error).toBe('invalid_target')
  })

  it('#45 not a JWT, or no assertion → invalid_grant / invalid_request', async () => {
    const ctx = await start()
    await expectRefused(ctx, 'not-a-jwt', /not a signed JWT/)
    const response = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${btoa(`${MCP_CLIENT.clientId}:${MCP_CLIENT.clientSecret}`)}`,
        },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer' }),
      }),
    )
    expect(((await response.json()) as { error: string }).error).toBe('invalid_request')
  })

  it('#45 a public client (client_id alone) with the permission redeems its ID-JAG; a DPoP proof binds the token', async () => {
    const ctx = await start()
    await ctx.service.clients.ensure({
      clientId: 'public-mcp',
      permissions: ['ept:token', 'gt:urn:ietf:params:oauth:grant-type:jwt-bearer', 'scp:mcp:tools'],
    })
    const client: oauth.Client = { client_id: 'public-mcp' }
    const assertion = await signIdJag(ctx.key, ctx.time.now(), { client_id: 'public-mcp' })
    const DPoP = oauth.DPoP(client, await oauth.generateKeyPair('ES256'))
    const response = await oauth.genericTokenEndpointRequest(
      ctx.as,
      client,
      oauth.None(),
      'urn:ietf:params:oauth:grant-type:jwt-bearer',
      { assertion },
      { ...ctx.opts, DPoP },
    )
    const body = await oauth.processGenericTokenEndpointResponse(ctx.as, client, response)
    expect(body.token_type).toBe('dpop')
    expect(accessClaims(body as Record<string, unknown>)).toMatchObject({ sub: 'user-1', client_id: 'public-mcp' })
    expect(accessClaims(body as Record<string, unknown>).cnf).toBeDefined()
  })

  it('#45 a client without the jwt-bearer permission → unauthorized_client', async () => {
    const ctx = await start()
    const assertion = await signIdJag(ctx.key, ctx.time.now(), { client_id: NO_GRANT_CLIENT.clientId })
    const { status, body } = await redeem(ctx, assertion, {}, NO_GRANT_CLIENT)
    expect({ status, error: body.error }).toEqual({ status: 400, error: 'unauthorized_client' })
  })
})
