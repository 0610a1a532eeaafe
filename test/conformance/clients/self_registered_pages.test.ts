/**
 * #27 items 3 and 6: the pages a self-registered client's requests lead to.
 * - Item 3 (RP-Initiated Logout §3, RFC 9700 §4.11.2): a metadata document names any
 *   post_logout_redirect_uris it likes and id_token_hints are accepted long after they expire, so a
 *   logout that redirects to a self-registered client's URI first shows a page naming the client
 *   and the target host, with or without a session; the host's clients keep the immediate redirect
 *   (LO-02).
 * - Item 6: every client-supplied name is isolated in `<bdi>` on every page, so a trailing U+202E
 *   cannot reverse the rest of the text, the redirect host included.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { Browser, type Page } from '../../helpers/browser.ts'
import { authorizationUrl } from '../../helpers/flow.ts'
import { ISSUER, PLRU, clock as testClock, discover, inProcess, makeService } from '../../helpers/service.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'

const DOCUMENT = 'https://tool.example.test/oauth/client.json'
const CALLBACK = 'https://tool.example.test/cb'
const LOGGED_OUT = 'https://elsewhere.example.test/bye'
const RLO = '\u202e'

async function setup() {
  const clock = testClock()
  const store = createMemoryStore({ now: clock.now })
  const { service } = await makeService({
    store,
    now: clock.now,
    dynamicClientRegistration: { scopes: ['openid'] },
    clientIdMetadataDocuments: {
      scopes: ['openid'],
      fetch: async (url) =>
        url === DOCUMENT
          ? Response.json({
              client_id: DOCUMENT,
              client_name: 'Tool',
              redirect_uris: [CALLBACK],
              post_logout_redirect_uris: [LOGGED_OUT],
              token_endpoint_auth_method: 'none',
            })
          : new Response('not here', { status: 404 }),
    },
  })
  const as = await discover(service.fetch)
  const prefixes = ['https://tool.example.test', 'https://elsewhere.example.test', 'https://rp.example.test']
  return {
    service,
    clock,
    store,
    as,
    opts: inProcess(service.fetch),
    newBrowser: () => new Browser(service.fetch, prefixes),
  }
}

type Ctx = Awaited<ReturnType<typeof setup>>

/** Signs alice in to the document client (sign-in, consent), redeems the code: its ID token. */
async function documentIdToken(ctx: Ctx, browser: Browser): Promise<string> {
  const request = await authorizationUrl(ctx.as, { clientId: DOCUMENT, redirectUri: CALLBACK, scope: 'openid' })
  const first = await browser.navigate(request.url.href)
  const consent = await browser.signIn(first.page as Page, 'alice', 'alice-password')
  const done = await browser.submit(consent.page as Page, { decision: 'allow' })
  const client: oauth.Client = { client_id: DOCUMENT, token_endpoint_auth_method: 'none' }
  const params = oauth.validateAuthResponse(ctx.as, client, done.callback as URL, request.state as string)
  const response = await oauth.authorizationCodeGrantRequest(
    ctx.as,
    client,
    oauth.None(),
    params,
    CALLBACK,
    request.verifier,
    ctx.opts,
  )
  const result = await oauth.processAuthorizationCodeResponse(ctx.as, client, response, {
    expectedNonce: request.nonce as string,
  })
  return result.id_token as string
}

function logoutUrl(ctx: Ctx, params: Record<string, string>): string {
  const url = new URL(ctx.as.end_session_endpoint as string)
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  return url.href
}

/** The page's text with tags removed, as the notice reads. */
const text = (html: string) => html.replace(/<[^>]+>/g, '')

