/**
 * #17.5 and #17.6: what no endpoint lets through to a store or answers with the wrong status.
 * - #17.5: U+0000 (and, where the encoding can carry one, an unpaired surrogate) in any parameter
 *   is 400 invalid_request before any store sees it (JSON at the API, an HTML page where no redirect
 *   is safe) — on memory, and on PostgreSQL and Redis when their variables are set.
 * - #17.6: a body that is not application/x-www-form-urlencoded is 400 invalid_request at token,
 *   introspection and revocation alike (RFC 6749 §5.2; CONFORMANCE TOK-01, INT-01).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { OAuthError } from '../../../src/errors.ts'
import { checkParameter, parseParams } from '../../../src/http.ts'
import type { Store } from '../../../src/storage/types.ts'
import { setup, signIn } from '../../helpers/flow.ts'
import { ISSUER, basic, clock, form, makeService } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const NUL = '\u0000'
const TOKEN = `${ISSUER}/connect/token`
const INTROSPECT = `${ISSUER}/connect/introspect`
const REVOKE = `${ISSUER}/connect/revoke`

async function expectJsonError(response: Response, status = 400): Promise<void> {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toMatch(/^application\/json/)
  const body = (await response.json()) as { error: string; error_description: string }
  expect(body.error).toBe('invalid_request')
  expect(body.error_description).not.toContain(NUL)
}

async function expectErrorPage(response: Response): Promise<void> {
  expect(response.status).toBe(400)
  expect(response.headers.get('location')).toBeNull()
  expect(response.headers.get('content-type')).toMatch(/^text\/html/)
  expect(await response.text()).toContain('invalid_request')
}

/** A store wrapper that records every call whose arguments carry a U+0000. */
function watched(store: Store): { store: Store; touched: string[] } {
  const touched: string[] = []
  const wrapped = new Proxy(store, {
    get(target, area: string) {
      const methods = target[area as keyof Store]
      if (typeof methods !== 'object' || methods === null) return methods
      return new Proxy(methods, {
        get(inner, name: string) {
          const method = (inner as Record<string, unknown>)[name]
          if (typeof method !== 'function') return method
          return (...args: unknown[]) => {
            if (JSON.stringify(args).includes('\\u0000')) touched.push(`${area}.${name}`)
            return (method as (...a: unknown[]) => unknown).apply(inner, args)
          }
        },
      })
    },
  })
  return { store: wrapped, touched }
}

describe.each(STORES)('#17.5 U+0000 never reaches the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start() {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const { store, touched } = watched(opened.store)
    const ctx = await setup({ store, now: time.now })
    return { ...ctx, touched }
  }

  it('#17.5 U+0000 in client_id (post and Basic), token values and secrets at token, introspection and revocation → 400 invalid_request JSON', async () => {
    const { service, touched } = await start()
    const evil = `service${NUL}`
    const cases: Request[] = [
      form(TOKEN, { grant_type: 'client_credentials', client_id: evil, client_secret: 'x' }),
      form(TOKEN, { grant_type: 'client_credentials' }, { authorization: basic(evil, 'service-secret') }),
      form(TOKEN, { grant_type: 'client_credentials' }, { authorization: basic('service', `s${NUL}`) }),
      form(
        TOKEN,
        { grant_type: 'refresh_token', refresh_token: `a${NUL}` },
        { authorization: basic('web', 'web-secret') },
      ),
      form(
        TOKEN,
        { grant_type: 'authorization_code', code: `c${NUL}`, redirect_uri: 'https://rp.example.test/cb' },
        { authorization: basic('web', 'web-secret') },
      ),
      form(INTROSPECT, { token: 'x', client_id: evil, client_secret: 'x' }),
      form(INTROSPECT, { token: `x${NUL}` }, { authorization: basic('service', 'service-secret') }),
      form(REVOKE, { token: 'x', client_id: evil }),
      form(`${ISSUER}/connect/userinfo`, { access_token: `x${NUL}` }),
    ]
    for (const request of cases) await expectJsonError(await service.fetch(request))
    expect(touched).toEqual([])
  })

  it('#17.5 U+0000 at authorize, logout and the sign-in page (query and form) → an HTML error page, no redirect', async () => {
    const ctx = await start()
    const authorize = new URL(ctx.as.authorization_endpoint as string)
    for (const [name, value] of Object.entries({
      response_type: 'code',
      client_id: `web${NUL}`,
      redirect_uri: 'https://rp.example.test/cb',
      scope: 'openid',
    }))
      authorize.searchParams.set(name, value)
    await expectErrorPage(await ctx.service.fetch(new Request(authorize)))
    // a NUL elsewhere once the client is known is no redirect either: nothing was verified yet
    authorize.searchParams.set('client_id', 'web')
    authorize.searchParams.set('state', `s${NUL}`)
    await expectErrorPage(await ctx.service.fetch(new Request(authorize)))
    const post = new Request(ctx.as.authorization_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ response_type: 'code', client_id: `web${NUL}` }),
    })
    await expectErrorPage(await ctx.service.fetch(post))

    const logout = new URL(ctx.as.end_session_endpoint as string)
    logout.searchParams.set('client_id', `web${NUL}`)
    await expectErrorPage(await ctx.service.fetch(new Request(logout)))
    await expectErrorPage(
      await ctx.service.fetch(form(logout.origin + logout.pathname, { uid: `u${NUL}`, confirm: 'yes' })),
    )

    const interaction = `${ISSUER}/connect/interaction`
    await expectErrorPage(await ctx.service.fetch(new Request(`${interaction}?uid=u%00`)))
    await expectErrorPage(await ctx.service.fetch(form(interaction, { uid: `u${NUL}`, csrf: 'x', username: 'alice' })))
    expect(ctx.touched).toEqual([])
  })
})

