import { describe, expect, it } from 'vitest'
import { OAuthError } from '../../src/errors.ts'
import {
  allValues,
  bearerToken,
  escapeHtml,
  formPairs,
  mediaType,
  noStoreJson,
  parameterName,
  parseParams,
  readBody,
  readForm,
} from '../../src/http.ts'

const LIMITS = { maxBodyBytes: 1024, maxParameterLength: 64 }
const URL_ = 'https://auth.example.test/connect/token'
const FORM = 'application/x-www-form-urlencoded'

function post(body: BodyInit | null, contentType: string | null = FORM, headers: Record<string, string> = {}): Request {
  const init: RequestInit & { duplex?: 'half' } = { method: 'POST', body, headers: { ...headers } }
  if (body instanceof ReadableStream) init.duplex = 'half'
  const request = new Request(URL_, init)
  if (contentType === null) request.headers.delete('content-type')
  else request.headers.set('content-type', contentType)
  return request
}

/** A body delivered in chunks with no Content-Length, as a chunked upload would be. */
function stream(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
      controller.close()
    },
  })
}

async function thrown(promise: Promise<unknown>): Promise<OAuthError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(OAuthError)
  return err as OAuthError
}

describe('readForm', () => {
  it('parses a form body, decoding + and percent-escapes', async () => {
    const params = await readForm(post('grant_type=client_credentials&scope=api1+api2&x=%E2%9C%93%2B%26'), LIMITS)
    expect(Object.fromEntries(params)).toEqual({ grant_type: 'client_credentials', scope: 'api1 api2', x: '✓+&' })
  })

  it('TOK-06: a repeated parameter → invalid_request naming it', async () => {
    const err = await thrown(readForm(post('grant_type=client_credentials&scope=a&scope=b'), LIMITS))
    expect(err).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(err.message).toContain('scope')
  })

  it('TOK-06: a repeated parameter is rejected even when both values are equal', async () => {
    const err = await thrown(readForm(post('grant_type=a&grant_type=a'), LIMITS))
    expect(err.code).toBe('invalid_request')
  })

  it('RFC 6749 §3.1: empty values are treated as absent', async () => {
    const params = await readForm(post('grant_type=client_credentials&scope=&client_secret=&flag'), LIMITS)
    expect(params.get('grant_type')).toBe('client_credentials')
    expect(params.has('scope')).toBe(false)
    expect(params.has('client_secret')).toBe(false)
    expect(params.has('flag')).toBe(false)
  })

  it('an empty body is an empty parameter set', async () => {
    expect((await readForm(post(''), LIMITS)).size).toBe(0)
    expect((await readForm(post(null), LIMITS)).size).toBe(0)
  })

  it('a value longer than maxParameterLength → invalid_request; exactly the limit is fine', async () => {
    expect((await readForm(post(`token=${'a'.repeat(64)}`), LIMITS)).get('token')).toHaveLength(64)
    const err = await thrown(readForm(post(`token=${'a'.repeat(65)}`), LIMITS))
    expect(err).toMatchObject({ code: 'invalid_request', status: 400 })
  })

  it('a body over the limit → 413 invalid_request (declared Content-Length)', async () => {
    const request = post('a=1', FORM, { 'content-length': '1025' })
    const err = await thrown(readForm(request, LIMITS))
    expect(err).toMatchObject({ code: 'invalid_request', status: 413 })
  })

  it('a body over the limit → 413 invalid_request (no Content-Length, streamed)', async () => {
    const chunk = `a=${'x'.repeat(60)}&`
    const err = await thrown(readForm(post(stream(...Array.from({ length: 20 }, () => chunk))), LIMITS))
    expect(err).toMatchObject({ code: 'invalid_request', status: 413 })
  })

  it('a body of exactly the limit is read; one byte more is 413', async () => {
    const exact = `c=${'q'.repeat(10)}`.padEnd(LIMITS.maxBodyBytes, '&')
    expect(new TextEncoder().encode(exact)).toHaveLength(LIMITS.maxBodyBytes)
    expect((await readForm(post(exact), LIMITS)).get('c')).toBe('q'.repeat(10))
    expect((await readForm(post(stream(exact.slice(0, 500), exact.slice(500))), LIMITS)).get('c')).toBe('q'.repeat(10))
    const over = await thrown(readForm(post(`${exact}&`), LIMITS))
    expect(over).toMatchObject({ code: 'invalid_request', status: 413 })
    const overStreamed = await thrown(readForm(post(stream(exact, '&')), LIMITS))
    expect(overStreamed.status).toBe(413)
  })

  it('multi-byte characters count in bytes, not characters', async () => {
    // 400 × "✓" is 400 characters but 1200 bytes.
    const err = await thrown(readForm(post(`a=${'✓'.repeat(400)}`), { maxBodyBytes: 1024, maxParameterLength: 4096 }))
    expect(err.status).toBe(413)
  })

  it('a body stream that fails → invalid_request', async () => {
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('connection reset'))
      },
    })
    const err = await thrown(readForm(post(failing), LIMITS))
    expect(err).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(err.message).not.toContain('connection reset')
  })

  it.each([
    ['application/json', 'application/json'],
    ['text/plain', 'text/plain'],
    ['multipart/form-data', 'multipart/form-data; boundary=x'],
    ['no Content-Type', null],
    ['a near miss', 'application/x-www-form-urlencoded-extra'],
  ])('#17.6 TOK-01: %s → 400 invalid_request', async (_, type) => {
    const err = await thrown(readForm(post('grant_type=client_credentials', type), LIMITS))
    expect(err).toMatchObject({ code: 'invalid_request', status: 400 })
    // names the type expected, never the one sent
    expect(err.message).toBe('the body must be application/x-www-form-urlencoded')
  })

  it.each([
    'application/x-www-form-urlencoded;charset=UTF-8',
    'Application/X-WWW-Form-URLEncoded',
    ' application/x-www-form-urlencoded ; charset=utf-8',
  ])('accepts the media type %j', async (type) => {
    expect((await readForm(post('a=1', type), LIMITS)).get('a')).toBe('1')
  })

  it('does not read the body of a wrong content type', async () => {
    const request = post(stream('a=1'), 'application/json')
    await thrown(readForm(request, LIMITS))
    expect(request.bodyUsed).toBe(false)
  })
})

