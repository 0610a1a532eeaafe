/**
 * #17.8: an error description — RFC 6749 §5.2 JSON, an error redirect's `error_description`, a
 * `WWW-Authenticate` challenge, or an HTML error page — never carries request input beyond the
 * name of a parameter the service knows. Every parameter of every endpoint (query, form, Basic
 * credentials, Bearer token, cookie) is fuzzed with a unique marker: alone, next to or inside a
 * valid value, with markup, with U+0000, or too long; the marker is also sent as a parameter's
 * name (repeated, too long, with U+0000). No error may show it back: a reflected value is a
 * phishing and log-injection vector. On every store the environment offers (#17.5).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Page } from '../helpers/browser.ts'
import { authorizationUrl, authorize } from '../helpers/flow.ts'
import { PLRU, RU, basic } from '../helpers/service.ts'
import { STORE_CHOICES, type StoreKind } from '../helpers/stores.ts'
import { MAX_PARAMETER_LENGTH, settings } from './arbitraries.ts'
import { INTERACTION_URL, ISSUER, fuzzSetup, runsOn, startInteraction } from './fixtures.ts'

type Pairs = Array<[string, string]>
type Mutation = (valid: string, m: string) => string | undefined

/** A marker: letters only, so that no encoding of it differs from it. */
const marker = fc.stringMatching(/^[a-z]{8}$/).map((core) => `Qz${core}zQ`)

const tooLong = (m: string): string => m.repeat(Math.ceil((MAX_PARAMETER_LENGTH + 1) / m.length))

/** What a fuzzed parameter gets: the marker alone, next to or inside its valid value, with markup, U+0000, too long. */
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: fc.constant((_v: string, m: string) => m) },
  { weight: 3, arbitrary: fc.constant((v: string, m: string) => `${v} ${m}`) },
  { weight: 3, arbitrary: fc.constant((v: string, m: string) => `${v}${m}`) },
  fc.constant((_v: string, m: string) => `${m}<"'>%`),
  fc.constant((_v: string, m: string) => `${m}\u0000`),
  fc.constant((_v: string, m: string) => tooLong(m)),
)

/**
 * Values for an endpoint: each parameter valid (or absent), then one to three of them fuzzed, so
 * that a run gets past the checks of the others and reaches the one it aims at.
 */
function values(spec: Spec): fc.Arbitrary<(m: string) => Record<string, string>> {
  const names = Object.keys(spec)
  const base = fc.record(
    Object.fromEntries(
      Object.entries(spec).map(([name, valid]) => [
        name,
        fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...valid) }, fc.constant(undefined)),
      ]),
    ),
  )
  const fuzzed = fc.uniqueArray(fc.tuple(fc.constantFrom(...names), mutation), {
    minLength: 1,
    maxLength: 3,
    selector: ([name]) => name,
  })
  return fc.tuple(base, fuzzed).map(([valid, mutations]) => (m: string) => {
    const out: Record<string, string> = {}
    for (const [name, v] of Object.entries(valid)) if (v !== undefined) out[name] = v
    for (const [name, mutate] of mutations) {
      const v = mutate(valid[name] ?? ((spec[name] as readonly string[])[0] as string), m)
      if (v !== undefined) out[name] = v
    }
    return out
  })
}

/** The marker as a parameter name (repeated, too long, with U+0000), or as a known parameter's second copy. */
const named: fc.Arbitrary<(m: string, known: string) => Pairs> = fc.oneof(
  { weight: 15, arbitrary: fc.constant(() => []) },
  fc.constant(
    (m: string): Pairs => [
      [m, 'a'],
      [m, 'b'],
    ],
  ),
  fc.constant((m: string): Pairs => [[m, tooLong('x')]]),
  fc.constant((m: string): Pairs => [[m, 'a\u0000']]),
  fc.constant((m: string): Pairs => [[`${m}\u0000`, 'a']]),
  fc.constant((m: string, known: string): Pairs => [[known, m]]),
)

