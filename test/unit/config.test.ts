import { describe, expect, it } from 'vitest'
import { isLoopback, parseClientRegistration, parseOptions } from '../../src/config.ts'
import { parseConfigFile } from '../../src/config_file.ts'
import { createTokenService } from '../../src/index.ts'

const ISSUER = 'https://auth.example.test'

/** The TypeError a bad option throws, with its `field: message` lines. */
function construction(options: unknown): TypeError {
  try {
    createTokenService(options as Parameters<typeof createTokenService>[0])
  } catch (err) {
    expect(err).toBeInstanceOf(TypeError)
    return err as TypeError
  }
  throw new Error('expected createTokenService to throw')
}

describe('createTokenService options', () => {
  it.each([
    ['issuer', { issuer: 'not a url' }],
    ['issuer', { issuer: 'auth.example.test' }],
    ['issuer', { issuer: 'ftp://auth.example.test' }],
    ['issuer', { issuer: 'https://auth.example.test?tenant=1' }],
    ['issuer', { issuer: 'https://auth.example.test#x' }],
    ['issuer', { issuer: 42 }],
    ['issuer', {}],
    ['accessTokenTtl', { issuer: ISSUER, accessTokenTtl: 0 }],
    ['accessTokenTtl', { issuer: ISSUER, accessTokenTtl: -60 }],
    ['accessTokenTtl', { issuer: ISSUER, accessTokenTtl: 1.5 }],
    ['accessTokenTtl', { issuer: ISSUER, accessTokenTtl: '600' }],
    ['accessTokenTtl', { issuer: ISSUER, accessTokenTtl: Number.NaN }],
    ['refreshTokenTtl', { issuer: ISSUER, refreshTokenTtl: 0 }],
    ['authorizationCodeTtl', { issuer: ISSUER, authorizationCodeTtl: Number.POSITIVE_INFINITY }],
    ['accessTokenSigningAlg', { issuer: ISSUER, accessTokenSigningAlg: 'HS256' }],
    ['accessTokenSigningAlg', { issuer: ISSUER, accessTokenSigningAlg: 'none' }],
    ['idTokenSigningAlg', { issuer: ISSUER, idTokenSigningAlg: 'HS256' }],
    ['idTokenClaims', { issuer: ISSUER, idTokenClaims: 'all' }],
    ['idTokenClaims', { issuer: ISSUER, idTokenClaims: true }],
    ['limits.maxBodyBytes', { issuer: ISSUER, limits: { maxBodyBytes: 10 } }],
    ['limits.maxScopes', { issuer: ISSUER, limits: { maxScopes: 0 } }],
    ['secretHashIterations', { issuer: ISSUER, secretHashIterations: 0 }],
    ['secretCacheTtl', { issuer: ISSUER, secretCacheTtl: -1 }],
    ['now', { issuer: ISSUER, now: 1_800_000_000 }],
    ['store', { issuer: ISSUER, store: 'memory' }],
    ['logger', { issuer: ISSUER, logger: null }],
    ['scopes.0', { issuer: ISSUER, scopes: ['bad scope'] }],
    ['users.0.sub', { issuer: ISSUER, users: [{ sub: '', username: 'a', password: 'b' }] }],
    ['keys.keys', { issuer: ISSUER, keys: { keys: [] } }],
    ['isuer', { issuer: ISSUER, isuer: ISSUER }], // unknown options are typos, not ignored
  ])('a bad %s throws a TypeError naming it', (field, options) => {
    const err = construction(options)
    expect(err.message).toMatch(/^invalid token service options\n/)
    const fields = err.message
      .split('\n')
      .slice(1)
      .map((line) => line.split(': ')[0])
    expect(fields).toContain(field)
  })

  it('names every bad field at once and keeps the issues as cause', () => {
    const err = construction({ issuer: 'nope', accessTokenTtl: 0, idTokenTtl: -1 })
    const fields = err.message
      .split('\n')
      .slice(1)
      .map((line) => line.split(': ')[0])
    expect(fields).toEqual(expect.arrayContaining(['issuer', 'accessTokenTtl', 'idTokenTtl']))
    expect(Array.isArray(err.cause)).toBe(true)
  })

  it('no options at all → TypeError', () => {
    expect(() => createTokenService(undefined as never)).toThrow(TypeError)
  })

  it('applies the documented defaults and keeps the issuer byte for byte', () => {
    const config = parseOptions({ issuer: 'https://auth.example.test/' })
    expect(config).toMatchObject({
      issuer: 'https://auth.example.test/',
      accessTokenTtl: 3600,
      authorizationCodeTtl: 300,
      accessTokenSigningAlg: 'ES256',
      idTokenSigningAlg: 'RS256',
      limits: { maxBodyBytes: 16_384, maxParameterLength: 4096, maxScopes: 32 },
      secretHashIterations: 600_000,
    })
  })

  it("#18 idTokenClaims: 'scopes' | 'minimal', also as a configuration-file key", () => {
    expect(parseOptions({ issuer: ISSUER, idTokenClaims: 'minimal' }).idTokenClaims).toBe('minimal')
    expect(parseConfigFile(JSON.stringify({ idTokenClaims: 'minimal' })).idTokenClaims).toBe('minimal')
    expect(parseConfigFile(JSON.stringify({ idTokenClaims: 'scopes' })).idTokenClaims).toBe('scopes')
    expect(() => parseConfigFile(JSON.stringify({ idTokenClaims: 'full' }), 'gatehouse.json')).toThrow(
      /^gatehouse\.json: invalid configuration\nidTokenClaims: /,
    )
  })

  it('a valid configuration constructs and endpoint URLs derive from the issuer', () => {
    const service = createTokenService({ issuer: ISSUER, accessTokenTtl: 60 })
    expect(service.issuer).toBe(ISSUER)
    expect(service.endpoints.token).toBe(`${ISSUER}/connect/token`)
  })
})

