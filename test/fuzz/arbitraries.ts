/**
 * @module fuzz/arbitraries
 * fast-check arbitraries for hostile HTTP input: texts with an HTML marker, broken percent-encoding,
 * invalid UTF-8, repeated and over-long parameters, odd methods, Authorization, Content-Type and
 * Cookie headers, and bodies delivered whole or streamed, with honest or lying Content-Length.
 */
import fc from 'fast-check'

/** Put into values everywhere: an HTML page must never contain it unescaped. */
export const MARKER = `<x-fuzz-"'>`

/** What an escaped page must never contain: the marker's tag, or its quotes left raw. */
export const RAW_MARKER = /<x-fuzz|x-fuzz-["']/

/** Default limits of the service (src/config/parse.ts). */
export const MAX_BODY_BYTES = 16_384
export const MAX_PARAMETER_LENGTH = 4096

/** fast-check settings: fixed seed (printed with the counterexample on failure), bounded runs. */
export function settings(seed: number, numRuns: number): fc.Parameters<unknown> {
  return { seed, numRuns }
}

const encoder = new TextEncoder()

/** UTF-8 bytes of a string (lone surrogates become U+FFFD). */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text) as Uint8Array<ArrayBuffer>
}

/** Standard base64 of bytes. */
export function base64(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

/** Percent-encodes every byte outside the unreserved set; `form` writes spaces as `+`. */
export function percentEncode(text: string, form = false): string {
  let out = ''
  for (const byte of utf8(text)) {
    const c = String.fromCharCode(byte)
    if (/[A-Za-z0-9\-._~]/.test(c)) out += c
    else if (form && byte === 0x20) out += '+'
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/** Concatenates byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Texts

const SPECIAL_TEXTS = [
  MARKER,
  `${MARKER}${MARKER}`,
  '%',
  '%G1',
  '%E2%82',
  '%E2%82%AC',
  '%00',
  '%ff',
  '%%',
  '%2',
  '+',
  '&',
  '=',
  '&=&',
  ';',
  ' ',
  '\t',
  '\u0000',
  '\ud800',
  '\udfff',
  '\uffff',
  '\u202e',
  'é',
  '😀',
  '\r\n',
  '<script>alert(1)</script>',
  '"',
  "'",
  '`',
  '\\',
  '../',
  'javascript:alert(1)',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'null',
  'undefined',
  '[]',
  '{}',
  '0',
  '-1',
  '1e309',
] as const

/** A short hostile text fragment. */
export const atom: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_TEXTS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~-]{1,16}$/) },
)

/** A hostile text: a few fragments joined. */
export const text: fc.Arbitrary<string> = fc.array(atom, { minLength: 0, maxLength: 4 }).map((parts) => parts.join(''))

/** Values around and far past `limits.maxParameterLength`. */
export const longValue: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(MAX_PARAMETER_LENGTH - 1, MAX_PARAMETER_LENGTH, MAX_PARAMETER_LENGTH + 1, 6000, 20_000),
    fc.constantFrom('a', 'é', MARKER, '%41', '%'),
  )
  .map(([length, unit]) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length))

/** A value for a parameter: usually from `good` (to get past the first checks) or hostile. */
export function paramValue(good: readonly string[] = [], goodWeight = 5): fc.Arbitrary<string> {
  const arbs: fc.WeightedArbitrary<string>[] = [
    { weight: 4, arbitrary: text },
    { weight: 1, arbitrary: longValue },
    { weight: 1, arbitrary: fc.constant('') },
  ]
  if (good.length > 0) {
    arbs.push({ weight: goodWeight, arbitrary: fc.constantFrom(...good) })
    // a good value with hostile text around it
    arbs.push({
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...good), atom, fc.boolean())
        .map(([g, a, before]) => (before ? a + g : g + a)),
    })
  }
  return fc.oneof(...arbs)
}

// ---------------------------------------------------------------------------------------------
// Query strings and form bodies

/** How one name or value is written on the wire. */
export type Encoding = 'form' | 'component' | 'raw'

export interface Param {
  name: string
  value: string
  encoding: Encoding
  /** `name` alone, without `=`. */
  bare: boolean
}

function write(text: string, encoding: Encoding): string {
  if (encoding === 'raw') return text
  return percentEncode(text, encoding === 'form')
}