describe('readForm with trustContentLength (the server in front holds bodies to Content-Length)', () => {
  const TRUSTED = { ...LIMITS, trustContentLength: true }
  const declared = (body: string) => ({ 'content-length': String(new TextEncoder().encode(body).length) })

  it('reads a declared body whole through text(), decoding UTF-8', async () => {
    const body = 'a=%E2%9C%93&b=%C3%A9t%C3%A9&c=✓'
    const request = post(body, FORM, declared(body))
    const params = await readForm(request, TRUSTED)
    expect(Object.fromEntries(params)).toEqual({ a: '✓', b: 'été', c: '✓' })
    expect(request.bodyUsed).toBe(true)
  })

  it('a declared length over the limit → 413 without reading the body', async () => {
    const request = post('a=1', FORM, { 'content-length': '1025' })
    const err = await thrown(readForm(request, TRUSTED))
    expect(err).toMatchObject({ code: 'invalid_request', status: 413 })
    expect(request.bodyUsed).toBe(false)
  })

  it('a body of exactly the limit is read', async () => {
    const exact = `c=${'q'.repeat(10)}`.padEnd(LIMITS.maxBodyBytes, '&')
    expect((await readForm(post(exact, FORM, declared(exact)), TRUSTED)).get('c')).toBe('q'.repeat(10))
  })

  it('a text longer than the limit is refused even if its declared length was not', async () => {
    // A host adapter that does not hold the body to its Content-Length: still no unbounded read.
    const long = `a=${'x'.repeat(2000)}`
    const request = post(long, FORM)
    Object.defineProperty(request, 'headers', { value: new Headers({ 'content-type': FORM, 'content-length': '10' }) })
    const err = await thrown(readForm(request, TRUSTED))
    expect(err.status).toBe(413)
  })

  it('without a numeric Content-Length the streamed, counted read is used', async () => {
    const chunk = `a=${'x'.repeat(60)}&`
    const err = await thrown(readForm(post(stream(...Array.from({ length: 20 }, () => chunk))), TRUSTED))
    expect(err.status).toBe(413)
  })

  it('a body that fails to read → invalid_request', async () => {
    const request = post('a=1', FORM, { 'content-length': '3' })
    Object.defineProperty(request, 'text', { value: () => Promise.reject(new Error('connection reset')) })
    const err = await thrown(readForm(request, TRUSTED))
    expect(err).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(err.message).not.toContain('connection reset')
  })
})

describe('readBody', () => {
  it('joins chunks in order', async () => {
    const bytes = await readBody(post(stream('ab', 'cd', 'ef')), 100)
    expect(new TextDecoder().decode(bytes)).toBe('abcdef')
  })
})

