/**
 * Fuzz: request bodies just under, at, just over and far over `limits.maxBodyBytes` (16384) at
 * every endpoint that reads a form, whole or streamed (with and without Content-Length, honest or
 * lying, and endless). Over the limit is 413 without reading the rest; at or under it is served.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { basic } from '../helpers/service.ts'
import { MAX_BODY_BYTES, settings, streamOf, utf8 } from './arbitraries.ts'
import { STORE_CHOICES } from '../helpers/stores.ts'
import { ISSUER, checkApi, checkBrowser, fuzzSetup, runsOn } from './fixtures.ts'

interface Target {
  path: string
  form: string
  authorization?: string
  browser: boolean
  /** Status when the body fits. */
  fits: number
}

const TARGETS: Target[] = [
  {
    path: '/connect/token',
    form: 'grant_type=client_credentials&scope=api1',
    authorization: basic('service', 'service-secret'),
    browser: false,
    fits: 200,
  },
  {
    path: '/connect/introspect',
    form: 'token=abc',
    authorization: basic('service', 'service-secret'),
    browser: false,
    fits: 200,
  },
  {
    path: '/connect/revoke',
    form: 'token=abc',
    authorization: basic('service', 'service-secret'),
    browser: false,
    fits: 200,
  },
  { path: '/connect/userinfo', form: 'access_token=abc', browser: false, fits: 401 },
  {
    path: '/connect/authorize',
    form: 'response_type=code&client_id=web&redirect_uri=https%3A%2F%2Frp.example.test%2Fcb&scope=openid&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256',
    browser: true,
    fits: 303,
  },
  { path: '/connect/logout', form: 'state=s', browser: true, fits: 200 },
  { path: '/connect/interaction', form: 'uid=nope&csrf=nope', browser: true, fits: 400 },
]

const LIMIT = MAX_BODY_BYTES

const body = fc.record({
  target: fc.constantFrom(...TARGETS),
  size: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 1000, 4 * LIMIT, 1_000_000) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: LIMIT + 64 }) },
    { weight: 1, arbitrary: fc.constant(Number.POSITIVE_INFINITY) },
  ),
  /** Padding: empty pairs (`&&&`) or parameters of at most 4096 characters. */
  padding: fc.constantFrom('&', 'params'),
  stream: fc.boolean(),
  chunk: fc.constantFrom(1, 7, 1000, 4096, 16_384, 65_536),
  contentLength: fc.constantFrom('none', 'exact', 'smaller', 'larger', 'garbage', 'huge'),
})

function pad(form: string, size: number, padding: string): Uint8Array<ArrayBuffer> {
  let text = form
  let i = 0
  while (padding === 'params' && text.length < size) {
    const room = size - text.length - `&p${i}=`.length
    if (room < 1) break
    text += `&p${i}=${'a'.repeat(Math.min(room, 4096))}`
    i++
  }
  return utf8(text.padEnd(Math.max(size, text.length), '&'))
}

describe.each(STORE_CHOICES)('fuzz ($name store): body size limit', (kind) => {
  it.skipIf(kind.skip)('413 past maxBodyBytes, served at or under it, whatever the delivery', async () => {
    const fx = await fuzzSetup(kind)
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const endless = b.size === Number.POSITIVE_INFINITY
        const bytes = endless ? undefined : pad(b.target.form, b.size, b.padding)
        const actual = bytes?.length ?? Number.POSITIVE_INFINITY
        const declared = endless
          ? { none: undefined, exact: undefined, smaller: '100', larger: undefined, garbage: 'abc', huge: '1e9' }[
              b.contentLength
            ]
          : {
              none: undefined,
              exact: String(actual),
              smaller: String(Math.max(0, actual - 10)),
              larger: String(actual + 10),
              garbage: 'abc',
              huge: '1e9',
            }[b.contentLength]
        const headers = new Headers({ 'content-type': 'application/x-www-form-urlencoded' })
        if (b.target.authorization) headers.set('authorization', b.target.authorization)
        if (declared !== undefined) headers.set('content-length', declared)
        const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers }
        if (endless || b.stream) {
          init.body = streamOf(bytes, b.chunk)
          init.duplex = 'half'
        } else {
          init.body = bytes as Uint8Array<ArrayBuffer>
        }
        const response = await fx.service.fetch(new Request(`${ISSUER}${b.target.path}`, init))
        const text = await response.text()
        if (b.target.browser) checkBrowser(response, text, { redirectUris: [], interaction: true })
        else checkApi(response, text, 'POST')
        const over = actual > LIMIT || (declared !== undefined && Number(declared) > LIMIT)
        expect(response.status, text.slice(0, 300)).toBe(over ? 413 : b.target.fits)
      }),
      settings(0x6a7e_0400, runsOn(kind, 250)),
    )
  })
})