describe('#17.5 the check itself', () => {
  it('#17.5 an unpaired surrogate is refused like U+0000; a well-formed pair and other controls pass', () => {
    expect(() => checkParameter('state', 'a\uD800b')).toThrow(
      /parameter state contains a character that is not allowed/,
    )
    expect(() => checkParameter('state', 'a\uDC00')).toThrow(OAuthError)
    expect(() => checkParameter('state', `a${NUL}`)).toThrow(OAuthError)
    expect(() => checkParameter('state', 'a\uD83D\uDE00\u0001\u007f')).not.toThrow()
    expect(() => parseParams('a=%00', 100)).toThrow(/a parameter the service does not use contains/)
  })
})

describe('#17.6 a body that is not a form is 400 invalid_request at token, introspection and revocation', () => {
  const EXPECTED = 'the body must be application/x-www-form-urlencoded'
  it.each([
    ['application/json', () => '{"grant_type":"client_credentials"}'],
    ['text/plain', () => 'grant_type=client_credentials'],
    ['multipart/form-data', () => multipart()],
    [null, () => new Blob(['grant_type=client_credentials'])],
  ])('#17.6 %s', async (type, body) => {
    const { service } = await makeService()
    for (const url of [TOKEN, INTROSPECT, REVOKE]) {
      const headers: Record<string, string> = { authorization: basic('service', 'service-secret') }
      if (type === 'application/json' || type === 'text/plain') headers['content-type'] = type
      const response = await service.fetch(new Request(url, { method: 'POST', headers, body: body() }))
      expect(response.status, url).toBe(400)
      // RFC 6749 §5.2: invalid_request, naming the type expected, not the one sent
      expect(await response.json()).toEqual({ error: 'invalid_request', error_description: EXPECTED })
    }
  })

  it('#17.6 the browser endpoints taking forms answer the same with an error page; userinfo reads only the header then', async () => {
    const ctx = await setup()
    const json = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"uid":"x"}' }
    for (const path of ['/connect/authorize', '/connect/interaction', '/connect/logout']) {
      const response = await ctx.service.fetch(new Request(`${ISSUER}${path}`, json))
      expect(response.status, path).toBe(400)
      expect(response.headers.get('content-type')).toMatch(/^text\/html/)
      const html = await response.text()
      expect(html).toContain('invalid_request')
      expect(html).toContain(EXPECTED)
    }
    // OpenID Connect Core §5.3.1 and RFC 6750 §2.2: a POST to userinfo may carry the token in the
    // header; only a form body is a token carrier, so any other body is not an error in itself.
    const { result } = await signIn(ctx)
    const userinfo = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/userinfo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${result.access_token}` },
        body: '{}',
      }),
    )
    expect(userinfo.status).toBe(200)
  })
})

function multipart(): FormData {
  const data = new FormData()
  data.set('grant_type', 'client_credentials')
  return data
}