describe('#27 item 3: a logout redirect to a self-registered client waits for a page naming the host', () => {
  it('#27 item 3: without a session, an old id_token_hint of a metadata-document client shows a page naming the host; Continue redirects', async () => {
    const ctx = await setup()
    const idToken = await documentIdToken(ctx, ctx.newBrowser())
    ctx.clock.advance(30 * 86_400) // the hint expired long ago: still accepted (RPL §2)
    const stranger = ctx.newBrowser() // no session
    const params = { id_token_hint: idToken, post_logout_redirect_uri: LOGGED_OUT, state: 's' }
    const first = await stranger.navigate(logoutUrl(ctx, params))
    expect(first.callback).toBeUndefined()
    const page = first.page as Page
    expect(page.status).toBe(200)
    expect(page.response.headers.get('location')).toBeNull()
    expect(text(page.html)).toContain(
      'Tool registered itself: the operator of this service has not reviewed it. Continue only if you trust elsewhere.example.test.',
    )
    const after = await stranger.submit(page, { decision: 'yes' })
    expect(after.callback?.href).toBe(`${LOGGED_OUT}?state=s`)
  })

  it('#27 item 3: with the matching session, the confirmation names the host; Sign out ends the session and redirects', async () => {
    const ctx = await setup()
    const browser = ctx.newBrowser()
    const idToken = await documentIdToken(ctx, browser)
    const first = await browser.navigate(
      logoutUrl(ctx, { id_token_hint: idToken, post_logout_redirect_uri: LOGGED_OUT }),
    )
    const page = first.page as Page
    expect(first.callback).toBeUndefined()
    expect(text(page.html)).toContain('Signing out sends you to elsewhere.example.test.')
    expect(page.html).toContain('value="no">Stay signed in</button>')
    const after = await browser.submit(page, { decision: 'yes' })
    expect(after.callback?.href).toBe(LOGGED_OUT)
    // Signed out: prompt=none for a host client now needs a sign-in.
    const { url } = await authorizationUrl(ctx.as, { extra: { prompt: 'none' } })
    expect((await browser.navigate(url.href)).callback?.searchParams.get('error')).toBe('login_required')
  })

  it("#27 item 3: a host client's logout with its hint still redirects at once, session or not (LO-02)", async () => {
    const ctx = await setup()
    const browser = ctx.newBrowser()
    const request = await authorizationUrl(ctx.as)
    const first = await browser.navigate(request.url.href)
    const done = await browser.signIn(first.page as Page, 'alice', 'alice-password')
    const params = oauth.validateAuthResponse(
      ctx.as,
      { client_id: 'web' },
      done.callback as URL,
      request.state as string,
    )
    const response = await oauth.authorizationCodeGrantRequest(
      ctx.as,
      { client_id: 'web' },
      oauth.ClientSecretBasic('web-secret'),
      params,
      'https://rp.example.test/cb',
      request.verifier,
      ctx.opts,
    )
    const idToken = (await response.json()).id_token as string
    for (const who of [browser, ctx.newBrowser()]) {
      const answer = await who.request(logoutUrl(ctx, { id_token_hint: idToken, post_logout_redirect_uri: PLRU }))
      expect(answer.status).toBe(303)
      expect(answer.headers.get('location')).toBe(PLRU)
    }
  })
})

describe('#27 item 6: client-supplied names are bidi-isolated on every page', () => {
  it('#27 item 6: a host client named with a trailing U+202E: sign-in and consent pages isolate it in <bdi>', async () => {
    const ctx = await setup()
    await ctx.service.clients.ensure({
      clientId: 'rtl',
      clientSecret: 'rtl-secret',
      displayName: `Shop${RLO}`,
      consentType: 'explicit',
      permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
      redirectUris: ['https://rp.example.test/rtl'],
    })
    const browser = ctx.newBrowser()
    const { url } = await authorizationUrl(ctx.as, {
      clientId: 'rtl',
      redirectUri: 'https://rp.example.test/rtl',
      scope: 'openid',
    })
    const signIn = (await browser.navigate(url.href)).page as Page
    expect(signIn.html).toContain(`to continue to <strong><bdi>Shop${RLO}</bdi></strong>`)
    const consent = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
    expect(consent.html).toContain(`<strong><bdi>Shop${RLO}</bdi></strong> asks to:`)
  })

  it('#27 item 6: a self-registered client with a trailing U+202E in its name: the consent notice keeps the redirect host outside its <bdi>', async () => {
    const ctx = await setup()
    const registration = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Agent', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' }),
      }),
      { address: '203.0.113.9' },
    )
    const clientId = ((await registration.json()) as { client_id: string }).client_id
    // A name no registration filter lets in, written to the store as an older release could have.
    const record = await ctx.store.clients.get(clientId)
    if (!record) throw new Error('not registered')
    expect(await ctx.store.clients.update({ ...record, displayName: `Agent${RLO}` })).toBe(true)
    ctx.clock.advance(3600) // past the client cache
    const browser = ctx.newBrowser()
    const request = await authorizationUrl(ctx.as, { clientId, redirectUri: CALLBACK, scope: 'openid' })
    const first = (await browser.navigate(request.url.href)).page as Page
    expect(first.html).toContain(`to continue to <strong><bdi>Agent${RLO}</bdi></strong>`)
    const consent = (await browser.signIn(first, 'alice', 'alice-password')).page as Page
    expect(consent.html).toContain(
      `<strong><bdi>Agent${RLO}</bdi></strong> registered itself: the operator of this service has not reviewed it. Allowing sends you to <strong><bdi>tool.example.test</bdi></strong>.`,
    )
    expect(consent.html).toContain(`<strong><bdi>Agent${RLO}</bdi></strong> asks to:`)
  })
})
