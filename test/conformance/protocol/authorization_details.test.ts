/**
 * #41 Rich Authorization Requests (RFC 9396) over HTTP with oauth4webapi: `authorization_details`
 * at the authorization endpoint and PAR, the consent page that always asks for them, the granted
 * details in the token response (§7), the JWT access token (§9.1) and introspection (§9.2), kept
 * by the code, refresh token and grant records (on every store the machine has: memory, and
 * PostgreSQL, Redis, SQLite with their variables and runtimes), narrowed at the token endpoint (§6.1, §7.2), and every `invalid_authorization_details`.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import * as v from 'valibot'
import { afterEach, describe, expect, it } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import type { GatehouseEvent, TokenServiceOptions } from '../../../src/index.ts'
import type { Page } from '../../helpers/browser.ts'
import { authorizationUrl, expectErrorRedirect, setup } from '../../helpers/flow.ts'
import { requestUriUrl } from '../../helpers/par.ts'
import { ISSUER, RU, basic, clock, form } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const PAYMENT = {
  type: 'payment_initiation',
  actions: ['initiate'],
  locations: ['https://bank.example.com/payments'],
  instructedAmount: { currency: 'EUR', amount: '123.50' },
  creditorName: 'Merchant <A> & "Sons"',
  creditorAccount: { iban: 'DE02100100109307118603' },
  remittanceInformation: ['Ref <script>alert(1)</script>', 42, true, null],
}
const ACCOUNTS = { type: 'account_information', actions: ['list_accounts', 'read_balances'] }
const TYPES = ['payment_initiation', 'account_information', 'customer_information']

/** An implicit-consent confidential client that may request two of the service's three types. */
const PAYER: ClientRegistration = {
  clientId: 'payer',
  clientSecret: 'payer-secret',
  displayName: 'Payer',
  permissions: [
    'ept:authorization',
    'ept:token',
    'ept:introspection',
    'gt:authorization_code',
    'gt:refresh_token',
    'rst:code',
    'scp:openid',
    'scp:profile',
  ],
  redirectUris: [RU],
  authorizationDetailsTypes: ['payment_initiation', 'account_information'],
}
const payer: oauth.Client = { client_id: 'payer' }
const payerAuth = oauth.ClientSecretBasic('payer-secret')

