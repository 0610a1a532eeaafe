/**
 * @module http
 * Request parsing and response helpers shared by the endpoints.
 */
import { OAuthError } from './errors.ts'

/**
 * Parameters of a request: each name once, empty values treated as absent (RFC 6749 §3.1). A name
 * the endpoint reads multi-valued (`resource`, RFC 8707 §2) keeps every value in `lists` and its
 * first in the map; read it with `allValues`.
 */
export type Params = Map<string, string> & { lists?: Map<string, string[]> }

/** Every value of `name`: the values of a multi-valued parameter in order, else its one value, else none. */
export function allValues(params: Params, name: string): string[] {
  const list = params.lists?.get(name)
  if (list) return [...list]
  const value = params.get(name)
  return value === undefined ? [] : [value]
}

export interface FormLimits {
  maxBodyBytes: number
  maxParameterLength: number
  /** The server in front enforces Content-Length (see the option of that name). */
  trustContentLength?: boolean
}

/**
 * Reads a body up to `limit` bytes as a stream; larger bodies are refused without reading them
 * whole (see `readText` for bodies held to a declared length).
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit)
  let body: Uint8Array | undefined
  try {
    body = await readCapped(request.body, limit)
  } catch (cause) {
    throw new OAuthError('invalid_request', 'the request body could not be read', { cause })
  }
  if (body === undefined) throw tooLarge(limit)
  return body
}

/**
 * Reads a stream to its end, or stops (cancelling it) and answers undefined once it passes `limit`
 * bytes: a body is never held whole beyond its limit. Read errors reject.
 */
export async function readCapped(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array | undefined> {
  if (!stream) return new Uint8Array(0)
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const result = await reader.read()
    if (result.done) break
    size += result.value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      return undefined
    }
    chunks.push(result.value)
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array
  const body = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.byteLength
  }
  return body
}

function tooLarge(limit: number): OAuthError {
  return new OAuthError('invalid_request', `the request body exceeds ${limit} bytes`, { status: 413 })
}

/**
 * Parses `application/x-www-form-urlencoded` text into parameters.
 * - a parameter given twice is `invalid_request` (RFC 6749 §3.1, §3.2), unless `multiValued` names
 *   it (RFC 8707 §2 `resource`): then every value is kept, in order
 * - empty values are treated as omitted (RFC 6749 §3.1)
 * - values longer than the limit, or holding U+0000 or an unpaired surrogate, are `invalid_request`
 * Descriptions name a parameter only when the service knows the name (see `parameterName`).
 */
export function parseParams(text: string, maxParameterLength: number, multiValued?: ReadonlySet<string>): Params {
  const params: Params = new Map()
  const seen = new Set<string>()
  for (const [name, value] of formPairs(text)) {
    if (multiValued?.has(name)) {
      checkParameter(name, value, maxParameterLength)
      if (value === '') continue
      params.lists ??= new Map()
      const list = params.lists.get(name)
      if (list) list.push(value)
      else {
        params.lists.set(name, [value])
        params.set(name, value)
      }
      continue
    }
    if (seen.has(name)) throw new OAuthError('invalid_request', `${parameterName(name)} is repeated`)
    seen.add(name)
    checkParameter(name, value, maxParameterLength)
    if (value !== '') params.set(name, value)
  }
  return params
}

/** U+0000 and unpaired surrogates: no store keeps them (PostgreSQL text refuses NUL outright). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what this refuses.
const UNSAFE_CHARACTERS = /\u0000|\p{Cs}/u

/**
 * Refuses a parameter that is too long or holds a character no store can keep (U+0000, an
 * unpaired surrogate) as invalid_request, before it reaches any store. The description names
 * a known parameter (`parameterName`), never a value.
 */
export function checkParameter(name: string, value: string, maxParameterLength = Number.POSITIVE_INFINITY): void {
  if (value.length > maxParameterLength) {
    throw new OAuthError('invalid_request', `${parameterName(name)} is too long`)
  }
  if (UNSAFE_CHARACTERS.test(value) || UNSAFE_CHARACTERS.test(name)) {
    throw new OAuthError('invalid_request', `${parameterName(name)} contains a character that is not allowed`)
  }
}

/**
 * What makes urlencoded text need the full parser: a `%` or `+` to decode, or an unpaired surrogate
 * (which the parser's UTF-8 encoding turns into U+FFFD). Text without them decodes to itself.
 */
const NEEDS_DECODING = /[%+]|\p{Cs}/u

/**
 * The name/value pairs of urlencoded text (WHATWG URL, application/x-www-form-urlencoded parsing).
 * Text with nothing to decode (a token request's form usually) is split on `&` and the first `=`
 * of each pair, which is what the parser gives it, without a URLSearchParams per request (#44
 * item 4); any other text goes through `new URLSearchParams`. That drops one leading `?`, which
 * the urlencoded parser does not: `?grant_type=x` is a parameter named `?grant_type`.
 */