/** The wire text of parameters (`a=b&c=d`), with the given encodings. */
export function serialize(params: readonly Param[]): string {
  return params
    .map((p) => (p.bare ? write(p.name, p.encoding) : `${write(p.name, p.encoding)}=${write(p.value, p.encoding)}`))
    .join('&')
}

/**
 * Parameters for an endpoint: names mostly from `spec` (so repeats happen), values from its
 * good values or hostile texts; sometimes one parameter repeated on purpose.
 */
export function params(spec: Readonly<Record<string, readonly string[]>>, maxLength = 8): fc.Arbitrary<Param[]> {
  const names = Object.keys(spec)
  const param: fc.Arbitrary<Param> = fc
    .tuple(
      names.length > 0
        ? fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: text })
        : text,
      fc.nat(),
      fc.constantFrom<Encoding>('form', 'form', 'form', 'component', 'raw'),
      fc.nat({ max: 20 }),
    )
    .chain(([name, , encoding, bare]) =>
      paramValue(Object.hasOwn(spec, name) ? (spec[name] ?? []) : []).map((value) => ({
        name,
        value,
        encoding,
        bare: bare === 0,
      })),
    )
  return fc
    .tuple(fc.array(param, { maxLength }), fc.nat({ max: 5 }))
    .map(([list, repeat]) => (repeat === 0 && list.length > 0 ? [...list, list[0] as Param] : list))
}

/** Bytes that are not valid UTF-8: lone continuation bytes, truncated sequences, overlongs, surrogates. */
export const invalidUtf8: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.oneof(
  fc
    .constantFrom(
      [0xff],
      [0xfe, 0xff],
      [0x80],
      [0xc3],
      [0xe2, 0x82],
      [0xf0, 0x9f, 0x98],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0x00],
    )
    .map((bytes) => Uint8Array.from(bytes)),
  fc.uint8Array({ minLength: 1, maxLength: 8 }).map((b) => Uint8Array.from(b, (x) => x | 0x80)),
)

/**
 * Parameters shaped like a real request: each name of `template` present (usually with a good
 * value, sometimes hostile or missing), a few random extra parameters, sometimes one repeated.
 */
export function templateParams(template: Readonly<Record<string, readonly string[]>>): fc.Arbitrary<Param[]> {
  const fields = Object.entries(template).map(([name, good]) =>
    fc
      .record({
        keep: fc.nat({ max: 19 }),
        value: paramValue(good, 60),
        encoding: fc.constantFrom<Encoding>('form', 'form', 'form', 'component', 'raw'),
      })
      .map(({ keep, value, encoding }) => (keep === 0 ? undefined : { name, value, encoding, bare: false })),
  )
  return fc
    .tuple(fc.tuple(...fields), params({}, 2), fc.nat({ max: 7 }), fc.nat())
    .map(([chosen, extra, repeat, at]) => {
      const list = [...chosen.filter((p): p is Param => p !== undefined), ...extra]
      if (repeat === 0 && list.length > 0) list.push(list[at % list.length] as Param)
      return list
    })
}

/** Form text as bytes, sometimes with invalid UTF-8 spliced in. */
export function formBytes(list: fc.Arbitrary<Param[]>): fc.Arbitrary<Uint8Array<ArrayBuffer>> {
  return fc
    .tuple(
      list,
      fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(invalidUtf8, fc.nat()) }),
    )
    .map(([ps, corrupt]) => {
      const bytes = utf8(serialize(ps))
      if (!corrupt) return bytes
      const [bad, at] = corrupt
      const i = bytes.length === 0 ? 0 : at % (bytes.length + 1)
      return concat(bytes.subarray(0, i), bad, bytes.subarray(i))
    })
}

/** Bodies that are not forms at all. */
export const otherBody: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.oneof(
  fc.constant(new Uint8Array(0)),
  fc.uint8Array({ maxLength: 300 }).map((b) => Uint8Array.from(b)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => utf8(JSON.stringify(v) ?? 'null')),
  fc
    .tuple(text, text)
    .map(([name, value]) =>
      utf8(`------fuzz\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n------fuzz--\r\n`),
    ),
)

// ---------------------------------------------------------------------------------------------
// Headers