/** The valid values of an endpoint's parameters. Names starting with `@` are headers (see `toRequest`). */
type Spec = Record<string, readonly string[]>

interface Endpoint {
  name: string
  method: 'GET' | 'POST'
  path: string
  spec: (fx: Prepared) => Spec
}

/** A fuzz fixture plus pending state to aim at: an unredeemed code, a sign-in, a consent, a logout confirmation. */
async function prepare(kind: StoreKind) {
  const fx = await fuzzSetup(kind)
  // a code of `web` (a failed redemption consumes nothing, #17.2: it stays live until redeemed)
  const request = await authorizationUrl(fx.as, { scope: 'openid api1' })
  const code = (await authorize(fx.browser, request.url)).searchParams.get('code') as string
  const signin = await startInteraction(fx.service)
  // the `consent` client asks for consent once the end-user has signed in
  const pending = await startInteraction(
    fx.service,
    {},
    { clientId: 'consent', redirectUri: 'https://consent.example.test/cb', scope: 'openid email' },
  )
  const page: Page = { status: 200, url: INTERACTION_URL, html: pending.html, response: new Response() }
  const consent = (await pending.browser.signIn(page, 'alice', 'alice-password')).page
  // a logout without id_token_hint asks the signed-in browser to confirm
  const logout = (await fx.browser.navigate(`${ISSUER}/connect/logout`)).page
  const field = (html: string | undefined, name: string) =>
    new RegExp(`name="${name}" value="([^"]+)"`).exec(html ?? '')?.[1] ?? 'missing'
  return {
    ...fx,
    code,
    verifier: request.verifier,
    signin,
    consent: {
      uid: field(consent?.html, 'uid'),
      csrf: field(consent?.html, 'csrf'),
      cookie: pending.browser.cookieHeader(),
    },
    logout: { uid: field(logout?.html, 'uid'), csrf: field(logout?.html, 'csrf') },
    cookie: fx.browser.cookieHeader(),
  }
}
type Prepared = Awaited<ReturnType<typeof prepare>>

const AUTHORIZE = (fx: Prepared): Spec => ({
  response_type: ['code'],
  client_id: ['web', 'spa'],
  redirect_uri: [RU, 'https://spa.example.test/callback'],
  scope: ['openid', 'openid api1', 'openid offline_access'],
  code_challenge: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
  code_challenge_method: ['S256', 'plain'],
  prompt: ['none', 'login', 'consent'],
  max_age: ['60', '0'],
  response_mode: ['query'],
  id_token_hint: [fx.idToken],
  login_hint: ['alice'],
  nonce: ['n'],
  state: ['s'],
  '@cookie': [fx.cookie],
})

const LOGOUT = (fx: Prepared): Spec => ({
  id_token_hint: [fx.idToken],
  client_id: ['web', 'web2'],
  post_logout_redirect_uri: [PLRU],
  state: ['s'],
  '@cookie': [fx.cookie],
})

const TOKENS = (fx: Prepared) => [fx.accessToken, fx.refreshToken, fx.ccToken]

