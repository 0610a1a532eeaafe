/**
 * Fuzz: the service reads parameters exactly as the application/x-www-form-urlencoded parser does
 * (WHATWG URL §5.1), including a leading `?` of a body or a second `?` of a query, which belong to
 * the first name. A request only succeeds if the standard parse of what was sent says so.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PLRU, RU, basic } from '../helpers/service.ts'
import { type Param, serialize, settings } from './arbitraries.ts'
import { STORE_CHOICES } from '../helpers/stores.ts'
import { ISSUER, fuzzSetup, runsOn } from './fixtures.ts'

const prefix = fc.constantFrom('', '', '?', '??', '?&', '&', '&&')

function shuffled(list: Param[]): fc.Arbitrary<Param[]> {
  return fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length })
}

function p(name: string, value: string): Param {
  return { name, value, encoding: 'form', bare: false }
}

/** The standard parse of urlencoded text (no leading `?` dropped). */
function standard(text: string): URLSearchParams {
  return new URLSearchParams(`&${text}`)
}

describe.each(STORE_CHOICES)('fuzz ($name store): parameters are read as the urlencoded parser reads them', (kind) => {
  it.skipIf(kind.skip)('token, authorize (POST) and logout (GET)', async () => {
    const fx = await fuzzSetup(kind)
    const requests = {
      token: [p('grant_type', 'client_credentials'), p('scope', 'api1')],
      authorize: [
        p('response_type', 'code'),
        p('client_id', 'web'),
        p('redirect_uri', RU),
        p('scope', 'openid'),
        p('code_challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'),
        p('code_challenge_method', 'S256'),
      ],
      logout: [p('id_token_hint', fx.idToken), p('post_logout_redirect_uri', PLRU)],
    }
    const cases = fc
      .constantFrom('token' as const, 'authorize' as const, 'logout' as const)
      .chain((kind) =>
        fc.tuple(prefix, shuffled(requests[kind])).map(([pre, ps]) => ({ kind, text: pre + serialize(ps) })),
      )
    await fc.assert(
      fc.asyncProperty(cases, async ({ kind, text }) => {
        const std = standard(text)
        // the request is valid exactly when the standard parse finds its required parameters
        // (scope is optional for client_credentials: every other parameter here is required)
        const required = requests[kind].filter(({ name }) => kind !== 'token' || name === 'grant_type')
        const valid = required.every(({ name, value }) => std.get(name) === value)
        const form = { 'content-type': 'application/x-www-form-urlencoded' }
        if (kind === 'token') {
          const response = await fx.service.fetch(
            new Request(`${ISSUER}/connect/token`, {
              method: 'POST',
              headers: { ...form, authorization: basic('service', 'service-secret') },
              body: text,
            }),
          )
          expect(response.status === 200).toBe(valid)
        } else if (kind === 'authorize') {
          const response = await fx.service.fetch(
            new Request(`${ISSUER}/connect/authorize`, { method: 'POST', headers: form, body: text }),
          )
          const location = response.headers.get('location') ?? ''
          const accepted = location.startsWith(`${ISSUER}/connect/interaction?`)
          expect(accepted).toBe(valid)
        } else {
          // `?` + text: the query string's own `?` is not part of it, any further one is
          const response = await fx.service.fetch(new Request(`${ISSUER}/connect/logout?${text}`))
          const redirected = response.status === 303
          expect(redirected).toBe(valid)
        }
      }),
      settings(0x6a7e_0700, runsOn(kind, 200)),
    )
  })
})