/** A string a Headers object accepts as a value (Latin-1, no NUL/CR/LF). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({
    unit: fc
      .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }), fc.constant(0x09))
      .map((c) => String.fromCharCode(c)),
    maxLength: 64,
  }),
  fc.constantFrom(MARKER, '%', '%G1', '%E2%82', '=', ';', ',', '""', '\\'),
)

/** Content-Type values: the form type with odd spelling and parameters, others, none. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom(
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded; charset=utf-8',
      'application/x-www-form-urlencoded;charset=ISO-8859-1',
      'Application/X-WWW-Form-Urlencoded',
      'application/x-www-form-urlencoded ; foo="bar;baz"',
      'application/x-www-form-urlencoded;',
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      undefined,
      'multipart/form-data; boundary=----fuzz',
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'text/html',
      'application/x-www-form-urlencodedx',
      'application/x-www-form-urlencoded, text/plain',
      '*/*',
      ';',
    ),
  },
  { weight: 1, arbitrary: headerValue },
)

/** A compact-JWS-shaped string: random header and payload JSON, random signature. */
export function jwtLike(kids: readonly string[]): fc.Arbitrary<string> {
  const b64url = (value: string) => base64(utf8(value)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  const header = fc.record(
    {
      alg: fc.oneof(fc.constantFrom('none', 'RS256', 'HS256', 'ES256', 'PS256', 'EdDSA', ''), text),
      kid: fc.oneof(
        kids.length > 0 ? fc.constantFrom(...kids) : fc.constant('k'),
        text,
        fc.integer(),
        fc.constant(null),
      ),
      typ: fc.oneof(fc.constantFrom('at+jwt', 'JWT', 'application/at+jwt'), text),
      crit: fc.constant(['exp']),
      b64: fc.boolean(),
    },
    { requiredKeys: ['alg'] },
  )
  const payload = fc.oneof(
    fc.record(
      {
        iss: fc.oneof(fc.constant('https://auth.example.test'), text),
        sub: fc.oneof(fc.constant('user-1'), text, fc.integer()),
        aud: fc.oneof(fc.constantFrom('web', 'api1', 'service'), fc.array(text, { maxLength: 2 })),
        exp: fc.oneof(fc.integer(), fc.constant(4_000_000_000), fc.double()),
        iat: fc.integer(),
        jti: text,
        client_id: fc.oneof(fc.constantFrom('web', 'service'), text),
        scope: fc.oneof(fc.constantFrom('openid', 'api1', 'openid profile'), text, fc.integer()),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue({ maxDepth: 2 }),
  )
  return fc
    .tuple(
      fc.oneof(
        header.map((h) => JSON.stringify(h)),
        text,
      ),
      fc.oneof(
        payload.map((p) => JSON.stringify(p) ?? 'null'),
        text,
      ),
      fc.oneof(
        fc.uint8Array({ maxLength: 64 }).map((b) => base64(b)),
        fc.constant(''),
      ),
    )
    .map(
      ([h, p, s]) =>
        `${b64url(h)}.${b64url(p)}.${s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '') || 'AA'}`,
    )
}

/** Variations of a real token: truncated, a character flipped, padded, re-cased, split. */
export function mutated(tokens: readonly string[]): fc.Arbitrary<string> {
  if (tokens.length === 0) return text
  return fc.tuple(fc.constantFrom(...tokens), fc.nat(), fc.constantFrom(0, 1, 2, 3, 4, 5)).map(([token, at, how]) => {
    const i = at % Math.max(token.length, 1)
    switch (how) {
      case 0:
        return token.slice(0, i)
      case 1:
        return token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1)
      case 2:
        return `${token}=`
      case 3:
        return token.toUpperCase()
      case 4:
        return `${token}.${token}`
      default:
        return ` ${token} `
    }
  })
}

/** Authorization header values: none, valid ones, Basic with random bytes, other schemes, garbage. */
export function authorization(
  valid: readonly string[],
  tokens: readonly string[],
  kids: readonly string[],
): fc.Arbitrary<string | undefined> {
  const arbs: fc.WeightedArbitrary<string | undefined>[] = [
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 48 }).map((b) => `Basic ${base64(b)}`) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.oneof(fc.constantFrom('web', 'service', 'spa', 'api1'), text),
          fc.oneof(fc.constantFrom('web-secret', 'service-secret'), text),
          fc.boolean(),
        )
        .map(
          ([id, secret, encode]) =>
            `Basic ${base64(utf8(encode ? `${percentEncode(id, true)}:${percentEncode(secret, true)}` : `${id}:${secret}`))}`,
        ),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom(
            'Basic',
            'basic',
            'BASIC',
            'Bearer',
            'bearer',
            'Digest',
            'DPoP',
            'Negotiate',
            'Basic ',
            'Bearer\t',
            '',
          ),
          headerValue,
        )
        .map(([scheme, value]) => `${scheme} ${value}`),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'Basic',
        'Basic ',
        'Basic =',
        'Basic ====',
        'Basic Og==',
        'Basic OjpBOg',
        `Basic ${btoa('web:%ZZ')}`,
        `Basic ${btoa('%E2%82:x')}`,
        `Basic ${btoa('web')}`,
        'Basic d2ViOndlYi1zZWNyZXQ', // unpadded
        'Bearer',
        'Bearer ',
        'Bearer a b',
        'Bearer ===',
        ', Basic d2ViOndlYi1zZWNyZXQ=',
      ),
    },
    { weight: 2, arbitrary: jwtLike(kids).map((t) => `Bearer ${t}`) },
    { weight: 1, arbitrary: headerValue },
  ]
  if (valid.length > 0) arbs.push({ weight: 4, arbitrary: fc.constantFrom(...valid) })
  if (tokens.length > 0) {
    arbs.push({ weight: 2, arbitrary: fc.constantFrom(...tokens).map((t) => `Bearer ${t}`) })
    arbs.push({ weight: 2, arbitrary: mutated(tokens).map((t) => `Bearer ${t}`) })
  }
  return fc.oneof(...arbs)
}