describe('formPairs (#44 item 4: text with nothing to decode is split without URLSearchParams)', () => {
  /** What the WHATWG urlencoded parser gives, keeping a leading `?` as a name's first character. */
  const parsed = (text: string): [string, string][] => [...new URLSearchParams(`&${text}`)]
  const pieces = [
    '',
    'a',
    '=',
    '&',
    'b=c',
    '==',
    '&&',
    '?',
    'x=',
    '=y',
    'é',
    '😀',
    '%41',
    '+',
    'a+b',
    '%zz',
    ' ',
    '\uD800',
  ]

  it('gives exactly the pairs URLSearchParams gives, for every joining of these pieces', () => {
    let checked = 0
    for (const a of pieces)
      for (const b of pieces)
        for (const c of pieces) {
          const text = a + b + c
          expect([...formPairs(text)], JSON.stringify(text)).toEqual(parsed(text))
          checked++
        }
    expect(checked).toBe(pieces.length ** 3)
  })

  it('a token request: names and values as sent, empty pairs skipped, the first = splits', () => {
    const text = '&grant_type=client_credentials&&scope=api1 api2&empty=&flag&x=a=b&?q=1'
    expect([...formPairs(text)]).toEqual([
      ['grant_type', 'client_credentials'],
      ['scope', 'api1 api2'],
      ['empty', ''],
      ['flag', ''],
      ['x', 'a=b'],
      ['?q', '1'],
    ])
    expect([...formPairs(text)]).toEqual(parsed(text))
  })
})

describe('parseParams', () => {
  it('bad percent-encoding is kept literally rather than throwing', () => {
    expect(parseParams('a=%zz&b=%E0%A4%A&c=%', 64).get('a')).toBe('%zz')
  })

  it('a repeated name is detected even when the first value was empty', () => {
    expect(() => parseParams('a=&a=1', 64)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
  })

  it('#17.8 the error names a known parameter, and no other name the request chose', () => {
    expect(() => parseParams('scope=a&scope=b', 64)).toThrow(/^parameter scope is repeated$/)
    expect(() => parseParams('a"\\b=1&a"\\b=2', 64)).toThrow(/^a parameter the service does not use is repeated$/)
    expect(() => parseParams(`visit-evil.example=${'x'.repeat(65)}`, 64)).toThrow(
      /^a parameter the service does not use is too long$/,
    )
    expect(() => parseParams('state=%00', 64)).toThrow(/^parameter state contains a character that is not allowed$/)
  })

  it('#19 RFC 8707 §2: a name declared multi-valued keeps every non-empty value; others still may not repeat', () => {
    const multi = new Set(['resource'])
    const params = parseParams('resource=https://a/&resource=&grant_type=x&resource=https://b/', 64, multi)
    expect(allValues(params, 'resource')).toEqual(['https://a/', 'https://b/'])
    expect(params.get('resource')).toBe('https://a/')
    expect(allValues(params, 'grant_type')).toEqual(['x'])
    expect(allValues(params, 'scope')).toEqual([])
    expect(allValues(parseParams('resource=', 64, multi), 'resource')).toEqual([])
    expect(() => parseParams('resource=a&scope=b&scope=c', 64, multi)).toThrow(/^parameter scope is repeated$/)
    // not declared: repeated resource is rejected like any other parameter
    expect(() => parseParams('resource=a&resource=b', 64)).toThrow(/^parameter resource is repeated$/)
    // each value is held to the same limits
    expect(() => parseParams(`resource=a&resource=${'x'.repeat(65)}`, 64, multi)).toThrow(
      /^parameter resource is too long$/,
    )
    expect(() => parseParams('resource=a&resource=%00', 64, multi)).toThrow(
      /^parameter resource contains a character that is not allowed$/,
    )
  })
})

describe('helpers', () => {
  it.each([
    ['application/json; charset=utf-8', 'application/json'],
    ['TEXT/HTML', 'text/html'],
    ['', ''],
  ])('mediaType(%j) → %j', (value, expected) => {
    expect(mediaType(value)).toBe(expected)
  })

  it('#17.8 parameterName shows protocol names only', () => {
    expect(parameterName('redirect_uri')).toBe('parameter redirect_uri')
    expect(parameterName('constructor')).toBe('a parameter the service does not use')
    expect(parameterName('Call +1 555 0100')).toBe('a parameter the service does not use')
  })

  it.each([
    ['Bearer abc.def-ghi_~+/=', 'abc.def-ghi_~+/='],
    ['bearer abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['Bearer  abc ', 'abc'],
    ['Bearer', undefined],
    ['Bearer ', undefined],
    ['Bearer a b', undefined],
    ['Basic abc', undefined],
    ['Bearer a,b', undefined],
  ])('bearerToken(%j) → %j', (header, expected) => {
    expect(bearerToken(header)).toBe(expected)
  })

  it('bearerToken(null) → undefined', () => {
    expect(bearerToken(null)).toBeUndefined()
  })

  it('TOK-02: noStoreJson sets JSON and no-store headers', async () => {
    const response = noStoreJson({ a: 1 })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(response.headers.get('pragma')).toBe('no-cache')
    expect(await response.json()).toEqual({ a: 1 })
  })

  it('escapeHtml escapes the five HTML-special characters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    )
  })
})