describe('client registrations', () => {
  const valid = { clientId: 'c', clientSecret: 's', permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'] }

  it.each([
    ['clientId', { ...valid, clientId: '' }],
    ['clientId', { ...valid, clientId: 'tab\there' }],
    ['clientId', { ...valid, clientId: 'x'.repeat(256) }],
    ['clientId', { permissions: [] }],
    ['clientSecret', { ...valid, clientSecret: '' }],
    ['clientSecret', { clientId: 'c', permissions: ['ept:token', 'gt:client_credentials'] }],
    ['permissions', { clientId: 'c' }],
    ['permissions.1', { ...valid, permissions: ['ept:token', 'ept:everything'] }],
    ['permissions.0', { ...valid, permissions: ['scp:'] }],
    ['permissions.0', { ...valid, permissions: ['gt:password'] }],
    ['redirectUris.0', { ...valid, redirectUris: ['/relative'] }],
    ['redirectUris.0', { ...valid, redirectUris: ['https://rp.example.test/cb#fragment'] }],
    ['redirectUris', { ...valid, redirectUris: ['http://rp.example.test/cb'] }],
    ['consentType', { ...valid, consentType: 'sometimes' }],
    ['lifetimes.accessToken', { ...valid, lifetimes: { accessToken: 0 } }],
    ['lifetimes.accessToken', { ...valid, lifetimes: { accessToken: 'long' } }],
    ['lifetimes.forever', { ...valid, lifetimes: { forever: 1 } }],
    ['clientID', { ...valid, clientID: 'typo' }],
  ])('a bad %s throws a TypeError naming it', async (field, registration) => {
    expect(() => parseClientRegistration(registration)).toThrow(TypeError)
    let message = ''
    try {
      parseClientRegistration(registration)
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toMatch(/^invalid client registration\n/)
    const fields = message
      .split('\n')
      .slice(1)
      .map((line) => line.split(': ')[0])
    expect(fields).toContain(field)

    // The host API rejects it the same way, and nothing is stored.
    const service = createTokenService({ issuer: ISSUER, secretHashIterations: 1000 })
    await expect(service.clients.ensure(registration as never)).rejects.toThrow(TypeError)
    expect(await service.store.clients.list()).toEqual([])
  })

  it('accepts loopback http redirect URIs for native apps', () => {
    for (const uri of ['http://127.0.0.1:8080/cb', 'http://localhost/cb', 'http://[::1]:1234/cb']) {
      expect(
        parseClientRegistration({ clientId: 'native', permissions: [], redirectUris: [uri] }).redirectUris,
      ).toEqual([uri])
    }
  })

  it('deduplicates permissions and applies defaults', () => {
    expect(parseClientRegistration({ clientId: 'c', permissions: ['ept:token', 'ept:token'] })).toMatchObject({
      permissions: ['ept:token'],
      redirectUris: [],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
    })
  })

  it.each([
    ['localhost', true],
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['[::1]', true],
    ['localhost.example.test', false],
    ['128.0.0.1', false],
    ['127.0.0.1.example.test', false],
  ])('isLoopback(%s) → %s', (host, expected) => {
    expect(isLoopback(host)).toBe(expected)
  })
})