const COOKIE_NAMES = [
  'gatehouse.session',
  'gatehouse.session.browser',
  ' gatehouse.session',
  'GATEHOUSE.SESSION',
  '__proto__',
  'a',
]

/** Cookie header values: none, garbage, real cookies (alone or among garbage), very long and very many. */
export function cookie(real: readonly string[]): fc.Arbitrary<string | undefined> {
  const pair = fc
    .tuple(
      fc.oneof(fc.constantFrom(...COOKIE_NAMES), fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,16}$/)),
      fc.oneof(
        fc.stringMatching(/^[A-Za-z0-9_-]{14,130}$/),
        headerValue.map((v) => v.replace(/;/g, '')),
      ),
      fc.boolean(),
    )
    .map(([name, value, eq]) => (eq ? `${name}=${value}` : name))
  const arbs: fc.WeightedArbitrary<string | undefined>[] = [
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.array(pair, { minLength: 1, maxLength: 6 }).map((ps) => ps.join('; ')) },
    { weight: 1, arbitrary: headerValue },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...COOKIE_NAMES),
          fc.constantFrom(4096, 8192, 65_536, 300_000),
          fc.constantFrom('A', '=', ';', 'é'),
        )
        .map(([name, length, unit]) => `${name}=${unit.repeat(length)}`),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 100, max: 3000 })
        .map((n) => Array.from({ length: n }, (_, i) => `c${i}=v${i}`).join('; ')),
    },
  ]
  if (real.length > 0) {
    arbs.push({ weight: 3, arbitrary: fc.constantFrom(...real) })
    arbs.push({
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...real), fc.array(pair, { maxLength: 3 }), fc.boolean())
        .map(([r, extra, first]) => {
          const garbage = extra.join('; ')
          if (garbage === '') return r
          return first ? `${r}; ${garbage}` : `${garbage}; ${r}`
        }),
    })
  }
  return fc.oneof(...arbs)
}

// ---------------------------------------------------------------------------------------------
// Methods

export const STANDARD_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'] as const

/** Methods `new Request` refuses (RFC 9110 forbidden methods). */
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK'])

