/**
 * TOK-05 INT-09: a table-driven sweep of odd requests against the token, introspection and
 * revocation endpoints. Every one must be a 4xx application/json answer with a registered `error`
 * string, no-store, a Basic challenge on 401, and nothing may be logged as a server error.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { ISSUER, basic, makeService } from '../../helpers/service.ts'

const NQSCHAR = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
const FORM = 'application/x-www-form-urlencoded'
const GOOD = basic('service', 'service-secret')
const ERRORS = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'unsupported_token_type',
]

const ENDPOINTS = [
  ['token', `${ISSUER}/connect/token`],
  ['introspection', `${ISSUER}/connect/introspect`],
  ['revocation', `${ISSUER}/connect/revoke`],
] as const

let service: Awaited<ReturnType<typeof makeService>>['service']
const logged: unknown[] = []

beforeAll(async () => {
  ;({ service } = await makeService({ logger: { warn() {}, error: (...args: unknown[]) => void logged.push(args) } }))
})

function bytes(...parts: Array<string | number[]>): Uint8Array<ArrayBuffer> {
  const chunks = parts.map((p) => (typeof p === 'string' ? new TextEncoder().encode(p) : Uint8Array.from(p)))
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

function post(
  url: string,
  body: BodyInit | null,
  headers: Record<string, string> = { 'content-type': FORM },
  method = 'POST',
): Request {
  const init: RequestInit & { duplex?: 'half' } = { method, headers, body }
  if (body instanceof ReadableStream) init.duplex = 'half'
  return new Request(url, init)
}

const b64 = (value: string | number[]) =>
  typeof value === 'string' ? btoa(value) : btoa(String.fromCharCode(...value))

/** Requests that are wrong at every one of the three endpoints. */
const CASES: Array<[string, (url: string) => Request]> = [
  ['an empty body and no credentials', (url) => post(url, '')],
  ['no body at all', (url) => post(url, null)],
  ['a lone "="', (url) => post(url, '=')],
  ['only separators', (url) => post(url, '&&&&')],
  ['a lone "%"', (url) => post(url, '%')],
  ['bad percent-encoding everywhere', (url) => post(url, '%zz=%zz&client_id=%&client_secret=%G0')],
  ['raw invalid UTF-8', (url) => post(url, bytes('client_id=', [0xff, 0xfe, 0xfd], '&token=', [0xc3, 0x28]))],
  ['NUL bytes', (url) => post(url, 'client_id=%00&client_secret=%00&token=%00&grant_type=%00')],
  [
    'control characters in the client_id',
    (url) => post(url, 'client_id=%0D%0ASet-Cookie:%20x&client_secret=x&token=x'),
  ],
  [
    'a 4096-character client_id',
    (url) => post(url, `client_id=${'c'.repeat(4096)}&client_secret=x&token=x&grant_type=client_credentials`),
  ],
  [
    'a 4097-character parameter',
    (url) => post(url, `token=${'t'.repeat(4097)}`, { 'content-type': FORM, authorization: GOOD }),
  ],
  [
    'client_id __proto__',
    (url) => post(url, 'client_id=__proto__&client_secret=x&token=x&grant_type=client_credentials'),
  ],
  [
    'client_id constructor',
    (url) => post(url, 'client_id=constructor&client_secret=x&token=x&grant_type=client_credentials'),
  ],
  [
    'a non-ASCII client_id',
    (url) => post(url, 'client_id=%E2%9C%93%F0%9F%94%91&client_secret=x&token=x&grant_type=client_credentials'),
  ],
  [
    'client_secret without client_id',
    (url) => post(url, 'client_secret=service-secret&token=x&grant_type=client_credentials'),
  ],
  [
    'a confidential client without its secret',
    (url) => post(url, 'client_id=service&token=x&grant_type=client_credentials'),
  ],
  [
    '1000 small parameters and no credentials',
    (url) => post(url, Array.from({ length: 1000 }, (_, i) => `p${i}=1`).join('&')),
  ],
  [
    'the same parameter 500 times',
    (url) =>
      post(url, Array.from({ length: 500 }, () => 'token=x').join('&'), { 'content-type': FORM, authorization: GOOD }),
  ],
  [
    'valid credentials and a repeated parameter',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials&scope=a&scope=a', { 'content-type': FORM, authorization: GOOD }),
  ],
  [
    'valid credentials and Basic plus client_secret',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials&client_secret=service-secret', {
        'content-type': FORM,
        authorization: GOOD,
      }),
  ],
  [
    'a JSON body',
    (url) =>
      post(url, JSON.stringify({ token: 'x', grant_type: 'client_credentials' }), {
        'content-type': 'application/json',
        authorization: GOOD,
      }),
  ],
  [
    'a form body labelled JSON',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', { 'content-type': 'application/json', authorization: GOOD }),
  ],
  [
    'a JSON body labelled as a form',
    (url) =>
      post(url, '{"token":"x","grant_type":"client_credentials"}', { 'content-type': FORM, authorization: GOOD }),
  ],
  [
    'text/plain',
    (url) => post(url, 'token=x&grant_type=client_credentials', { 'content-type': 'text/plain', authorization: GOOD }),
  ],
  [
    'multipart/form-data',
    (url) => {
      const data = new FormData()
      data.set('token', 'x')
      data.set('grant_type', 'client_credentials')
      return new Request(url, { method: 'POST', body: data, headers: { authorization: GOOD } })
    },
  ],
  ['no content type', (url) => post(url, bytes('token=x&grant_type=client_credentials'), { authorization: GOOD })],
  ['a garbage content type', (url) => post(url, 'token=x', { 'content-type': ';;;/', authorization: GOOD })],
  [
    'an oversized body',
    (url) => post(url, `token=x&${'&'.repeat(20_000)}`, { 'content-type': FORM, authorization: GOOD }),
  ],
  [
    'an oversized streamed body',
    (url) => {
      const chunk = new TextEncoder().encode('&'.repeat(8192))
      return post(url, new ReadableStream<Uint8Array>({ pull: (c) => c.enqueue(chunk) }), {
        'content-type': FORM,
        authorization: GOOD,
      })
    },
  ],
  [
    'a body stream that fails',
    (url) =>
      post(url, new ReadableStream<Uint8Array>({ pull: (c) => c.error(new Error('connection reset')) }), {
        'content-type': FORM,
        authorization: GOOD,
      }),
  ],
  [
    'a non-numeric Content-Length',
    (url) =>
      post(url, 'client_id=nobody&client_secret=x&token=x&grant_type=client_credentials', {
        'content-type': FORM,
        'content-length': 'abc',
      }),
  ],
  [
    'Basic that is not base64',
    (url) => post(url, 'token=x&grant_type=client_credentials', { 'content-type': FORM, authorization: 'Basic ***' }),
  ],
  [
    'Basic without a colon',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', {
        'content-type': FORM,
        authorization: `Basic ${b64('service')}`,
      }),
  ],
  [
    'Basic with bad percent-encoding',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', {
        'content-type': FORM,
        authorization: `Basic ${b64('%zz:%zz')}`,
      }),
  ],
  [
    'Basic with invalid UTF-8',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', {
        'content-type': FORM,
        authorization: `Basic ${b64([0xff, 0x3a, 0xfe])}`,
      }),
  ],
  [
    'Basic with an empty id and secret',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', { 'content-type': FORM, authorization: `Basic ${b64(':')}` }),
  ],
  [
    'Basic with a huge credential',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', {
        'content-type': FORM,
        authorization: `Basic ${b64(`${'a'.repeat(6000)}:b`)}`,
      }),
  ],
  [
    'the scheme without credentials',
    (url) => post(url, 'token=x&grant_type=client_credentials', { 'content-type': FORM, authorization: 'Basic' }),
  ],
  [
    'a Bearer token instead of client credentials',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', { 'content-type': FORM, authorization: 'Bearer abc.def.ghi' }),
  ],
  [
    'a latin-1 Authorization header',
    (url) =>
      post(url, 'token=x&grant_type=client_credentials', { 'content-type': FORM, authorization: 'Basic \u00e9\u00e9' }),
  ],
  ['a public client', (url) => post(url, 'client_id=spa&token=x&grant_type=client_credentials&client_secret=x')],
]