const ENDPOINTS: Endpoint[] = [
  {
    name: 'token: client_credentials',
    method: 'POST',
    path: '/connect/token',
    spec: () => ({
      grant_type: ['client_credentials', 'password'],
      scope: ['api1', 'openid', 'api1 openid'],
      client_id: ['service', 'no-cc'],
      client_secret: ['service-secret', 'no-cc-secret'],
    }),
  },
  {
    name: 'token: authorization_code',
    method: 'POST',
    path: '/connect/token',
    spec: (fx) => ({
      grant_type: ['authorization_code'],
      code: [fx.code],
      redirect_uri: [RU, 'https://rp.example.test/cb2'],
      code_verifier: [fx.verifier],
      client_id: ['web', 'spa'],
      client_secret: ['web-secret'],
    }),
  },
  {
    name: 'token: refresh_token',
    method: 'POST',
    path: '/connect/token',
    spec: (fx) => ({
      grant_type: ['refresh_token'],
      refresh_token: [fx.refreshToken],
      scope: ['openid', 'openid api1'],
      client_id: ['web', 'web2'],
      client_secret: ['web-secret'],
    }),
  },
  {
    name: 'token: Basic credentials',
    method: 'POST',
    path: '/connect/token',
    spec: (fx) => ({
      grant_type: ['client_credentials', 'refresh_token', 'authorization_code'],
      scope: ['api1'],
      refresh_token: [fx.refreshToken],
      code: [fx.code],
      '@basic_id': ['service', 'web'],
      '@basic_secret': ['service-secret', 'web-secret'],
    }),
  },
  {
    name: 'introspection',
    method: 'POST',
    path: '/connect/introspect',
    spec: (fx) => ({
      token: TOKENS(fx),
      token_type_hint: ['access_token', 'refresh_token'],
      client_id: ['service'],
      '@basic_id': ['service', 'api1', 'web'],
      '@basic_secret': ['service-secret', 'api1-secret', 'web-secret'],
    }),
  },
  {
    name: 'revocation',
    method: 'POST',
    path: '/connect/revoke',
    spec: (fx) => ({
      token: TOKENS(fx),
      token_type_hint: ['access_token', 'refresh_token'],
      client_id: ['spa', 'web'],
      client_secret: ['web-secret'],
      '@basic_id': ['web'],
      '@basic_secret': ['web-secret'],
    }),
  },
  {
    name: 'userinfo (POST)',
    method: 'POST',
    path: '/connect/userinfo',
    spec: (fx) => ({ access_token: [fx.accessToken], '@bearer': [fx.accessToken, fx.ccToken] }),
  },
  {
    name: 'userinfo (GET)',
    method: 'GET',
    path: '/connect/userinfo',
    spec: (fx) => ({ '@bearer': [fx.accessToken, fx.ccToken], access_token: [fx.accessToken] }),
  },
  {
    // RFC 9126: the authorization request's parameters, pushed by an authenticated client.
    name: 'par',
    method: 'POST',
    path: '/connect/par',
    spec: (fx) => {
      const { '@cookie': _cookie, ...authorize } = AUTHORIZE(fx)
      return {
        ...authorize,
        client_id: ['web', 'spa'],
        client_secret: ['web-secret'],
        '@basic_id': ['web'],
        '@basic_secret': ['web-secret'],
      }
    },
  },
  { name: 'authorize (GET)', method: 'GET', path: '/connect/authorize', spec: AUTHORIZE },
  { name: 'authorize (POST)', method: 'POST', path: '/connect/authorize', spec: AUTHORIZE },
  { name: 'logout (GET)', method: 'GET', path: '/connect/logout', spec: LOGOUT },
  { name: 'logout (POST)', method: 'POST', path: '/connect/logout', spec: LOGOUT },
  {
    name: 'logout confirmation',
    method: 'POST',
    path: '/connect/logout',
    spec: (fx) => ({
      uid: [fx.logout.uid],
      csrf: [fx.logout.csrf],
      confirm: ['yes'],
      decision: ['yes', 'no'],
      '@cookie': [fx.cookie],
    }),
  },
  {
    name: 'sign-in page (GET)',
    method: 'GET',
    path: '/connect/interaction',
    spec: (fx) => ({ uid: [fx.signin.uid], '@cookie': [fx.signin.cookie] }),
  },
  {
    name: 'sign-in form',
    method: 'POST',
    path: '/connect/interaction',
    spec: (fx) => ({
      uid: [fx.signin.uid],
      csrf: [fx.signin.csrf],
      action: ['login'],
      username: ['alice', 'bob'],
      password: ['alice-password', 'wrong'],
      decision: ['login', 'cancel'],
      '@cookie': [fx.signin.cookie],
    }),
  },
  {
    name: 'consent form',
    method: 'POST',
    path: '/connect/interaction',
    spec: (fx) => ({
      uid: [fx.consent.uid],
      csrf: [fx.consent.csrf],
      action: ['consent'],
      decision: ['allow', 'deny'],
      '@cookie': [fx.consent.cookie],
    }),
  },
]

