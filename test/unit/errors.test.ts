import { describe, expect, it } from 'vitest'
import {
  OAuthError,
  type OAuthErrorCode,
  StoreUnavailableError,
  challengeHeader,
  errorResponse,
  safeDescription,
  toOAuthError,
} from '../../src/errors.ts'

const REALM = 'https://auth.example.test'
/** RFC 6749 §5.2: error and error_description use %x20-21 / %x23-5B / %x5D-7E. */
const NQSCHAR = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

describe('OAuthError', () => {
  it('message is the error_description; name, code and status are set', () => {
    const err = new OAuthError('invalid_grant', 'the code has expired', { cause: new Error('private detail') })
    expect(err).toBeInstanceOf(Error)
    expect(err).toMatchObject({
      name: 'OAuthError',
      code: 'invalid_grant',
      status: 400,
      message: 'the code has expired',
    })
    expect((err.cause as Error).message).toBe('private detail')
  })

  it.each<[OAuthErrorCode, number]>([
    ['invalid_request', 400],
    ['invalid_grant', 400],
    ['unauthorized_client', 400],
    ['unsupported_grant_type', 400],
    ['invalid_scope', 400],
    ['unsupported_token_type', 400],
    ['invalid_client', 401],
    ['invalid_token', 401],
    ['insufficient_scope', 403],
    ['server_error', 500],
    ['temporarily_unavailable', 503],
  ])('%s defaults to HTTP %i', (code, status) => {
    expect(new OAuthError(code, 'x').status).toBe(status)
  })

  it('an explicit status wins', () => {
    expect(new OAuthError('invalid_request', 'x', { status: 413 }).status).toBe(413)
  })
})

describe('errorResponse', () => {
  it('TOK-05: JSON {error, error_description} with no-store caching', async () => {
    const response = errorResponse(new OAuthError('invalid_grant', 'the code has expired'), REALM)
    expect(response.status).toBe(400)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(response.headers.get('pragma')).toBe('no-cache')
    expect(response.headers.has('www-authenticate')).toBe(false)
    expect(await response.json()).toEqual({ error: 'invalid_grant', error_description: 'the code has expired' })
  })

  it('never leaks the cause', async () => {
    const response = errorResponse(new OAuthError('invalid_grant', 'nope', { cause: 'secret internal detail' }), REALM)
    expect(await response.text()).not.toContain('secret internal detail')
  })

  it('TOK-09: invalid_client with a Basic challenge → 401 + WWW-Authenticate: Basic realm="<issuer>"', async () => {
    const response = errorResponse(
      new OAuthError('invalid_client', 'client authentication failed', { challenge: 'Basic' }),
      REALM,
    )
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe(`Basic realm="${REALM}"`)
    expect(await response.json()).toEqual({
      error: 'invalid_client',
      error_description: 'client authentication failed',
    })
  })

  it('UI-06: a Bearer challenge carries error and error_description, quoted', () => {
    const response = errorResponse(
      new OAuthError('invalid_token', 'the token has expired', { challenge: 'Bearer' }),
      REALM,
    )
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer realm="${REALM}", error="invalid_token", error_description="the token has expired"`,
    )
  })

  it('UI-06: no error attribute when no token was sent (RFC 6750 §3.1)', () => {
    const err = new OAuthError('invalid_token', 'no token', { challenge: 'Bearer', challengeError: false })
    expect(errorResponse(err, REALM).headers.get('www-authenticate')).toBe(`Bearer realm="${REALM}"`)
  })

  it('403 insufficient_scope carries its Bearer challenge', () => {
    const err = new OAuthError('insufficient_scope', 'openid scope required', { challenge: 'Bearer' })
    const response = errorResponse(err, REALM)
    expect(response.status).toBe(403)
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=".*", error="insufficient_scope"/)
  })

  it('a challenge is only sent on 401/403', () => {
    const err = new OAuthError('invalid_request', 'x', { challenge: 'Basic' })
    expect(errorResponse(err, REALM).headers.has('www-authenticate')).toBe(false)
  })

  it('quoted-string values cannot be broken out of: quotes, backslashes and line breaks are replaced', () => {
    const nasty = 'a "quoted" \\ path\r\nSet-Cookie: x=1'
    const err = new OAuthError('invalid_token', nasty, { challenge: 'Bearer' })
    const header = challengeHeader(err, 'realm "with" quotes') as string
    expect(header).toBe(
      'Bearer realm="realm ?with? quotes", error="invalid_token", error_description="a ?quoted? ? path??Set-Cookie: x=1"',
    )
    // Exactly six quotes: three attributes, each opened and closed once.
    expect(header.match(/"/g)).toHaveLength(6)
    expect(errorResponse(err, REALM).headers.get('www-authenticate')).not.toMatch(/[\r\n\\]/)
  })

  it('TOK-05 AUTHZ-20: error_description only uses %x20-21 / %x23-5B / %x5D-7E', async () => {
    const err = new OAuthError('invalid_request', 'tab\there "q" back\\slash é ü ✓ \u0000 \u007f\nend')
    const body = (await errorResponse(err, REALM).json()) as { error: string; error_description: string }
    expect(body.error).toMatch(NQSCHAR)
    expect(body.error_description).toMatch(NQSCHAR)
    expect(body.error_description).toContain('tab?here')
    expect(body.error_description.endsWith('?end')).toBe(true)
  })

  it('adds extra headers such as Allow and Retry-After', () => {
    const err = new OAuthError('invalid_request', 'method not allowed', { status: 405, headers: { allow: 'POST' } })
    const response = errorResponse(err, REALM)
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('POST')
  })
})

describe('safeDescription', () => {
  it('keeps the allowed set intact and replaces everything else', () => {
    let allowed = ''
    for (let c = 0x20; c <= 0x7e; c++) if (c !== 0x22 && c !== 0x5c) allowed += String.fromCharCode(c)
    expect(safeDescription(allowed)).toBe(allowed)
    expect(safeDescription('"\\\t\n\u00e9')).toBe('?????')
  })
})

describe('toOAuthError', () => {
  it('passes an OAuthError through', () => {
    const err = new OAuthError('invalid_scope', 'x')
    expect(toOAuthError(err)).toBe(err)
  })

  it.each([
    new TypeError('Cannot read properties of undefined (reading "hash")'),
    'a string',
    undefined,
    { weird: true },
  ])('turns %j into a fixed server_error without leaking the message', async (thrown) => {
    const err = toOAuthError(thrown)
    expect(err).toMatchObject({ code: 'server_error', status: 500 })
    expect(err.message).toBe('the server encountered an unexpected condition')
    expect(err.cause).toBe(thrown)
    expect(await errorResponse(err, REALM).text()).not.toContain('hash')
  })

  it('turns StoreUnavailableError into 503 temporarily_unavailable with Retry-After', async () => {
    const err = toOAuthError(new StoreUnavailableError('ECONNREFUSED 10.0.0.5:5432'))
    expect(err).toMatchObject({ code: 'temporarily_unavailable', status: 503 })
    const response = errorResponse(err, REALM)
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(await response.text()).not.toContain('10.0.0.5')
  })
})
