/**
 * TOK-01 TOK-05 TOK-06 TOK-07: malformed token requests. Every answer is asserted for status,
 * Content-Type application/json and a string `error`; none is a 5xx.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { ISSUER, basic, form, makeService } from '../../helpers/service.ts'

const NQSCHAR = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
const TOKEN = `${ISSUER}/connect/token`
const AUTH = { authorization: basic('service', 'service-secret') }
const FORM = 'application/x-www-form-urlencoded'

let service: Awaited<ReturnType<typeof makeService>>['service']
const logged: unknown[] = []

beforeAll(async () => {
  ;({ service } = await makeService({ logger: { warn() {}, error: (...args: unknown[]) => void logged.push(args) } }))
})

async function expectError(response: Response, status: number, error?: string) {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toMatch(/^application\/json/)
  const body = (await response.json()) as Record<string, unknown>
  expect(typeof body.error).toBe('string')
  if (error !== undefined) expect(body.error).toBe(error)
  expect(body.error).toMatch(NQSCHAR)
  expect(body.error_description).toMatch(NQSCHAR)
  expect(body).not.toHaveProperty('access_token')
  return body
}

function raw(body: BodyInit | null, headers: Record<string, string> = {}, method = 'POST', url = TOKEN): Request {
  const init: RequestInit & { duplex?: 'half' } = { method, headers, body }
  if (body instanceof ReadableStream) init.duplex = 'half'
  return new Request(url, init)
}

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

describe('token endpoint: request errors', () => {
  it('TOK-06: a missing grant_type → 400 invalid_request', async () => {
    await expectError(await service.fetch(form(TOKEN, { scope: 'api1' }, AUTH)), 400, 'invalid_request')
  })

  it('TOK-06: an empty grant_type is a missing one → 400 invalid_request', async () => {
    await expectError(await service.fetch(form(TOKEN, { grant_type: '' }, AUTH)), 400, 'invalid_request')
  })

  it('TOK-07: grant_type=password → 400 unsupported_grant_type, with or without valid credentials', async () => {
    const fields = { grant_type: 'password', username: 'alice', password: 'alice-password', scope: 'openid' }
    await expectError(await service.fetch(form(TOKEN, fields, AUTH)), 400, 'unsupported_grant_type')
    await expectError(
      await service.fetch(form(TOKEN, { ...fields, client_id: 'web', client_secret: 'web-secret' })),
      400,
      'unsupported_grant_type',
    )
  })

  it.each([
    'foo',
    'implicit',
    'CLIENT_CREDENTIALS',
    'client_credentials ',
    'urn:ietf:params:oauth:grant-type:jwt-bearer',
    'urn:ietf:params:oauth:grant-type:saml2-bearer',
    'client_credentials"\\\n',
  ])('TOK-06: grant_type=%j → 400 unsupported_grant_type', async (grantType) => {
    await expectError(await service.fetch(form(TOKEN, { grant_type: grantType }, AUTH)), 400, 'unsupported_grant_type')
  })

  it('#29 TOK-06: the device_code grant (supported) for a client without its permission → 400 unauthorized_client', async () => {
    const request = form(TOKEN, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'x' }, AUTH)
    await expectError(await service.fetch(request), 400, 'unauthorized_client')
  })

  it.each([
    ['grant_type', 'grant_type=client_credentials&grant_type=client_credentials'],
    ['scope', 'grant_type=client_credentials&scope=api1&scope=api1'],
    ['client_id', 'grant_type=client_credentials&client_id=service&client_id=service&client_secret=service-secret'],
    ['client_secret', 'grant_type=client_credentials&client_id=service&client_secret=service-secret&client_secret=x'],
    ['an unknown parameter', 'grant_type=client_credentials&foo=1&foo=2'],
  ])('TOK-06: a repeated %s → 400 invalid_request', async (_, body) => {
    const headers: Record<string, string> = { 'content-type': FORM }
    if (!body.includes('client_id')) Object.assign(headers, AUTH)
    await expectError(await service.fetch(raw(body, headers)), 400, 'invalid_request')
  })

  it.each([
    [
      'application/json',
      () => raw(JSON.stringify({ grant_type: 'client_credentials' }), { ...AUTH, 'content-type': 'application/json' }),
    ],
    ['text/plain', () => raw('grant_type=client_credentials', { ...AUTH, 'content-type': 'text/plain' })],
    [
      'multipart/form-data',
      () => {
        const data = new FormData()
        data.set('grant_type', 'client_credentials')
        return raw(data, AUTH)
      },
    ],
    ['no content type', () => raw(bytes('grant_type=client_credentials'), AUTH)],
    [
      'application/xml',
      () => raw('<grant_type>client_credentials</grant_type>', { ...AUTH, 'content-type': 'application/xml' }),
    ],
  ])('#17.6 TOK-01: a %s body → 400 invalid_request', async (_, build) => {
    const request = build()
    expect(request.headers.get('content-type') ?? '').not.toMatch(/urlencoded/)
    await expectError(await service.fetch(request), 400, 'invalid_request')
  })

  it('TOK-01: a form content type with a charset parameter is accepted', async () => {
    const response = await service.fetch(
      raw('grant_type=client_credentials', { ...AUTH, 'content-type': `${FORM}; charset=UTF-8` }),
    )
    expect(response.status).toBe(200)
  })

  describe('body size (limit 16 KiB)', () => {
    const LIMIT = 16_384
    /** A valid client_credentials form of exactly `size` bytes (padding with empty separators). */
    const sized = (size: number) => 'grant_type=client_credentials'.padEnd(size, '&')

    it('exactly 16 KiB is accepted', async () => {
      const response = await service.fetch(raw(sized(LIMIT), { ...AUTH, 'content-type': FORM }))
      expect(response.status).toBe(200)
    })

    it('one byte over → 413 invalid_request', async () => {
      await expectError(
        await service.fetch(raw(sized(LIMIT + 1), { ...AUTH, 'content-type': FORM })),
        413,
        'invalid_request',
      )
    })

    it('a declared Content-Length over the limit → 413 without reading the body', async () => {
      const request = raw(sized(100), { ...AUTH, 'content-type': FORM, 'content-length': String(LIMIT + 1) })
      await expectError(await service.fetch(request), 413, 'invalid_request')
    })

    it('a streamed body without Content-Length over the limit → 413', async () => {
      const chunk = new TextEncoder().encode('&'.repeat(4096))
      let sent = 0
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          // An endless body: the handler must stop reading at the limit.
          sent += chunk.length
          controller.enqueue(chunk)
        },
      })
      await expectError(await service.fetch(raw(stream, { ...AUTH, 'content-type': FORM })), 413, 'invalid_request')
      expect(sent).toBeLessThan(LIMIT + 3 * chunk.length)
    })

    it('a 1 MiB body → 413', async () => {
      await expectError(
        await service.fetch(raw(sized(1 << 20), { ...AUTH, 'content-type': FORM })),
        413,
        'invalid_request',
      )
    })
  })

  it('a parameter longer than 4096 characters → 400 invalid_request', async () => {
    await expectError(
      await service.fetch(form(TOKEN, { grant_type: 'client_credentials', scope: 'a'.repeat(4097) }, AUTH)),
      400,
      'invalid_request',
    )
  })

  it.each([
    ['raw invalid UTF-8 in grant_type', bytes('grant_type=client_credentials', [0xff, 0xfe])],
    ['percent-encoded invalid UTF-8 in grant_type', bytes('grant_type=client_credentials%FF%FE')],
    ['bad percent-encoding in grant_type', bytes('grant_type=client%zzcredentials')],
    ['a truncated escape', bytes('grant_type=client_credentials%')],
    ['an overlong UTF-8 encoding', bytes('grant_type=', [0xc0, 0xaf])],
    ['a lone surrogate', bytes('grant_type=%ED%A0%80')],
  ])('%s → 400 unsupported_grant_type, not a 5xx', async (_, body) => {
    await expectError(await service.fetch(raw(body, { ...AUTH, 'content-type': FORM })), 400, 'unsupported_grant_type')
  })

  it.each([
    [
      'raw invalid UTF-8 appended to the right secret',
      bytes('grant_type=client_credentials&client_id=service&client_secret=service-secret', [0xff]),
    ],
    [
      'percent-encoded invalid UTF-8 appended to the right secret',
      bytes('grant_type=client_credentials&client_id=service&client_secret=service-secret%FF'),
    ],
    [
      'invalid UTF-8 in client_id',
      bytes('grant_type=client_credentials&client_id=serv', [0xff], 'ice&client_secret=service-secret'),
    ],
  ])('%s → 401 invalid_client', async (_, body) => {
    await expectError(await service.fetch(raw(body, { 'content-type': FORM })), 401, 'invalid_client')
  })

  it('an unknown path → 404 JSON not_found (#27 item 13: no endpoint, no OAuth error code)', async () => {
    for (const path of [
      '/connect/tokens',
      '/token',
      '/oauth/token',
      '/connect',
      '/',
      '/.well-known/',
      '/connect/token/extra',
    ]) {
      const response = await service.fetch(
        raw('grant_type=client_credentials', { ...AUTH, 'content-type': FORM }, 'POST', `${ISSUER}${path}`),
      )
      await expectError(response, 404, 'not_found')
    }
  })

  it('#44 item 4: the route of the last URL is reused only for that URL (token, unknown, token, discovery, with a query)', async () => {
    const post = (url: string) =>
      service.fetch(raw('grant_type=client_credentials', { ...AUTH, 'content-type': FORM }, 'POST', url))
    for (let round = 0; round < 2; round++) {
      expect((await post(TOKEN)).status).toBe(200)
      expect((await post(TOKEN)).status).toBe(200)
      await expectError(await post(`${ISSUER}/connect/token/extra`), 404, 'not_found')
      await expectError(await post(`${ISSUER}/connect/token/extra`), 404, 'not_found')
      expect((await post(TOKEN)).status).toBe(200)
      expect((await post(`${TOKEN}?x=1`)).status).toBe(200)
      await expectError(await post(`${ISSUER}/connect/token/extra?x=1`), 404, 'not_found')
      const discovery = await service.fetch(new Request(`${ISSUER}/.well-known/openid-configuration`))
      expect(discovery.status).toBe(200)
      expect(((await discovery.json()) as { issuer: string }).issuer).toBe(ISSUER)
    }
  })

  it.each(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'])(
    'TOK-01: %s /connect/token → 405 with Allow: POST, never tokens',
    async (method) => {
      const response = await service.fetch(raw(null, AUTH, method, `${TOKEN}?grant_type=client_credentials`))
      expect(response.headers.get('allow')).toBe('POST')
      if (method === 'HEAD') {
        expect(response.status).toBe(405)
        expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      } else {
        await expectError(response, 405, 'invalid_request')
      }
    },
  )

  it('POST to a GET-only endpoint → 405 with Allow: GET', async () => {
    for (const path of ['/.well-known/jwks.json', '/.well-known/openid-configuration']) {
      const response = await service.fetch(raw('a=1', { 'content-type': FORM }, 'POST', `${ISSUER}${path}`))
      expect(response.headers.get('allow')).toBe('GET')
      await expectError(response, 405, 'invalid_request')
    }
  })

  it('TOK-05: nothing above was logged as a server error', () => {
    expect(logged).toEqual([])
  })
})