describe.each(STORES)('#41 RAR on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start(options: Partial<TokenServiceOptions> = {}) {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const events: GatehouseEvent[] = []
    const ctx = await setup({
      store: opened.store,
      now: time.now,
      authorizationDetailsTypes: TYPES,
      onEvent: (event) => void events.push(event),
      ...options,
    })
    await ctx.service.clients.ensure(PAYER)
    return { ...ctx, store: opened.store, time, events }
  }
  type Ctx = Awaited<ReturnType<typeof start>>

  async function request(details: unknown, extra: Record<string, string> = {}) {
    const value = typeof details === 'string' ? details : JSON.stringify(details)
    return authorizationUrl({ authorization_endpoint: `${ISSUER}/connect/authorize` } as oauth.AuthorizationServer, {
      clientId: 'payer',
      scope: 'openid offline_access',
      nonce: null,
      extra: { authorization_details: value, ...extra },
    })
  }

  /** Navigates to `url`, signs in if asked, and returns the consent page shown after it (or the callback). */
  async function untilConsent(ctx: Ctx, url: URL): Promise<{ page?: Page; callback?: URL }> {
    const first = await ctx.browser.navigate(url.href)
    if (first.callback || !first.page?.html.includes('name="password"')) return first
    return ctx.browser.signIn(first.page, 'alice', 'alice-password')
  }

  /** The code flow for `details` through the consent page; returns the token response. */
  async function codeFlow(ctx: Ctx, details: unknown[], tokenDetails?: unknown[]) {
    const req = await request(details)
    const shown = await untilConsent(ctx, req.url)
    expect(shown.page?.html, 'the consent page').toContain('data-detail-type="payment_initiation"')
    const decided = await ctx.browser.submit(shown.page as Page, { decision: 'allow' })
    return redeem(ctx, decided.callback as URL, req, tokenDetails)
  }

  async function redeem(
    ctx: Ctx,
    callback: URL,
    req: Awaited<ReturnType<typeof request>>,
    tokenDetails?: unknown[],
  ): Promise<Response> {
    const params = oauth.validateAuthResponse(ctx.as, payer, callback, req.state as string)
    return oauth.authorizationCodeGrantRequest(ctx.as, payer, payerAuth, params, RU, req.verifier, {
      ...ctx.opts,
      ...(tokenDetails ? { additionalParameters: { authorization_details: JSON.stringify(tokenDetails) } } : {}),
    })
  }

  it('#41 RAR through the code flow: consent even for an implicit client, details in the token response, the JWT claim, introspection and the grant and refresh records', async () => {
    const ctx = await start()
    const response = await codeFlow(ctx, [PAYMENT, ACCOUNTS])
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, payer, response)
    expect(tokens.authorization_details).toEqual([PAYMENT, ACCOUNTS])
    const claims = decodeJwt(tokens.access_token) as { authorization_details?: unknown; gid: string }
    expect(claims.authorization_details).toEqual([PAYMENT, ACCOUNTS])
    const introspected = await oauth.introspectionRequest(ctx.as, payer, payerAuth, tokens.access_token, ctx.opts)
    expect(await introspected.json()).toMatchObject({ active: true, authorization_details: [PAYMENT, ACCOUNTS] })
    const refreshIntrospected = await oauth.introspectionRequest(
      ctx.as,
      payer,
      payerAuth,
      tokens.refresh_token as string,
      ctx.opts,
    )
    expect(await refreshIntrospected.json()).toMatchObject({ active: true, authorization_details: [PAYMENT, ACCOUNTS] })
    expect((await ctx.store.grants.get(claims.gid, ctx.time.now()))?.authorizationDetails).toEqual([PAYMENT, ACCOUNTS])
    const hash = Buffer.from(
      await crypto.subtle.digest('SHA-256', new TextEncoder().encode(tokens.refresh_token as string)),
    ).toString('base64url')
    expect((await ctx.store.refreshTokens.get(hash))?.authorizationDetails).toEqual([PAYMENT, ACCOUNTS])
    expect(ctx.events.find((event) => event.type === 'token.issued')).toMatchObject({
      authorizationDetailsTypes: ['payment_initiation', 'account_information'],
    })
  })

  it('#41 RAR refresh keeps the details, narrows to a requested subset, and refuses a superset', async () => {
    const ctx = await start()
    const tokens = await oauth.processAuthorizationCodeResponse(ctx.as, payer, await codeFlow(ctx, [PAYMENT, ACCOUNTS]))
    const refresh = (token: string, details?: unknown[]) =>
      oauth.refreshTokenGrantRequest(ctx.as, payer, payerAuth, token, {
        ...ctx.opts,
        ...(details ? { additionalParameters: { authorization_details: JSON.stringify(details) } } : {}),
      })
    // A subset, with the members in another order: the same detail.
    const reordered = Object.fromEntries(Object.entries(ACCOUNTS).reverse())
    const narrowed = await oauth.processRefreshTokenResponse(
      ctx.as,
      payer,
      await refresh(tokens.refresh_token as string, [reordered]),
    )
    expect(narrowed.authorization_details).toEqual([reordered])
    expect((decodeJwt(narrowed.access_token) as { authorization_details: unknown }).authorization_details).toEqual([
      reordered,
    ])
    expect(ctx.events.filter((event) => event.type === 'token.refreshed').at(-1)).toMatchObject({
      authorizationDetailsTypes: ['account_information'],
    })
    // The grant keeps both: the next refresh without the parameter has both again.
    const full = await oauth.processRefreshTokenResponse(ctx.as, payer, await refresh(narrowed.refresh_token as string))
    expect(full.authorization_details).toEqual([PAYMENT, ACCOUNTS])
    // A detail that was not granted (a changed amount) is a superset.
    const changed = { ...PAYMENT, instructedAmount: { currency: 'EUR', amount: '9999.00' } }
    const refused = await refresh(full.refresh_token as string, [changed])
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: 'invalid_authorization_details' })
  })

  it('#41 RAR the code redemption may narrow to a subset; a superset is invalid_authorization_details (400)', async () => {
    const ctx = await start()
    const narrowed = await oauth.processAuthorizationCodeResponse(
      ctx.as,
      payer,
      await codeFlow(ctx, [PAYMENT, ACCOUNTS], [PAYMENT]),
    )
    expect(narrowed.authorization_details).toEqual([PAYMENT])
    // Another payment (not approved before: the consent page again), redeemed asking for more.
    const other = { ...PAYMENT, creditorName: 'Other' }
    const refused = await codeFlow(ctx, [other], [other, ACCOUNTS])
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: 'invalid_authorization_details' })
  })

  it('#41 RAR details ask consent every time, even the same ones approved before in the session (a new request is a new grant)', async () => {
    const ctx = await start()
    await codeFlow(ctx, [PAYMENT])
    const again = await untilConsent(ctx, (await request([PAYMENT])).url)
    expect(again.callback).toBeUndefined()
    expect(again.page?.html).toContain('data-detail-type="payment_initiation"')
    const other = await untilConsent(ctx, (await request([PAYMENT, ACCOUNTS])).url)
    expect(other.page?.html).toContain('data-detail-type="account_information"')
    // prompt=none with details, approved before or not: consent_required.
    for (const details of [[PAYMENT], [ACCOUNTS]]) {
      const silent = await request(details, { prompt: 'none' })
      const answered = await ctx.browser.navigate(silent.url.href)
      expectErrorRedirect(answered.callback as URL, RU, 'consent_required', silent.state)
    }
  })

  it('#41 RAR through PAR: the pushed details are consented and granted; bad ones are a 400 at the push', async () => {
    const ctx = await start()
    const req = await request([PAYMENT])
    const params = new URLSearchParams(req.url.search)
    const pushed = await oauth.processPushedAuthorizationResponse(
      ctx.as,
      payer,
      await oauth.pushedAuthorizationRequest(ctx.as, payer, payerAuth, params, ctx.opts),
    )
    const shown = await untilConsent(ctx, requestUriUrl(ctx.as, 'payer', pushed.request_uri))
    expect(shown.page?.html).toContain('data-detail-type="payment_initiation"')
    const decided = await ctx.browser.submit(shown.page as Page, { decision: 'allow' })
    const tokens = await oauth.processAuthorizationCodeResponse(
      ctx.as,
      payer,
      await redeem(ctx, decided.callback as URL, req),
    )
    expect(tokens.authorization_details).toEqual([PAYMENT])
    params.set('authorization_details', JSON.stringify([{ type: 'customer_information' }]))
    const refused = await ctx.service.fetch(
      form(`${ISSUER}/connect/par`, Object.fromEntries(params), { authorization: basic('payer', 'payer-secret') }),
    )
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: 'invalid_authorization_details' })
  })
})