export function formPairs(text: string): Iterable<[string, string]> {
  if (NEEDS_DECODING.test(text)) return new URLSearchParams(`&${text}`)
  const pairs: [string, string][] = []
  let start = 0
  while (start <= text.length) {
    let end = text.indexOf('&', start)
    if (end === -1) end = text.length
    if (end > start) {
      const equals = text.indexOf('=', start)
      pairs.push(
        equals === -1 || equals > end
          ? [text.slice(start, end), '']
          : [text.slice(start, equals), text.slice(equals + 1, end)],
      )
    }
    start = end + 1
  }
  return pairs
}

const FORM_TYPE = 'application/x-www-form-urlencoded'

/**
 * Reads a POST form body (RFC 6749 §3.2: application/x-www-form-urlencoded). Any other body (JSON,
 * text, multipart, no content type) is `400 invalid_request`, the RFC 6749 §5.2 answer to a
 * malformed request, at every endpoint alike. `multiValued`: the names that may repeat (see `parseParams`).
 */
export async function readForm(
  request: Request,
  limits: FormLimits,
  multiValued?: ReadonlySet<string>,
): Promise<Params> {
  const type = request.headers.get('content-type') ?? ''
  if (type !== FORM_TYPE && mediaType(type) !== FORM_TYPE) throw notAForm()
  const text = await readText(request, limits.maxBodyBytes, limits.trustContentLength)
  return parseParams(text, limits.maxParameterLength, multiValued)
}

/** The error for a body that is not a form. */
export function notAForm(): OAuthError {
  return new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded')
}

/**
 * A body as UTF-8 text, up to `limit` bytes. When the server in front holds bodies to a declared
 * length, the adapter's `text()` answers without an intermediate buffer (Node adapters decode
 * their buffered body directly): one allocation fewer per request.
 */
export async function readText(request: Request, limit: number, trustContentLength = false): Promise<string> {
  const declared = request.headers.get('content-length')
  if (!trustContentLength || declared === null || !/^\d+$/.test(declared)) {
    return UTF8.decode(await readBody(request, limit))
  }
  if (Number(declared) > limit) throw tooLarge(limit)
  let text: string
  try {
    text = await request.text()
  } catch (cause) {
    throw new OAuthError('invalid_request', 'the request body could not be read', { cause })
  }
  // UTF-16 length never exceeds the UTF-8 byte length: a longer text had more bytes than allowed.
  if (text.length > limit) throw tooLarge(limit)
  return text
}

const UTF8 = new TextDecoder()

/** The media type of a Content-Type value, lower-cased, without parameters. */
export function mediaType(contentType: string): string {
  return (contentType.split(';', 1)[0] ?? '').trim().toLowerCase()
}

/**
 * The parameter names an error description may show: those of the protocols served (RFC 6749,
 * 7009, 7636, 7662, 9126, OpenID Connect Core and RP-Initiated Logout) and of the built-in pages.
 * Any other name is request input, which no description repeats (#17.8).
 */
const KNOWN_PARAMETERS: ReadonlySet<string> = new Set([
  'access_token',
  'acr_values',
  'acr_values',
  'action',
  'assertion',
  'audience',
  'authorization_details',
  'claims',
  'claims_locales',
  'client_assertion',
  'client_assertion_type',
  'client_id',
  'client_secret',
  'code',
  'code_challenge',
  'code_challenge_method',
  'code_verifier',
  'confirm',
  'csrf',
  'decision',
  'display',
  'dpop_jkt',
  'grant_type',
  'id_token_hint',
  'login_hint',
  'logout_hint',
  'max_age',
  'nonce',
  'password',
  'post_logout_redirect_uri',
  'prompt',
  'redirect_uri',
  'refresh_token',
  'registration',
  'request',
  'request_uri',
  'resource',
  'response_mode',
  'response_type',
  'scope',
  'state',
  'token',
  'token_type_hint',
  'ui_locales',
  'uid',
  'username',
])

/** How an error description names a parameter: by its name if the service knows it, else generically. */
export function parameterName(name: string): string {
  return KNOWN_PARAMETERS.has(name) ? `parameter ${name}` : 'a parameter the service does not use'
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const

/** A JSON response. */
export function json(body: unknown, init?: { status?: number; headers?: Record<string, string> }): Response {
  return new Response(JSON.stringify(body), {
    status: init?.status ?? 200,
    headers: { ...JSON_HEADERS, ...init?.headers },
  })
}

/** The headers of every token-endpoint answer, built once (adapters copy, never change, them). */
const NO_STORE_JSON: Readonly<Record<string, string>> = Object.freeze({ ...JSON_HEADERS, ...NO_STORE })

/** A JSON response that must not be cached (RFC 6749 §5.1). */
export function noStoreJson(body: unknown, status = 200): Response {
  return noStoreJsonText(JSON.stringify(body), status)
}

/** `noStoreJson` of a body already serialised as JSON. */
export function noStoreJsonText(text: string, status = 200): Response {
  return new Response(text, { status, headers: NO_STORE_JSON })
}

/** Extracts the token from `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750 §2.1). */
export function bearerToken(header: string | null): string | undefined {
  if (header === null) return undefined
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header)
  return match?.[1]
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
}
