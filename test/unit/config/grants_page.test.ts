/**
 * #42 item 3: the `grantsPage` option: off by default, `true` mounts the page at
 * `{issuer}/account/apps`, `{ path }` elsewhere below the issuer; a path that is not one, or that
 * would sit at or below the service's endpoints, is refused at construction; the configuration
 * file takes the same key.
 */
import { describe, expect, it } from 'vitest'
import { parseConfigFile } from '../../../src/config/file.ts'
import { parseOptions } from '../../../src/config/parse.ts'
import { createTokenService } from '../../../src/index.ts'

const ISSUER = 'https://auth.example.test/tenant'

function get(service: ReturnType<typeof createTokenService>, path: string, method = 'GET'): Promise<Response> {
  return service.fetch(new Request(`https://auth.example.test${path}`, { method, headers: { accept: 'text/html' } }))
}

describe('#42 item 3 the grantsPage option', () => {
  it('#42 item 3: off by default; true serves /account/apps below the issuer; { path } elsewhere', async () => {
    expect((await get(createTokenService({ issuer: ISSUER }), '/tenant/account/apps')).status).toBe(404)
    const on = createTokenService({ issuer: ISSUER, grantsPage: true })
    const page = await get(on, '/tenant/account/apps')
    expect(page.status).toBe(200)
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(await page.text()).toContain('Sign in first')
    expect((await get(on, '/tenant/account/apps', 'HEAD')).status).toBe(200)
    expect((await get(on, '/account/apps')).status).toBe(404)
    const put = await get(on, '/tenant/account/apps', 'PUT')
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, POST'])
    const moved = createTokenService({ issuer: ISSUER, grantsPage: { path: '/me/access' } })
    expect((await get(moved, '/tenant/me/access')).status).toBe(200)
    expect((await get(moved, '/tenant/account/apps')).status).toBe(404)
    expect(parseOptions({ issuer: ISSUER, grantsPage: false }).grantsPage).toBeUndefined()
  })

  it('#42 item 3: without a session the page links to signInUrl when set, and never redirects', async () => {
    const service = createTokenService({
      issuer: ISSUER,
      grantsPage: { signInUrl: 'https://app.example.test/login?next=/apps' },
    })
    const page = await get(service, '/tenant/account/apps')
    expect(page.status).toBe(200)
    expect(await page.text()).toContain(
      '<a class="button primary" href="https://app.example.test/login?next=/apps">Sign in</a>',
    )
  })

  it.each([
    ['account/apps', 'must be a path'],
    ['/', 'must be a path'],
    ['/account/', 'must be a path'],
    ['/a b', 'must be a path'],
    ['/a/../connect/token', 'must not have . or .. segments'],
    ['/connect', 'must not be /connect'],
    ['/connect/grants', 'must not be /connect'],
    ['/.well-known/apps', 'must not be /connect'],
  ])('#42 item 3: the path %j is refused', (path, message) => {
    expect(() => createTokenService({ issuer: ISSUER, grantsPage: { path } })).toThrow(
      new RegExp(`grantsPage\\.path: ${message.replace(/[.]/g, '\\.')}`),
    )
  })

  it('#42 item 3: signInUrl must be an absolute http(s) URL; unknown keys are refused', () => {
    expect(() => createTokenService({ issuer: ISSUER, grantsPage: { signInUrl: '/login' } })).toThrow(
      /grantsPage\.signInUrl/,
    )
    expect(() => createTokenService({ issuer: ISSUER, grantsPage: { signInUrl: 'javascript:alert(1)' } })).toThrow(
      /grantsPage\.signInUrl/,
    )
    expect(() =>
      createTokenService({ issuer: ISSUER, grantsPage: { pathh: '/x' } as unknown as { path: string } }),
    ).toThrow(/grantsPage/)
  })

  it('#42 item 3: the configuration file takes grantsPage', () => {
    expect(parseConfigFile('{"grantsPage": true}').grantsPage).toEqual({ path: '/account/apps' })
    expect(parseConfigFile('{"grantsPage": {"path": "/me/apps"}}').grantsPage).toEqual({ path: '/me/apps' })
    expect(() => parseConfigFile('{"grantsPage": {"path": "/connect/x"}}')).toThrow(/grantsPage\.path/)
  })
})