/** A request of the endpoint: plain names as query or form, `@` names as headers. */
function toRequest(endpoint: Endpoint, values: Record<string, string>, extra: Pairs, first: boolean): Request {
  const plain: Pairs = Object.entries(values).filter(([name]) => !name.startsWith('@'))
  const pairs = first ? [...extra, ...plain] : [...plain, ...extra]
  // Header values cannot hold U+0000 (the Fetch API refuses them); Basic encodes it, so it stays there.
  const header = (v: string) => v.split('\u0000').join('')
  const headers: Record<string, string> = {}
  const id = values['@basic_id']
  const secret = values['@basic_secret']
  if (id !== undefined || secret !== undefined) headers.authorization = basic(id ?? '', secret ?? '')
  if (values['@bearer'] !== undefined) headers.authorization = `Bearer ${header(values['@bearer'])}`
  if (values['@cookie'] !== undefined) headers.cookie = header(values['@cookie'])
  const form = new URLSearchParams(pairs)
  if (endpoint.method === 'GET') return new Request(`${ISSUER}${endpoint.path}?${form}`, { headers })
  return new Request(`${ISSUER}${endpoint.path}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  })
}

/**
 * The texts an answer shows as an error: JSON error_description, an error redirect's, a challenge,
 * an HTML error page. On a form page (sign-in, consent, logout) only its alert: the sign-in form
 * keeps the username typed in its field, which is the end-user's own input, not a message.
 */
async function errorTexts(response: Response): Promise<string[]> {
  const texts: string[] = []
  const location = response.headers.get('location')
  if (location !== null) {
    const description = new URL(location, ISSUER).searchParams.get('error_description')
    if (description !== null) texts.push(description)
  }
  const challenge = response.headers.get('www-authenticate')
  if (challenge !== null) texts.push(challenge)
  const type = response.headers.get('content-type') ?? ''
  const body = await response.text()
  if (type.startsWith('application/json') && response.status >= 400) {
    const description = (JSON.parse(body) as { error_description?: unknown }).error_description
    if (typeof description === 'string') texts.push(description)
  }
  if (type.startsWith('text/html')) {
    if (!body.includes('<form')) texts.push(body)
    else for (const alert of body.matchAll(/role="alert"[^>]*>([\s\S]*?)<\/p>/g)) texts.push(alert[1] as string)
  }
  return texts
}

describe.each(STORE_CHOICES)('#17.8 no request input in error descriptions ($name store)', (kind) => {
  it.skipIf(kind.skip).each(ENDPOINTS.map((e, i) => [e.name, e, i] as const))(
    '#17.8 %s',
    async (_name, endpoint, index) => {
      const fx = await prepare(kind)
      const spec = endpoint.spec(fx)
      const known = Object.keys(spec).find((name) => !name.startsWith('@')) as string
      let errors = 0
      await fc.assert(
        fc.asyncProperty(values(spec), named, fc.boolean(), marker, async (make, extra, first, m) => {
          const response = await fx.service.fetch(toRequest(endpoint, make(m), extra(m, known), first))
          expect(response.status).toBeLessThan(500)
          for (const text of await errorTexts(response)) {
            errors++
            expect(text).not.toContain(m)
            expect(text.toLowerCase()).not.toContain(m.toLowerCase().slice(2, 10))
          }
        }),
        settings(0x17_08_00 + index, runsOn(kind, 150)),
      )
      expect(errors).toBeGreaterThan(10)
    },
  )
})