/** Request methods: the standard ones, lower-case spellings, extension tokens incl. Object.prototype names. */
export const method: fc.Arbitrary<string> = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...STANDARD_METHODS) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'constructor',
      'toString',
      '__proto__',
      'hasOwnProperty',
      'valueOf',
      'PROPFIND',
      'get',
      'post',
      'Post',
      'QUERY',
    ),
  },
  {
    weight: 1,
    arbitrary: fc.stringMatching(/^[A-Za-z]{1,10}$/).filter((m) => !FORBIDDEN_METHODS.has(m.toUpperCase())),
  },
)

// ---------------------------------------------------------------------------------------------
// Bodies and requests

/** How a body reaches the handler. */
export interface Delivery {
  /** Whole buffer, or a ReadableStream in chunks of `chunk` bytes. */
  stream: boolean
  chunk: number
  /** Content-Length: none, the true size, a lie, or garbage. */
  contentLength: 'none' | 'exact' | 'smaller' | 'larger' | 'garbage'
}

export const delivery: fc.Arbitrary<Delivery> = fc.record({
  stream: fc.boolean(),
  chunk: fc.constantFrom(1, 7, 1024, 4096, 65_536),
  contentLength: fc.constantFrom<Delivery['contentLength']>(
    'none',
    'none',
    'exact',
    'exact',
    'smaller',
    'larger',
    'garbage',
  ),
})

/** One request, as data (printed by fast-check on failure). */
export interface RequestSpec {
  method: string
  /** Path below the origin, with any query string. */
  target: string
  headers: Record<string, string | undefined>
  body?: Uint8Array<ArrayBuffer> | undefined
  delivery?: Delivery | undefined
}

/** A stream of `bytes` in chunks, or an endless stream of `a`s when `bytes` is undefined. */
export function streamOf(bytes: Uint8Array | undefined, chunk: number): ReadableStream<Uint8Array> {
  let offset = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (bytes === undefined) {
        controller.enqueue(new Uint8Array(chunk).fill(0x61))
        return
      }
      if (offset >= bytes.length) {
        controller.close()
        return
      }
      controller.enqueue(bytes.slice(offset, offset + chunk))
      offset += chunk
    },
  })
}

/** Builds the Request for a spec against `origin`. GET and HEAD never carry a body. */
export function toRequest(origin: string, spec: RequestSpec): Request {
  const headers = new Headers()
  for (const [name, value] of Object.entries(spec.headers)) if (value !== undefined) headers.set(name, value)
  const init: RequestInit & { duplex?: 'half' } = { method: spec.method, headers, redirect: 'manual' }
  const upper = spec.method.toUpperCase()
  if (spec.body !== undefined && upper !== 'GET' && upper !== 'HEAD') {
    const d = spec.delivery ?? { stream: false, chunk: 1024, contentLength: 'none' }
    const size = spec.body.length
    const declared = {
      none: undefined,
      exact: size,
      smaller: Math.max(0, size - 10),
      larger: size + 10,
      garbage: 'abc',
    }[d.contentLength]
    if (declared !== undefined) headers.set('content-length', String(declared))
    if (d.stream) {
      init.body = streamOf(spec.body, d.chunk)
      init.duplex = 'half'
    } else {
      init.body = spec.body
    }
  }
  // concatenated, not resolved: a target like `//x` is a path here, not another host
  return new Request(new URL(origin + spec.target), init)
}

// ---------------------------------------------------------------------------------------------
// Paths

const PATH_SEGMENTS = [
  'connect',
  'token',
  'authorize',
  'introspect',
  'revoke',
  'userinfo',
  'logout',
  'interaction',
  '.well-known',
  'openid-configuration',
  'oauth-authorization-server',
  'jwks.json',
  'tenant-a',
  'CONNECT',
  'Token',
  '..',
  '.',
  '',
  '%2e%2e',
  '%2F',
  '%00',
  '%',
  '%G1',
  'constructor',
  '__proto__',
  'toString',
] as const

/** Paths near the real ones: known segments, dot segments, encoded slashes, prototype names, text. */
export const path: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(
      fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom(...PATH_SEGMENTS) },
        { weight: 1, arbitrary: text.map((t) => percentEncode(t)) },
        { weight: 1, arbitrary: text.map((t) => t.replace(/[?#]/g, '')) },
      ),
      { minLength: 1, maxLength: 5 },
    ),
    fc.boolean(),
  )
  .map(([segments, slash]) => `/${segments.join('/')}${slash ? '/' : ''}`)
