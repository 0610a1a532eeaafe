/**
 * Fuzz: every endpoint under every method (standard, lower-case, extension tokens, Object.prototype
 * names), and HEAD against GET. A method an endpoint does not serve is 405 with `Allow` (JSON on
 * API endpoints, an HTML page on browser endpoints); HEAD answers as GET does, without a body.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RU } from '../helpers/service.ts'
import { MARKER, authorization, cookie, method, params, serialize, settings, toRequest } from './arbitraries.ts'
import { STORE_CHOICES } from '../helpers/stores.ts'
import { ISSUER, checkApi, checkBrowser, fuzzSetup, runsOn, startInteraction } from './fixtures.ts'

const SERVED: Record<string, { methods: string[]; browser: boolean }> = {
  '/.well-known/openid-configuration': { methods: ['GET'], browser: false },
  '/.well-known/oauth-authorization-server': { methods: ['GET'], browser: false },
  '/.well-known/jwks.json': { methods: ['GET'], browser: false },
  '/connect/token': { methods: ['POST'], browser: false },
  '/connect/introspect': { methods: ['POST'], browser: false },
  '/connect/revoke': { methods: ['POST'], browser: false },
  '/connect/userinfo': { methods: ['GET', 'POST'], browser: false },
  '/connect/authorize': { methods: ['GET', 'POST'], browser: true },
  '/connect/logout': { methods: ['GET', 'POST'], browser: true },
  '/connect/interaction': { methods: ['GET', 'POST'], browser: true },
  '/connect/verify': { methods: ['GET', 'POST'], browser: true },
}

function base(location: string | null): string | null {
  return location === null ? null : location.replace(/\?.*$/, '')
}

describe.each(STORE_CHOICES)('fuzz ($name store): methods', (kind) => {
  it.skipIf(kind.skip)('unserved methods: 405 with Allow, JSON or HTML by endpoint', async () => {
    const fx = await fuzzSetup(kind)
    const request = fc.record({
      path: fc.constantFrom(...Object.keys(SERVED)),
      method,
      authorization: authorization(fx.credentials, [fx.accessToken], fx.kids),
      cookie: cookie(fx.cookies),
    })
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const served = SERVED[r.path] as { methods: string[]; browser: boolean }
        const req = toRequest(ISSUER, {
          method: r.method,
          target: r.path,
          headers: { authorization: r.authorization, cookie: r.cookie },
        })
        const response = await fx.service.fetch(req)
        const body = await response.text()
        const allowed = served.methods.includes(req.method) || (req.method === 'HEAD' && served.methods.includes('GET'))
        if (served.browser) checkBrowser(response, body, { redirectUris: [RU], interaction: true })
        else checkApi(response, body, req.method)
        if (allowed) {
          expect(response.status).not.toBe(405)
        } else {
          expect(response.status).toBe(405)
          expect(response.headers.get('allow')).toBe(served.methods.join(', '))
        }
      }),
      settings(0x6a7e_0600, runsOn(kind, 400)),
    )
  })

  it.skipIf(kind.skip)('HEAD answers as GET does, without a body', async () => {
    const fx = await fuzzSetup(kind)
    const real = await startInteraction(fx.service)
    const getPaths = Object.keys(SERVED).filter((p) => (SERVED[p] as { methods: string[] }).methods.includes('GET'))
    const request = fc.record({
      path: fc.constantFrom(...getPaths),
      query: fc.oneof(
        params({
          uid: [real.uid],
          client_id: ['web'],
          redirect_uri: [RU],
          response_type: ['code'],
          scope: ['openid'],
          state: [MARKER],
        }).map(serialize),
        fc.constantFrom(
          `uid=${real.uid}`,
          `response_type=code&client_id=web&redirect_uri=${encodeURIComponent(RU)}&scope=openid&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256`,
        ),
      ),
      authorization: authorization([], [fx.accessToken], fx.kids),
      cookie: fc.oneof(cookie(fx.cookies), fc.constantFrom(real.cookie, `${real.cookie}; ${fx.cookies.at(-1)}`)),
    })
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const spec = { target: `${r.path}?${r.query}`, headers: { authorization: r.authorization, cookie: r.cookie } }
        const get = await fx.service.fetch(toRequest(ISSUER, { ...spec, method: 'GET' }))
        const head = await fx.service.fetch(toRequest(ISSUER, { ...spec, method: 'HEAD' }))
        const headBody = await head.text()
        expect(head.status, `GET ${get.status}, HEAD ${head.status}`).toBe(get.status)
        expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'))
        expect(base(head.headers.get('location'))).toBe(base(get.headers.get('location')))
        if (head.status < 400) expect(headBody).toBe('')
        await get.body?.cancel()
      }),
      settings(0x6a7e_0601, runsOn(kind, 300)),
    )
  })
})
