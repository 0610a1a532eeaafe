/**
 * #41 RAR (RFC 9396) around the flow: a client's `authorization_details_types` from dynamic
 * registration (§10, cut to the service's list), the configuration file key, the host's
 * interaction hook (it sees the details; a sign-in without consent still asks for them), and token
 * exchange (RFC 8693), which never carries details: an exchanged token has none.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { parseConfigFile } from '../../../src/config/file.ts'
import type { PendingInteraction } from '../../../src/index.ts'
import { authorizationUrl, setup } from '../../helpers/flow.ts'
import { ISSUER, RU } from '../../helpers/service.ts'
import { AT, EXCHANGE, GRANT } from '../grants/token_exchange_fixtures.ts'

const TYPES = ['payment_initiation', 'account_information']
const PAYMENT = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '10.00' } }

const PAYER: ClientRegistration = {
  clientId: 'payer',
  clientSecret: 'payer-secret',
  permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid', 'scp:api1'],
  redirectUris: [RU],
  authorizationDetailsTypes: ['payment_initiation'],
}
const payer: oauth.Client = { client_id: 'payer' }
const payerAuth = oauth.ClientSecretBasic('payer-secret')

describe('#41 RAR client metadata', () => {
  it('#41 RAR dynamic registration keeps authorization_details_types cut to the service’s list, and the client may use them', async () => {
    const ctx = await setup({
      scopes: ['mcp:tools'],
      authorizationDetailsTypes: TYPES,
      dynamicClientRegistration: { scopes: ['mcp:tools', 'openid'] },
    })
    const register = (body: unknown) =>
      ctx.service.fetch(
        new Request(`${ISSUER}/connect/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
        { address: '203.0.113.9' },
      )
    const base = { redirect_uris: [RU], token_endpoint_auth_method: 'none', scope: 'openid mcp:tools' }
    const response = await register({ ...base, authorization_details_types: ['payment_initiation', 'wire_transfer'] })
    expect(response.status).toBe(201)
    const info = (await response.json()) as { client_id: string; authorization_details_types?: string[] }
    expect(info.authorization_details_types).toEqual(['payment_initiation'])
    const record = await ctx.service.clients.find(info.client_id)
    expect(record?.authorizationDetailsTypes).toEqual(['payment_initiation'])
    // The registered type is usable: the request reaches the sign-in page, not an error redirect.
    const allowed = await authorizationUrl(ctx.as, {
      clientId: info.client_id,
      scope: 'openid',
      extra: { authorization_details: JSON.stringify([PAYMENT]) },
    })
    expect((await ctx.browser.navigate(allowed.url.href)).page?.html).toContain('name="password"')
    const refused = await authorizationUrl(ctx.as, {
      clientId: info.client_id,
      scope: 'openid',
      extra: { authorization_details: JSON.stringify([{ type: 'account_information' }]) },
    })
    const answered = await ctx.browser.navigate(refused.url.href)
    expect(answered.page?.html ?? answered.callback?.searchParams.get('error')).toMatch(/invalid_authorization_details/)
    // Malformed metadata is invalid_client_metadata.
    const bad = await register({ ...base, authorization_details_types: 'payment_initiation' })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: 'invalid_client_metadata' })
  })

  it('#41 RAR a client id metadata document’s authorization_details_types are cut to the service’s list', async () => {
    const clientId = 'https://tool.example.com/client.json'
    const document = {
      client_id: clientId,
      client_name: 'Tool',
      redirect_uris: [RU],
      token_endpoint_auth_method: 'none',
      authorization_details_types: ['account_information', 'wire_transfer'],
    }
    const ctx = await setup({
      authorizationDetailsTypes: TYPES,
      allowUnpinnedHostNames: true,
      clientIdMetadataDocuments: {
        scopes: ['openid'],
        fetch: async () => new Response(JSON.stringify(document), { headers: { 'content-type': 'application/json' } }),
      },
    })
    const attempt = async (type: string) => {
      const request = await authorizationUrl(ctx.as, {
        clientId,
        scope: 'openid',
        extra: { authorization_details: JSON.stringify([{ type }]) },
      })
      return ctx.browser.navigate(request.url.href)
    }
    // The document's type the service knows: on to the sign-in page.
    expect((await attempt('account_information')).page?.html).toContain('name="password"')
    // A type of the service the document did not list: refused (a page: no redirect before consent, RFC 9700 §4.11.2).
    const refused = await attempt('payment_initiation')
    expect(refused.page?.html ?? refused.callback?.href).toMatch(/invalid_authorization_details/)
  })

  it('#41 RAR the configuration file takes authorizationDetailsTypes, and clients their authorizationDetailsTypes', () => {
    const file = parseConfigFile(
      JSON.stringify({
        authorizationDetailsTypes: TYPES,
        clients: [{ clientId: 'c', permissions: ['ept:token'], authorizationDetailsTypes: ['payment_initiation'] }],
      }),
    )
    expect(file.authorizationDetailsTypes).toEqual(TYPES)
    expect(file.clients[0]?.authorizationDetailsTypes).toEqual(['payment_initiation'])
    expect(() => parseConfigFile(JSON.stringify({ authorizationDetailsTypes: 'payment_initiation' }))).toThrow(
      /authorizationDetailsTypes/,
    )
  })
})

describe('#41 RAR the host interaction hook', () => {
  it('#41 RAR the hook sees the details; a sign-in without consent goes on to the consent page, which grants them', async () => {
    const seen: PendingInteraction[] = []
    const ctx = await setup({
      authorizationDetailsTypes: TYPES,
      interaction: (_request, pending) => {
        seen.push(pending)
        return { login: { sub: 'user-1' } }
      },
    })
    await ctx.service.clients.ensure(PAYER)
    const request = await authorizationUrl(ctx.as, {
      clientId: 'payer',
      scope: 'openid',
      nonce: null,
      extra: { authorization_details: JSON.stringify([PAYMENT]) },
    })
    const shown = await ctx.browser.navigate(request.url.href)
    expect(seen[0]?.authorizationDetails).toEqual([PAYMENT])
    expect(shown.page?.html).toContain('data-detail-type="payment_initiation"')
    const decided = await ctx.browser.submit(shown.page as NonNullable<typeof shown.page>, { decision: 'allow' })
    const params = oauth.validateAuthResponse(ctx.as, payer, decided.callback as URL, request.state as string)
    const response = await oauth.authorizationCodeGrantRequest(ctx.as, payer, payerAuth, params, RU, request.verifier, {
      ...ctx.opts,
    })
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, payer, response)
    expect(tokens.authorization_details).toEqual([PAYMENT])
  })
})

describe('#41 RAR token exchange', () => {
  it('#41 RAR an exchanged token never carries authorization details, not even those of its subject', async () => {
    const ctx = await setup({ authorizationDetailsTypes: TYPES })
    await ctx.service.clients.ensure(PAYER)
    await ctx.service.clients.ensure({
      clientId: 'exchanger',
      clientSecret: 'exchanger-secret',
      permissions: ['ept:token', EXCHANGE, 'scp:api1'],
      authorizationDetailsTypes: TYPES,
    })
    const request = await authorizationUrl(ctx.as, {
      clientId: 'payer',
      scope: 'openid api1',
      nonce: null,
      extra: { authorization_details: JSON.stringify([PAYMENT]) },
    })
    const first = await ctx.browser.navigate(request.url.href)
    const consent = await ctx.browser.signIn(first.page as NonNullable<typeof first.page>, 'alice', 'alice-password')
    const decided = await ctx.browser.submit(consent.page as NonNullable<typeof consent.page>, { decision: 'allow' })
    const params = oauth.validateAuthResponse(ctx.as, payer, decided.callback as URL, request.state as string)
    const tokens = await oauth.processAuthorizationCodeResponse(
      ctx.as,
      payer,
      await oauth.authorizationCodeGrantRequest(ctx.as, payer, payerAuth, params, RU, request.verifier, ctx.opts),
    )
    expect(decodeJwt(tokens.access_token).authorization_details).toEqual([PAYMENT])
    const exchangeAs = (extra: Record<string, string> = {}) =>
      oauth.genericTokenEndpointRequest(
        ctx.as,
        { client_id: 'exchanger' },
        oauth.ClientSecretBasic('exchanger-secret'),
        GRANT,
        { subject_token: tokens.access_token, subject_token_type: AT, scope: 'api1', ...extra },
        ctx.opts,
      )
    const response = await exchangeAs()
    const body = (await response.json()) as { access_token: string; authorization_details?: unknown }
    expect(response.status).toBe(200)
    expect(body.authorization_details).toBeUndefined()
    expect(decodeJwt(body.access_token).authorization_details).toBeUndefined()
    // Asking for details at the exchange adds none either: the parameter is not read there.
    const asked = await exchangeAs({ authorization_details: JSON.stringify([PAYMENT]) })
    const askedBody = (await asked.json()) as { access_token: string }
    expect(decodeJwt(askedBody.access_token).authorization_details).toBeUndefined()
  })
})
