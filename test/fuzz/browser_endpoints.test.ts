/**
 * Fuzz: the browser endpoints (authorize, logout, the sign-in pages) under random methods,
 * parameters, headers, cookies and bodies. Every answer is an escaped HTML page or a 303, and a
 * redirect goes only to a redirect URI the request named that is registered for a client it
 * named (RFC 6749 §4.1.2.1), to the service's own sign-in page, or to a post-logout URI registered
 * for the client of a valid id_token_hint (RP-Initiated Logout §3).
 */
import fc from 'fast-check'
import { STORE_CHOICES } from '../helpers/stores.ts'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import { signIn } from '../helpers/flow.ts'
import { PLRU, RU } from '../helpers/service.ts'
import { MARKER, type RequestSpec, settings } from './arbitraries.ts'
import {
  ISSUER,
  checkBrowser,
  checkLogoutLocation,
  fuzzSetup,
  postLogoutUrisOf,
  redirectUrisOf,
  send,
  startInteraction,
} from './fixtures.ts'
import { endpointRequest } from './requests.ts'

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
const CLIENT_IDS = ['web', 'web2', 'spa', 'consent', 'service', 'no-cc', 'unknown', '__proto__', 'constructor']
const REDIRECT_URIS = [
  RU,
  'https://rp.example.test/cb2',
  'https://rp2.example.test/cb',
  'https://spa.example.test/callback',
  'https://consent.example.test/cb',
  `${RU}/`,
  `${RU}?x=1`,
  `${RU}#f`,
  'HTTPS://RP.EXAMPLE.TEST/cb',
  'https://rp.example.test/CB',
  'https://evil.example/cb',
  '//evil.example/cb',
  'javascript:alert(1)',
  `${RU}${MARKER}`,
  `${ISSUER}/connect/interaction`,
]

/** The parameters as the urlencoded parser reads them: the body of a POST, else the query string. */
function seen(spec: RequestSpec, request: Request): URLSearchParams {
  // `&` first: URLSearchParams would drop a leading `?` of the body, the urlencoded parser does not
  if (request.method === 'POST')
    return new URLSearchParams(`&${new TextDecoder().decode(spec.body ?? new Uint8Array(0))}`)
  return new URL(request.url).searchParams
}

