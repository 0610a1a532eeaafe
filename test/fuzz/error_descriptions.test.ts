/**
 * #17.8: an error description — RFC 6749 §5.2 JSON, an error redirect's `error_description`, or
 * an HTML error page — never carries request input beyond a parameter's name. Every parameter
 * value of every endpoint is fuzzed with a unique marker (alone, or next to a valid value), and no
 * error may show it back (a reflected value is a phishing and log-injection vector).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RU, basic } from '../helpers/service.ts'
import { settings } from './arbitraries.ts'
import { ISSUER, fuzzSetup } from './fixtures.ts'

type Fixture = Awaited<ReturnType<typeof fuzzSetup>>

/** A marker: letters only, so that no encoding of it differs from it. */
const marker = fc.stringMatching(/^[a-z]{8}$/).map((core) => `Qz${core}zQ`)

/** A parameter value: valid, or the marker alone, inside a valid value, or with odd characters. */
function value(valid: readonly string[]): fc.Arbitrary<(m: string) => string | undefined> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...valid).map((v) => () => v) },
    fc.constant((m: string) => m),
    fc.constantFrom(...valid).map((v) => (m: string) => `${v} ${m}`),
    fc.constantFrom(...valid).map((v) => (m: string) => `${v}${m}`),
    fc.constant((m: string) => `${m}<"'>%`),
    fc.constant(() => undefined),
  )
}

function values(spec: Record<string, readonly string[]>) {
  return fc.record(Object.fromEntries(Object.entries(spec).map(([name, valid]) => [name, value(valid)])))
}

/** The texts an answer shows as an error: JSON error_description, an error redirect's, an error page. */
async function errorTexts(response: Response): Promise<string[]> {
  const texts: string[] = []
  const location = response.headers.get('location')
  if (location !== null) {
    const description = new URL(location, ISSUER).searchParams.get('error_description')
    if (description !== null) texts.push(description)
  }
  const type = response.headers.get('content-type') ?? ''
  const body = await response.text()
  if (type.startsWith('application/json') && response.status >= 400) {
    const description = (JSON.parse(body) as { error_description?: unknown }).error_description
    if (typeof description === 'string') texts.push(description)
  }
  if (type.startsWith('text/html') && response.status >= 400) texts.push(body)
  const challenge = response.headers.get('www-authenticate')
  if (challenge !== null) texts.push(challenge)
  return texts
}

function apply(generated: Record<string, (m: string) => string | undefined>, m: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, make] of Object.entries(generated)) {
    const v = make(m)
    if (v !== undefined) out[name] = v
  }
  return out
}

function post(path: string, params: Record<string, string>, headers: Record<string, string> = {}): Request {
  return new Request(`${ISSUER}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params),
  })
}

function get(path: string, params: Record<string, string>, headers: Record<string, string> = {}): Request {
  return new Request(`${ISSUER}${path}?${new URLSearchParams(params)}`, { headers })
}

type Build = (fx: Fixture, params: Record<string, string>, m: string) => Request

const ENDPOINTS: Array<[string, Record<string, readonly string[]>, Build, number]> = [
  [
    'token',
    {
      grant_type: ['client_credentials', 'authorization_code', 'refresh_token'],
      scope: ['api1', 'openid'],
      code: ['a'.repeat(43)],
      redirect_uri: [RU],
      code_verifier: ['a'.repeat(43)],
      refresh_token: ['b'.repeat(43)],
      client_id: ['service', 'web'],
      client_secret: ['service-secret'],
    },
    (_fx, params) => post('/connect/token', params),
    0x17_08_01,
  ],
  [
    'token with Basic',
    { grant_type: ['client_credentials', 'refresh_token'], scope: ['api1'], refresh_token: ['b'.repeat(43)] },
    (_fx, params, m) => post('/connect/token', params, { authorization: basic(m, 'service-secret') }),
    0x17_08_02,
  ],
  [
    'introspection',
    { token: ['x'], token_type_hint: ['access_token', 'refresh_token'] },
    (_fx, params) => post('/connect/introspect', params, { authorization: basic('service', 'service-secret') }),
    0x17_08_03,
  ],
  [
    'revocation',
    { token: ['x'], token_type_hint: ['access_token', 'refresh_token'], client_id: ['spa'] },
    (_fx, params) => post('/connect/revoke', params),
    0x17_08_04,
  ],
  [
    'userinfo',
    { access_token: ['x'] },
    (_fx, params, m) => post('/connect/userinfo', params, params.access_token ? {} : { authorization: `Bearer ${m}` }),
    0x17_08_05,
  ],
  [
    'authorize',
    {
      response_type: ['code'],
      client_id: ['web'],
      redirect_uri: [RU],
      scope: ['openid', 'openid api1'],
      code_challenge: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
      code_challenge_method: ['S256'],
      prompt: ['none', 'login'],
      max_age: ['60'],
      response_mode: ['query'],
      id_token_hint: ['x.y.z'],
      login_hint: ['alice'],
      nonce: ['n'],
    },
    (_fx, params) => get('/connect/authorize', params),
    0x17_08_06,
  ],
  [
    'logout',
    { id_token_hint: ['x.y.z'], client_id: ['web'], post_logout_redirect_uri: [`${RU}`], state: ['s'] },
    (_fx, params) => get('/connect/logout', params),
    0x17_08_07,
  ],
  [
    'interaction',
    { uid: ['x'], csrf: ['y'], username: ['alice'], password: ['p'], decision: ['login'] },
    (fx, params) => post('/connect/interaction', params, { cookie: fx.browser.cookieHeader() }),
    0x17_08_08,
  ],
]

describe('#17.8 no request input in error descriptions', () => {
  it.each(ENDPOINTS)('#17.8 %s', async (_name, spec, build, seed) => {
    const fx = await fuzzSetup()
    let errors = 0
    await fc.assert(
      fc.asyncProperty(values(spec), marker, async (generated, m) => {
        const response = await fx.service.fetch(build(fx, apply(generated, m), m))
        expect(response.status).toBeLessThan(500)
        for (const text of await errorTexts(response)) {
          errors++
          expect(text).not.toContain(m)
          expect(text.toLowerCase()).not.toContain(m.toLowerCase().slice(2, 10))
        }
      }),
      settings(seed, 200),
    )
    expect(errors).toBeGreaterThan(10)
  })
})
