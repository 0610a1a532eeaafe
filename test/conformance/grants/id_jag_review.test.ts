/**
 * #45 review, identity provider side: each audience entry is bound to the local client that may
 * ask for it (`client`), so no other client of the same users gets an ID-JAG naming the MCP
 * client at the target (item 1); the host's `tokenExchange.authorize` hook decides ID-JAG
 * requests too, with `identityAssertion.authorize` when both are set (item 2). Over HTTP, on
 * memory and PostgreSQL. docs/security.md "ID-JAGs (identity provider side)" is the threat model.
 */
import { decodeJwt } from 'jose'
import { describe, expect, it } from 'vitest'
import type { TokenExchangeRequest } from '../../../src/index.ts'
import {
  AUDIENCES,
  type Ctx,
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

describe.each(ID_JAG_STORES)('#45 review: ID-JAG issuance policy ($name store)', (kind) => {
  const start = startPerTest(kind)
  async function refused(ctx: Ctx, params: Record<string, string>, error: string, clientId?: string) {
    const { status, body } = await answer(await exchangeRequest(ctx, params, clientId))
    expect({ status, error: body.error }).toEqual({ status: 400, error })
    return body
  }

  it('#45 review item 1: another local client gets no ID-JAG from an audience entry of the MCP client (invalid_target, RFC 8693 §2.2.2)', async () => {
    const ctx = await start()
    const other = await signInTo(ctx, 'other-app', 'openid email')
    // other-app may use token exchange and its ID token is its own, but the entry is mcp-client's.
    const body = await refused(ctx, idJagParams(other.id_token), 'invalid_target', 'other-app')
    // The same answer as for an audience nobody configured: no hint that the target exists.
    const unknown = await refused(
      ctx,
      idJagParams(other.id_token, 'https://unknown-as.example.test'),
      'invalid_target',
      'other-app',
    )
    expect(body.error_description).toBe(unknown.error_description)
    // The MCP client itself still gets its ID-JAG, naming its id at the target.
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    const own = await answer(await exchangeRequest(ctx, idJagParams(user.id_token)))
    expect(own.status).toBe(200)
    expect(decodeJwt(own.body.access_token as string).client_id).toBe('mcp-client-at-mcp')
  })

  it('#45 review item 1: two local clients share a target issuer, each ID-JAG naming its own client there with its own scopes', async () => {
    const ctx = await start({
      identityAssertion: {
        audiences: [
          ...AUDIENCES,
          { issuer: MCP_AS, client: 'other-app', clientId: 'other-app-at-mcp', scopes: ['tools.read'] },
        ],
      },
    })
    const other = await signInTo(ctx, 'other-app', 'openid')
    const mine = await answer(await exchangeRequest(ctx, idJagParams(other.id_token), 'other-app'))
    expect(mine.status).toBe(200)
    expect(decodeJwt(mine.body.access_token as string)).toMatchObject({
      aud: MCP_AS,
      client_id: 'other-app-at-mcp',
      scope: 'tools.read',
    })
    // other-app's entry lists no resources and only tools.read: mcp-client's do not carry over.
    await refused(ctx, idJagParams(other.id_token, MCP_AS, { scope: 'tools.call' }), 'invalid_scope', 'other-app')
    // other-app has no entry for the wiki.
    await refused(ctx, idJagParams(other.id_token, WIKI_AS), 'invalid_target', 'other-app')
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    const theirs = await answer(await exchangeRequest(ctx, idJagParams(user.id_token)))
    expect(decodeJwt(theirs.body.access_token as string).client_id).toBe('mcp-client-at-mcp')
  })

  it('#45 review item 2: tokenExchange.authorize sees an ID-JAG request (subject, client, audience the target issuer, scopes, resource, no actor); false is access_denied', async () => {
    const seen: TokenExchangeRequest[] = []
    const ctx = await start({
      tokenExchange: {
        authorize: (request) => {
          seen.push(request)
          return request.audience[0] !== WIKI_AS
        },
      },
    })
    const user = await signInTo(ctx, 'mcp-client', 'openid email')
    const body = await refused(ctx, idJagParams(user.id_token, WIKI_AS), 'access_denied')
    expect(body.error_description).toBe('the ID-JAG was refused by policy')
    const allowed = await answer(
      await exchangeRequest(ctx, idJagParams(user.id_token, MCP_AS, { scope: 'tools.call', resource: MCP_RESOURCE })),
    )
    expect(allowed.status).toBe(200)
    expect(seen).toHaveLength(2)
    expect(seen[0]).toEqual({
      requestedTokenType: 'id-jag',
      clientId: 'mcp-client',
      subject: { sub: 'user-1', tokenType: 'id_token', clientId: 'mcp-client', scope: ['openid', 'email'] },
      act: { sub: 'mcp-client' },
      scope: ['wiki.read'],
      audience: [WIKI_AS],
    })
    expect(seen[1]).toMatchObject({ scope: ['tools.call'], audience: [MCP_AS], resource: MCP_RESOURCE })
    expect(seen[1]?.actor).toBeUndefined()
  })

  it('#45 review item 2: with both hooks each must allow; tokenExchange.authorize narrowing applies to the ID-JAG', async () => {
    const ctx = await start({
      tokenExchange: {
        authorize: ({ requestedTokenType, audience, scope }) => {
          if (requestedTokenType !== 'id-jag') return true
          if (audience.includes(WIKI_AS)) return false
          return scope.includes('tools.call') ? { scope: ['tools.read'] } : { audience: ['https://elsewhere.test'] }
        },
      },
      identityAssertion: { authorize: ({ scopes }) => !scopes.includes('tools.read') || scopes.length === 1 },
    })
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    // tokenExchange refuses, identityAssertion would allow.
    await refused(ctx, idJagParams(user.id_token, WIKI_AS), 'access_denied')
    // tokenExchange narrows to tools.read; identityAssertion sees that and allows it.
    const narrowed = await answer(await exchangeRequest(ctx, idJagParams(user.id_token)))
    expect(narrowed.status).toBe(200)
    expect(decodeJwt(narrowed.body.access_token as string).scope).toBe('tools.read')
    // tokenExchange narrows the audience away from the target: invalid_target.
    await refused(ctx, idJagParams(user.id_token, MCP_AS, { scope: 'tools.read' }), 'invalid_target')
  })

  it('#45 review item 2: tokenExchange.authorize allows, identityAssertion.authorize refuses: access_denied', async () => {
    const ctx = await start({
      tokenExchange: { authorize: () => true },
      identityAssertion: { authorize: () => false },
    })
    const user = await signInTo(ctx, 'mcp-client', 'openid')
    await refused(ctx, idJagParams(user.id_token), 'access_denied')
  })
})
