/**
 * #27 item 1 (RFC 9700 §4.11.2, open redirector): a client that registered itself (dynamic
 * registration, or a client ID metadata document) may name any https redirect URI, so the
 * authorization endpoint redirects its errors only after the end-user signed in and saw the
 * consent page naming the redirect host. Before that (invalid scope, prompt=none, PKCE, a
 * cancelled sign-in, consent_required with a session) the error is a page on the issuer. A client
 * the host registered keeps its error redirects (RFC 6749 §4.1.2.1, AUTHZ-04).
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { Browser } from '../../helpers/browser.ts'
import { authorizationUrl, authorize, expectErrorRedirect } from '../../helpers/flow.ts'
import { ISSUER, RU, discover, makeService } from '../../helpers/service.ts'

const DOCUMENT = 'https://tool.example.test/oauth/client.json'
/** A host no one reviewed: where a self-registered client's redirects go. */
const TARGET = 'https://attacker.example.test/cb'

async function setup(more: Parameters<typeof makeService>[0] = {}) {
  const { service, clock } = await makeService({
    ...more,
    scopes: ['mcp:tools'],
    dynamicClientRegistration: { scopes: ['mcp:tools', 'openid'] },
    clientIdMetadataDocuments: {
      scopes: ['mcp:tools', 'openid'],
      fetch: async (url) =>
        url === DOCUMENT
          ? Response.json({
              client_id: DOCUMENT,
              client_name: 'Tool',
              redirect_uris: [TARGET],
              token_endpoint_auth_method: 'none',
            })
          : new Response('not here', { status: 404 }),
    },
  })
  const registration = await service.fetch(
    new Request(`${ISSUER}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Registered', redirect_uris: [TARGET], token_endpoint_auth_method: 'none' }),
    }),
    { address: '203.0.113.9' },
  )
  expect(registration.status).toBe(201)
  const dynamic = ((await registration.json()) as { client_id: string }).client_id
  const as = await discover(service.fetch)
  const browser = new Browser(service.fetch, ['https://attacker.example.test', 'https://rp.example.test'])
  return { service, clock, as, browser, clients: { dynamic, metadata_document: DOCUMENT } }
}

type Ctx = Awaited<ReturnType<typeof setup>>
type Kind = 'dynamic' | 'metadata_document'

async function request(ctx: Ctx, kind: Kind, options: Parameters<typeof authorizationUrl>[1] = {}) {
  return authorizationUrl(ctx.as, { clientId: ctx.clients[kind], redirectUri: TARGET, scope: 'mcp:tools', ...options })
}

/** An error page on the issuer naming `error`: no redirect, nothing sent to the target host. */
async function expectPage(response: Response, error: string): Promise<void> {
  expect(response.status).toBe(400)
  expect(response.headers.get('location')).toBeNull()
  expect(response.headers.get('content-type')).toMatch(/^text\/html/)
  expect(await response.text()).toContain(`<span class="code">${error}</span>`)
}

describe('#27 item 1: a self-registered client gets no error redirect before sign-in and consent (RFC 9700 §4.11.2)', () => {
  it.each<Kind>(['dynamic', 'metadata_document'])(
    '#27 item 1 (%s): invalid scope, prompt=none without a session, missing PKCE → an error page, not a 303 to the client',
    async (kind) => {
      const ctx = await setup()
      const cases: Array<[Parameters<typeof authorizationUrl>[1], string]> = [
        [{ scope: 'mcp:tools nope' }, 'invalid_scope'],
        [{ extra: { prompt: 'none' } }, 'login_required'],
        [{ pkce: false }, 'invalid_request'],
        [{ extra: { response_type: 'token' } }, 'unsupported_response_type'],
      ]
      for (const [options, error] of cases) {
        const { url } = await request(ctx, kind, options)
        await expectPage(await ctx.browser.request(url.href), error)
      }
    },
  )

  it.each<Kind>(['dynamic', 'metadata_document'])(
    '#27 item 1 (%s): prompt=none with a session is consent_required as a page (no consent page was seen)',
    async (kind) => {
      const ctx = await setup()
      const web = await authorizationUrl(ctx.as)
      expect((await authorize(ctx.browser, web.url)).searchParams.has('code')).toBe(true)
      const { url } = await request(ctx, kind, { extra: { prompt: 'none' } })
      await expectPage(await ctx.browser.request(url.href), 'consent_required')
    },
  )

  it.each<Kind>(['dynamic', 'metadata_document'])(
    '#27 item 1 (%s): Cancel on the sign-in page is a page; Deny on the consent page (which names the host) goes back to the client',
    async (kind) => {
      const ctx = await setup()
      const cancelled = await request(ctx, kind)
      const signIn = await ctx.browser.navigate(cancelled.url.href)
      const cancel = await ctx.browser.submit(signIn.page as never, { decision: 'cancel' })
      expect(cancel.callback).toBeUndefined()
      expect(cancel.page?.status).toBe(400)
      expect(cancel.page?.html).toContain('access_denied')

      const denied = await request(ctx, kind, { state: 'st' })
      const first = await ctx.browser.navigate(denied.url.href)
      const consent = await ctx.browser.signIn(first.page as never, 'alice', 'alice-password')
      expect(consent.page?.html).toContain('attacker.example.test')
      const deny = await ctx.browser.submit(consent.page as never, { decision: 'deny' })
      const callback = deny.callback as URL
      expectErrorRedirect(callback, TARGET, 'access_denied', 'st')
    },
  )

  it("#27 item 1: a host sign-in hook's error at the sign-in step is a page for a self-registered client, a redirect for the host's", async () => {
    const ctx = await setup({ interaction: () => ({ error: 'access_denied', description: 'no' }) })
    const { url } = await request(ctx, 'dynamic')
    await expectPage(await ctx.browser.request(url.href), 'access_denied')
    const web = await authorizationUrl(ctx.as)
    const response = await ctx.browser.request(web.url.href)
    expect(response.status).toBe(303)
    expect(new URL(response.headers.get('location') as string).searchParams.get('error')).toBe('access_denied')
  })

  it('#27 item 1: a host-registered client still gets its error redirects (invalid scope, prompt=none)', async () => {
    const ctx = await setup()
    for (const [options, error] of [
      [{ scope: 'openid nope' }, 'invalid_scope'],
      [{ extra: { prompt: 'none' } }, 'login_required'],
    ] as const) {
      const { url, state } = await authorizationUrl(ctx.as, options)
      const response = await ctx.browser.request(url.href)
      expect(response.status).toBe(303)
      const location = new URL(response.headers.get('location') as string)
      expect(location.origin + location.pathname).toBe(RU)
      expect(() => oauth.validateAuthResponse(ctx.as, { client_id: 'web' }, location, state)).toThrow(
        expect.objectContaining({ error }),
      )
    }
  })
})