const METHODS = ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']

describe('odd requests never yield a 5xx', () => {
  describe.each(ENDPOINTS)('%s endpoint', (_, url) => {
    it.each(CASES)('%s → 4xx JSON error', async (_, build) => {
      const response = await service.fetch(build(url))
      expect(response.status).toBeGreaterThanOrEqual(400)
      expect(response.status).toBeLessThan(500)
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      expect(response.headers.get('cache-control')).toBe('no-store')
      const body = (await response.json()) as Record<string, unknown>
      expect(typeof body.error).toBe('string')
      expect(ERRORS).toContain(body.error)
      expect(body.error_description).toMatch(NQSCHAR)
      expect(body).not.toHaveProperty('access_token')
      expect(body).not.toHaveProperty('active')
      if (response.status === 401) expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="[^"]*"$/)
    })

    it.each(METHODS)('%s → 405 JSON with Allow: POST', async (method) => {
      const response = await service.fetch(
        new Request(`${url}?token=x&grant_type=client_credentials`, { method, headers: { authorization: GOOD } }),
      )
      expect(response.status).toBe(405)
      expect(response.headers.get('allow')).toBe('POST')
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      expect(typeof ((await response.json()) as { error: unknown }).error).toBe('string')
    })
  })

  it('nothing was logged as a server error', () => {
    expect(logged).toEqual([])
  })
})