describe('#41 RAR errors of the contract', () => {
  async function start(options: Partial<TokenServiceOptions> = {}) {
    const ctx = await setup({ authorizationDetailsTypes: TYPES, ...options })
    await ctx.service.clients.ensure(PAYER)
    return ctx
  }

  const CASES: Array<[string, string]> = [
    ['malformed JSON', '[{"type":"payment_initiation"'],
    ['a non-array', JSON.stringify({ type: 'payment_initiation' })],
    ['an empty array', '[]'],
    ['an element that is not an object', JSON.stringify(['payment_initiation'])],
    ['an element without type', JSON.stringify([{ actions: ['initiate'] }])],
    ['a type that is not a string', JSON.stringify([{ type: 7 }])],
    ['a type the service does not know', JSON.stringify([{ type: 'unknown_type' }])],
    ['a type the client may not use', JSON.stringify([{ type: 'customer_information' }])],
    ['a common field of the wrong shape', JSON.stringify([{ type: 'payment_initiation', actions: 'initiate' }])],
    ['more than 16 elements', JSON.stringify(Array.from({ length: 17 }, () => ACCOUNTS))],
    ['nesting deeper than 8 levels', JSON.stringify([{ type: 'account_information', x: [[[[[[[[['deep']]]]]]]]] }])],
  ]

  it.each(CASES)(
    '#41 RAR %s at the authorization endpoint is an error redirect invalid_authorization_details',
    async (_, value) => {
      const ctx = await start()
      const req = await authorizationUrl(ctx.as, {
        clientId: 'payer',
        scope: 'openid',
        extra: { authorization_details: value },
      })
      const answered = await ctx.browser.navigate(req.url.href)
      expectErrorRedirect(answered.callback as URL, RU, 'invalid_authorization_details', req.state)
    },
  )

  it('#41 RAR a service without authorizationDetailsTypes refuses every detail and lists none in discovery', async () => {
    const ctx = await setup()
    await ctx.service.clients.ensure(PAYER)
    expect(ctx.as.authorization_details_types_supported).toBeUndefined()
    const req = await authorizationUrl(ctx.as, {
      clientId: 'payer',
      scope: 'openid',
      extra: { authorization_details: JSON.stringify([ACCOUNTS]) },
    })
    const answered = await ctx.browser.navigate(req.url.href)
    expectErrorRedirect(answered.callback as URL, RU, 'invalid_authorization_details', req.state)
  })

  it('#41 RAR both discovery documents list authorization_details_types_supported', async () => {
    const ctx = await start()
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const document = await (await ctx.service.fetch(new Request(`${ISSUER}${path}`))).json()
      expect(document.authorization_details_types_supported).toEqual(TYPES)
    }
  })

  it('#41 RAR a host validate hook (a valibot schema) refuses a detail; describe titles it on the consent page', async () => {
    const ctx = await start({
      authorizationDetails: {
        types: {
          payment_initiation: {
            validate: v.looseObject({
              type: v.literal('payment_initiation'),
              instructedAmount: v.object({ currency: v.picklist(['EUR']), amount: v.string() }),
            }),
            describe: (detail) => `Pay ${(detail.instructedAmount as { amount: string }).amount} <EUR>`,
          },
          account_information: { validate: (detail) => Array.isArray(detail.actions) },
        },
      },
    })
    const bad = await authorizationUrl(ctx.as, {
      clientId: 'payer',
      scope: 'openid',
      extra: { authorization_details: JSON.stringify([{ ...PAYMENT, instructedAmount: { currency: 'USD' } }]) },
    })
    const refused = await ctx.browser.navigate(bad.url.href)
    expectErrorRedirect(refused.callback as URL, RU, 'invalid_authorization_details', bad.state)
    const noActions = await authorizationUrl(ctx.as, {
      clientId: 'payer',
      scope: 'openid',
      extra: { authorization_details: JSON.stringify([{ type: 'account_information' }]) },
    })
    const refusedToo = await ctx.browser.navigate(noActions.url.href)
    expectErrorRedirect(refusedToo.callback as URL, RU, 'invalid_authorization_details', noActions.state)
    const good = await authorizationUrl(ctx.as, {
      clientId: 'payer',
      scope: 'openid',
      extra: { authorization_details: JSON.stringify([PAYMENT]) },
    })
    const first = await ctx.browser.navigate(good.url.href)
    const consent = await ctx.browser.signIn(first.page as Page, 'alice', 'alice-password')
    expect(consent.page?.html).toContain('Pay 123.50 &lt;EUR&gt;')
  })

  it('#41 RAR the token endpoint refuses malformed details at the code redemption with 400', async () => {
    const ctx = await start()
    const req = await authorizationUrl(ctx.as, {
      clientId: 'payer',
      scope: 'openid',
      extra: { authorization_details: JSON.stringify([ACCOUNTS]) },
    })
    const first = await ctx.browser.navigate(req.url.href)
    const consent = await ctx.browser.signIn(first.page as Page, 'alice', 'alice-password')
    const decided = await ctx.browser.submit(consent.page as Page, { decision: 'allow' })
    const params = oauth.validateAuthResponse(ctx.as, payer, decided.callback as URL, req.state as string)
    const response = await oauth.authorizationCodeGrantRequest(ctx.as, payer, payerAuth, params, RU, req.verifier, {
      ...ctx.opts,
      additionalParameters: { authorization_details: 'not json' },
    })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_authorization_details' })
  })

  it('#41 RAR options: a hook for a type not in authorizationDetailsTypes fails at construction', async () => {
    await expect(
      setup({ authorizationDetailsTypes: ['a'], authorizationDetails: { types: { b: { describe: () => 'b' } } } }),
    ).rejects.toThrow(/authorizationDetails\.types: "b" is not one of authorizationDetailsTypes/)
    await expect(setup({ authorizationDetailsTypes: [''] })).rejects.toThrow(/authorizationDetailsTypes/)
  })
})
