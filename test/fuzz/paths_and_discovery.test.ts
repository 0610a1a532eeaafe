/**
 * Fuzz: the well-known documents and every other path, with random methods, query strings,
 * headers and bodies. Well-known: GET/HEAD 200 JSON, other methods 405 JSON with `Allow: GET`.
 * Unknown paths (also below an issuer with a path, RFC 8414 §3.1): 404 JSON `not_found` (#27
 * item 13: no endpoint, so no OAuth error code), whatever was sent; a page for `Accept: text/html`.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ISSUER, makeService } from '../helpers/service.ts'
import {
  authorization,
  contentType,
  cookie,
  delivery,
  formBytes,
  method,
  otherBody,
  params,
  path,
  serialize,
  settings,
  text,
} from './arbitraries.ts'
import { checkApi, send } from './fixtures.ts'

const PATHS = [
  '/.well-known/openid-configuration',
  '/.well-known/oauth-authorization-server',
  '/.well-known/jwks.json',
  '/connect/authorize',
  '/connect/token',
  '/connect/userinfo',
  '/connect/introspect',
  '/connect/revoke',
  '/connect/logout',
  '/connect/interaction',
]
const WELL_KNOWN = PATHS.slice(0, 3)

/** Everything but the path: a fuzzed method, query, headers and body. */
function around(pathArb: fc.Arbitrary<string>) {
  return fc
    .record({
      path: pathArb,
      method,
      query: fc.option(fc.oneof(params({ issuer: [ISSUER], client_id: ['web'] }).map(serialize), text), { freq: 2 }),
      authorization: authorization([], [], []),
      contentType,
      cookie: cookie([]),
      body: fc.option(fc.oneof(formBytes(params({})), otherBody), { freq: 3 }),
      delivery,
    })
    .map((r) => ({
      method: r.method,
      target: r.query === null ? r.path : `${r.path}?${r.query}`,
      headers: { authorization: r.authorization, 'content-type': r.contentType, cookie: r.cookie },
      body: r.body ?? undefined,
      delivery: r.delivery,
    }))
}

describe('fuzz: well-known documents and unknown paths', () => {
  it('well-known: GET/HEAD 200 JSON, other methods 405 JSON', async () => {
    const { service } = await makeService()
    await fc.assert(
      fc.asyncProperty(around(fc.constantFrom(...WELL_KNOWN)), async (spec) => {
        const { request, response, body } = await send(service, spec)
        checkApi(response, body, request.method)
        expect(response.headers.get('content-type')).toBe('application/json')
        if (request.method === 'GET' || request.method === 'HEAD') {
          expect(response.status).toBe(200)
          if (request.method === 'HEAD') expect(body).toBe('')
          else expect(JSON.parse(body)).toBeTypeOf('object')
          if (request.method === 'GET' && !spec.target.startsWith('/.well-known/jwks.json')) {
            expect((JSON.parse(body) as { issuer: string }).issuer).toBe(ISSUER)
          }
        } else {
          expect(response.status).toBe(405)
          expect(response.headers.get('allow')).toBe('GET')
        }
      }),
      settings(0x6a7e_0200, 300),
    )
  })

  it('unknown paths: 404 JSON not_found (#27 item 13)', async () => {
    const { service } = await makeService()
    await fc.assert(
      fc.asyncProperty(around(path), async (spec) => {
        const { request, response, body } = await send(service, spec)
        if (PATHS.includes(new URL(request.url).pathname)) return // a real endpoint after URL normalisation
        checkApi(response, body, request.method)
        expect(response.status).toBe(404)
        if (request.method !== 'HEAD' || body !== '') expect(JSON.parse(body)).toMatchObject({ error: 'not_found' })
      }),
      settings(0x6a7e_0201, 400),
    )
  })

  it('#27 item 13: unknown paths answer a browser (Accept: text/html) with a 404 page', async () => {
    const { service } = await makeService()
    await fc.assert(
      fc.asyncProperty(around(path), async (spec) => {
        const { request, response, body } = await send(service, {
          ...spec,
          headers: { ...spec.headers, accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
        })
        if (PATHS.includes(new URL(request.url).pathname)) return
        expect(response.status).toBe(404)
        expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
        if (request.method !== 'HEAD') expect(body).toContain('<h1>Page not found</h1>')
      }),
      settings(0x6a7e_0203, 100),
    )
  })

  it('issuer with a path: only its own paths and the inserted RFC 8414 path are served', async () => {
    const issuer = `${ISSUER}/tenant-a`
    const { service } = await makeService({ issuer })
    const served = new Set([...PATHS.map((p) => `/tenant-a${p}`), '/.well-known/oauth-authorization-server/tenant-a'])
    await fc.assert(
      fc.asyncProperty(around(fc.oneof(path, fc.constantFrom(...served))), async (spec) => {
        const { request, response, body } = await send(service, spec)
        const pathname = new URL(request.url).pathname
        expect(response.status, body).toBeLessThan(500)
        if (served.has(pathname)) {
          expect(response.status).not.toBe(404)
          return
        }
        checkApi(response, body, request.method)
        expect(response.status).toBe(404)
      }),
      settings(0x6a7e_0202, 300),
    )
  })
})