// #17.5: on every store the environment offers, not only memory.
describe.each(STORE_CHOICES)(
  'fuzz ($name store): browser endpoints answer escaped HTML or a 303 to an allowed place',
  (kind) => {
    it.skipIf(kind.skip)('authorize', async () => {
      const fx = await fuzzSetup(kind)
      const good = {
        response_type: ['code'],
        scope: ['openid', 'openid profile email', 'openid api1', 'openid offline_access', 'profile'],
        state: [MARKER, 'xyz'],
        nonce: [MARKER, 'n-0S6_WzA2Mj'],
        code_challenge: [CHALLENGE],
        code_challenge_method: ['S256'],
      }
      const endpoint = endpointRequest({
        path: '/connect/authorize',
        methods: ['GET', 'POST'],
        carrier: 'either',
        cookies: fx.cookies,
        spec: {
          response_type: ['code', 'token', 'id_token', 'code id_token', 'none', 'CODE'],
          client_id: CLIENT_IDS,
          redirect_uri: REDIRECT_URIS,
          scope: [
            'openid',
            'openid profile email',
            'openid api1',
            'api1',
            'openid unknown',
            `openid ${MARKER}`,
            'openid\u00a0profile',
          ],
          state: [MARKER, 'xyz'],
          nonce: [MARKER],
          code_challenge: [CHALLENGE, 'short', 'a'.repeat(128), 'a'.repeat(129)],
          code_challenge_method: ['S256', 'plain', 's256', 'none'],
          prompt: ['none', 'login', 'consent', 'select_account', 'none login', 'create', MARKER],
          max_age: ['0', '60', '-1', '1e3', '99999999999', '0x10'],
          id_token_hint: [fx.idToken, fx.accessToken],
          login_hint: [MARKER, 'alice'],
          ui_locales: [MARKER, 'en'],
          response_mode: ['query', 'fragment', 'form_post'],
          request: ['eyJhbGciOiJub25lIn0.e30.'],
          request_uri: ['https://rp.example.test/request.jwt'],
          claims: ['{"id_token":{"email":null}}'],
        },
        templates: [
          { ...good, client_id: ['web'], redirect_uri: [RU, 'https://rp.example.test/cb2'] },
          { ...good, client_id: ['web2'], redirect_uri: ['https://rp2.example.test/cb'] },
          { ...good, client_id: ['spa'], redirect_uri: ['https://spa.example.test/callback'] },
          {
            ...good,
            client_id: ['consent'],
            redirect_uri: ['https://consent.example.test/cb'],
            scope: ['openid email'],
          },
          {
            ...good,
            client_id: ['web'],
            redirect_uri: [RU],
            prompt: ['none', 'login', 'consent'],
            max_age: ['0', '60'],
            id_token_hint: [fx.idToken],
            login_hint: [MARKER],
          },
        ],
      })
      await fc.assert(
        fc.asyncProperty(endpoint, async (spec) => {
          const { request, response, body } = await send(fx.service, spec)
          const params = seen(spec, request)
          const registered = new Set(params.getAll('client_id').flatMap(redirectUrisOf))
          const allowed = params.getAll('redirect_uri').filter((uri) => registered.has(uri))
          checkBrowser(response, body, { redirectUris: allowed, interaction: true })
          const location = response.headers.get('location')
          if (location !== null && !location.startsWith(`${ISSUER}/connect/interaction?`)) {
            const state = new URL(location).searchParams.get('state')
            if (state !== null) expect(params.getAll('state')).toContain(state)
          }
        }),
        settings(0x6a7e_0300, 500),
      )
    })

    it.skipIf(kind.skip)('logout', async () => {
      const fx = await fuzzSetup(kind)
      const jwks = createLocalJWKSet((await fx.service.keys.jwks()) as never)
      /** The audiences of the id_token_hint values that are real ID tokens of this issuer. */
      async function hintClients(params: URLSearchParams): Promise<string[]> {
        const clients: string[] = []
        for (const hint of params.getAll('id_token_hint')) {
          try {
            const { payload } = await jwtVerify(hint, jwks, {
              issuer: ISSUER,
              clockTolerance: 10 * 365 * 86400,
              currentDate: new Date(1_800_000_000_000),
            })
            clients.push(...(Array.isArray(payload.aud) ? payload.aud : [payload.aud as string]))
          } catch {}
        }
        return clients
      }
      const endpoint = endpointRequest({
        path: '/connect/logout',
        methods: ['GET', 'POST'],
        carrier: 'either',
        cookies: fx.cookies,
        tokens: [fx.idToken],
        spec: {
          id_token_hint: [fx.idToken, fx.accessToken],
          post_logout_redirect_uri: [
            PLRU,
            'https://rp2.example.test/logged-out',
            'https://spa.example.test/',
            `${PLRU}/`,
            'https://evil.example/',
            RU,
            MARKER,
          ],
          client_id: CLIENT_IDS,
          state: [MARKER, 's'],
          uid: ['a'.repeat(32)],
          confirm: ['yes'],
          csrf: ['a'.repeat(32)],
          decision: ['yes', 'no'],
          ui_locales: [MARKER],
          logout_hint: [MARKER],
        },
        templates: [
          {
            id_token_hint: [fx.idToken],
            post_logout_redirect_uri: [PLRU, 'https://rp2.example.test/logged-out'],
            state: [MARKER],
          },
          { id_token_hint: [fx.idToken], post_logout_redirect_uri: [PLRU], client_id: ['web', 'web2', 'spa'] },
          { post_logout_redirect_uri: [PLRU], client_id: ['web'], state: [MARKER] },
          { uid: ['a'.repeat(32)], confirm: ['yes'], csrf: ['a'.repeat(32)], decision: ['yes'] },
        ],
      })
      let cookies = fx.cookies
      await fc.assert(
        fc.asyncProperty(endpoint, async (spec) => {
          // keep a live session to log out of: the fuzzed cookies name the current one
          const header = spec.headers.cookie
          if (header !== undefined) {
            const live = fx.cookies.findIndex((c) => header.includes(c))
            if (live >= 0)
              spec = {
                ...spec,
                headers: {
                  ...spec.headers,
                  cookie: header.replace(fx.cookies[live] as string, cookies[live] as string),
                },
              }
          }
          const { request, response, body } = await send(fx.service, spec)
          const location = response.headers.get('location')
          checkBrowser(response, body, {
            redirectUris: [PLRU, ...postLogoutUrisOf('web2'), ...postLogoutUrisOf('spa')],
          })
          if (location !== null) {
            const params = seen(spec, request)
            const clients = await hintClients(params)
            const registered = new Set(clients.flatMap(postLogoutUrisOf))
            checkLogoutLocation(
              location,
              params.getAll('post_logout_redirect_uri').filter((uri) => registered.has(uri)),
            )
          }
          if (response.headers.getSetCookie().some((c) => c.startsWith('gatehouse.session=') && /Max-Age=0/.test(c))) {
            // signed out: sign in again for the next runs
            const browser = fx.browser
            browser.cookies.clear()
            await signIn(fx)
            const fresh = [...browser.cookies].map(([n, v]) => `${n}=${v}`)
            cookies = [...fresh, browser.cookieHeader()]
          }
        }),
        settings(0x6a7e_0301, 500),
      )
    })

    it.skipIf(kind.skip)(
      'interaction: random forms with a real uid never complete without the csrf token',
      async () => {
        const fx = await fuzzSetup(kind)
        const real = await startInteraction(fx.service)
        const endpoint = endpointRequest({
          path: '/connect/interaction',
          methods: ['POST', 'GET'],
          carrier: 'either',
          cookies: [real.cookie, ...fx.cookies],
          spec: {
            uid: [real.uid, `${real.uid}x`],
            csrf: ['', 'x', real.uid],
            username: ['alice', MARKER],
            password: ['alice-password', MARKER],
            decision: ['login', 'cancel', 'deny', 'allow'],
            action: ['login', 'consent'],
          },
          templates: [
            {
              uid: [real.uid],
              csrf: [`${real.csrf}x`, real.csrf.slice(1), 'x'],
              username: ['alice', MARKER],
              password: ['alice-password', MARKER],
              decision: ['login', 'cancel'],
            },
            {
              uid: [real.uid],
              csrf: [`${real.csrf.toLowerCase()}!`, ''],
              decision: ['cancel', 'deny', 'allow'],
              action: ['consent'],
            },
          ],
        })
        let pages = 0
        await fc.assert(
          fc.asyncProperty(endpoint, async (spec) => {
            const { request, response, body } = await send(fx.service, spec)
            const params = seen(spec, request)
            fc.pre(!params.getAll('csrf').includes(real.csrf))
            // no csrf, no completion: never a redirect
            checkBrowser(response, body, { redirectUris: [] })
            if (response.status === 200) pages++
          }),
          settings(0x6a7e_0302, 500),
        )
        expect(pages).toBeGreaterThan(0)
        // the real interaction survived all of it
        const done = await real.browser.submit(
          { status: 200, url: '', html: real.html, response: new Response() },
          { username: 'alice', password: 'alice-password', decision: 'login' },
        )
        expect(done.callback?.origin + (done.callback?.pathname ?? '')).toBe(RU)
        expect(done.callback?.searchParams.get('code')).toBeTruthy()
      },
    )
  },
)
