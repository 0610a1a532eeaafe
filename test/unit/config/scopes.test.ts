import { describe, expect, it } from 'vitest'
import { OAuthError } from '../../../src/errors.ts'
import { DEFAULT_SCOPES, createScopeRegistry, parseScope } from '../../../src/config/scopes.ts'

describe('parseScope', () => {
  it.each([
    [undefined, []],
    ['', []],
    ['api1', ['api1']],
    ['openid profile', ['openid', 'profile']],
    ['profile openid', ['profile', 'openid']],
    ['api1 api1', ['api1']],
    ['  openid   api1 ', ['openid', 'api1']],
    ['a!#[]~', ['a!#[]~']],
    ['urn:example:read https://api.example.test/write', ['urn:example:read', 'https://api.example.test/write']],
    ['API1 api1', ['API1', 'api1']], // case-sensitive (RFC 6749 §3.3)
  ])('%j → %j', (value, expected) => {
    expect(parseScope(value, 32)).toEqual(expected)
  })

  it.each([
    ['a double quote', 'api"1'],
    ['a backslash', 'api\\1'],
    ['a tab', 'openid\tapi1'],
    ['a newline', 'openid\napi1'],
    ['a control character', 'api\u00001'],
    ['non-ASCII', 'apí1'],
    ['DEL', 'api\u007f'],
  ])('a token with %s → invalid_scope', (_, value) => {
    expect(() => parseScope(value, 32)).toThrow(OAuthError)
    expect(() => parseScope(value, 32)).toThrow(expect.objectContaining({ code: 'invalid_scope', status: 400 }))
  })

  it('more scopes than the limit → invalid_scope; exactly the limit is fine; duplicates count once', () => {
    const three = 'a b c'
    expect(parseScope(three, 3)).toEqual(['a', 'b', 'c'])
    expect(parseScope('a b c a b c', 3)).toEqual(['a', 'b', 'c'])
    expect(() => parseScope('a b c d', 3)).toThrow(expect.objectContaining({ code: 'invalid_scope' }))
  })
})

describe('createScopeRegistry', () => {
  const registry = createScopeRegistry([
    { name: 'api2', audience: 'https://api2.example.test' },
    'api3',
    { name: 'custom_identity', claims: ['shoe_size'] },
  ])

  it('knows the default scopes and the configured ones', () => {
    for (const scope of DEFAULT_SCOPES) expect(registry.get(scope as string)).toBeDefined()
    expect(registry.names()).toEqual(expect.arrayContaining(['openid', 'api1', 'api2', 'api3', 'custom_identity']))
    expect(registry.get('ghost')).toBeUndefined()
  })

  it.each([
    ['openid', true],
    ['profile', true],
    ['email', true],
    ['offline_access', true],
    ['custom_identity', true],
    ['api1', false],
    ['api2', false],
    ['ghost', false],
  ])('isUserScope(%s) → %s', (scope, expected) => {
    expect(registry.isUserScope(scope)).toBe(expected)
  })

  it('API scopes map to their audience (default: the scope name), deduplicated, in request order', () => {
    expect(registry.audiences(['api1'])).toEqual(['api1'])
    expect(registry.audiences(['api2', 'api1', 'openid'])).toEqual(['https://api2.example.test', 'api1'])
    expect(registry.audiences(['openid', 'profile', 'offline_access'])).toEqual([])
    expect(
      createScopeRegistry([
        { name: 'a', audience: 'shared' },
        { name: 'b', audience: 'shared' },
      ]).audiences(['a', 'b']),
    ).toEqual(['shared'])
  })

  it('identity scopes release their claims', () => {
    expect([...registry.claims(['email'])].sort()).toEqual(['email', 'email_verified'])
    expect(registry.claims(['api1']).size).toBe(0)
    expect(registry.claims(['custom_identity']).has('shoe_size')).toBe(true)
    expect(registry.allClaims()).toEqual(expect.arrayContaining(['sub', 'email', 'name', 'shoe_size']))
  })

  it('#39 item 4: scopesOf names the identity scopes that release a claim (none for a claim no scope releases)', () => {
    expect(registry.scopesOf('email')).toEqual(['email'])
    expect(registry.scopesOf('address')).toEqual(['address'])
    expect(registry.scopesOf('phone_number_verified')).toEqual(['phone'])
    expect(registry.scopesOf('shoe_size')).toEqual(['custom_identity'])
    expect(registry.scopesOf('auth_time')).toEqual([])
    expect(registry.scopesOf('internal_role')).toEqual([])
    const shared = createScopeRegistry([{ name: 'contact', claims: ['email', 'phone_number'] }])
    expect(shared.scopesOf('email')).toEqual(['email', 'contact'])
  })
})
