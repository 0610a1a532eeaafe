import { describe, expect, it } from 'vitest'
import { parseClientRegistration } from '../../../src/clients/index.ts'
import { parseOptions } from '../../../src/config/parse.ts'
import { isLoopback } from '../../../src/security/index.ts'
import { parseConfigFile } from '../../../src/config/file.ts'
import { type IdentityAssertionIssuer, createTokenService } from '../../../src/index.ts'

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
    ['issuedRecordCache', { issuer: ISSUER, issuedRecordCache: 1.5 }],
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

describe('#21 the fapi2-security profile in the options', () => {
  it('FAPI 2.0 §5.4.1: the default RS256 ID token alg becomes ES256; PS256 and EdDSA stay', () => {
    expect(parseOptions({ issuer: 'https://id.example', profile: 'fapi2-security' }).idTokenSigningAlg).toBe('ES256')
    expect(
      parseOptions({ issuer: 'https://id.example', profile: 'fapi2-security', idTokenSigningAlg: 'PS256' })
        .idTokenSigningAlg,
    ).toBe('PS256')
    expect(parseOptions({ issuer: 'https://id.example' }).idTokenSigningAlg).toBe('RS256')
  })

  it('FAPI 2.0 §5.4.1: an RS256 or ES384 access token alg is refused under the profile', () => {
    for (const alg of ['RS256', 'ES384']) {
      expect(() =>
        parseOptions({ issuer: 'https://id.example', profile: 'fapi2-security', accessTokenSigningAlg: alg }),
      ).toThrow(`fapi2-security signs with PS256, ES256 or EdDSA only, not ${alg}`)
    }
  })

  it('#29 deviceCodeTtl (600) and deviceCodeInterval (5): defaults, positive integers, configuration file keys', () => {
    expect(parseOptions({ issuer: 'https://auth.example.com' })).toMatchObject({
      deviceCodeTtl: 600,
      deviceCodeInterval: 5,
    })
    expect(
      parseOptions({ issuer: 'https://auth.example.com', deviceCodeTtl: 300, deviceCodeInterval: 10 }),
    ).toMatchObject({ deviceCodeTtl: 300, deviceCodeInterval: 10 })
    expect(() => parseOptions({ issuer: 'https://auth.example.com', deviceCodeTtl: 0 })).toThrow(/deviceCodeTtl/)
    expect(() => parseOptions({ issuer: 'https://auth.example.com', deviceCodeInterval: 2.5 })).toThrow(
      /deviceCodeInterval/,
    )
    const file = parseConfigFile(JSON.stringify({ deviceCodeTtl: 900, deviceCodeInterval: 8 }))
    expect(file).toMatchObject({ deviceCodeTtl: 900, deviceCodeInterval: 8 })
    expect(() => parseConfigFile(JSON.stringify({ deviceCodeInterval: -1 }))).toThrow(/deviceCodeInterval/)
  })

  it('#41 cibaTtl (300) and cibaInterval (5): defaults, positive integers, configuration file keys', () => {
    expect(parseOptions({ issuer: 'https://auth.example.com' })).toMatchObject({ cibaTtl: 300, cibaInterval: 5 })
    expect(parseOptions({ issuer: 'https://auth.example.com', cibaTtl: 60, cibaInterval: 2 })).toMatchObject({
      cibaTtl: 60,
      cibaInterval: 2,
    })
    expect(() => parseOptions({ issuer: 'https://auth.example.com', cibaTtl: 0 })).toThrow(/cibaTtl/)
    expect(parseConfigFile(JSON.stringify({ cibaTtl: 120, cibaInterval: 3 }))).toMatchObject({
      cibaTtl: 120,
      cibaInterval: 3,
    })
    expect(() => parseConfigFile(JSON.stringify({ cibaInterval: -1 }))).toThrow(/cibaInterval/)
  })

  it('#39 item 7 throttle.userCode and throttle.deviceAuthorization: defaults, positive integers, configuration file keys', () => {
    expect(parseOptions({ issuer: 'https://auth.example.com' }).throttle).toMatchObject({
      userCode: { perAddress: 20, perNetwork: 100, overall: 1000 },
      deviceAuthorization: { perAddress: 30, perClient: 1000 },
    })
    const options = parseOptions({
      issuer: 'https://auth.example.com',
      throttle: { userCode: { overall: 500 }, deviceAuthorization: { perClient: 50 } },
    })
    expect(options.throttle).toMatchObject({
      userCode: { perAddress: 20, perNetwork: 100, overall: 500 },
      deviceAuthorization: { perAddress: 30, perClient: 50 },
    })
    expect(() => parseOptions({ issuer: ISSUER, throttle: { userCode: { perNetwork: 0 } } })).toThrow(
      /throttle\.userCode\.perNetwork/,
    )
    expect(() => parseOptions({ issuer: ISSUER, throttle: { deviceAuthorization: { perClient: 1.5 } } })).toThrow(
      /throttle\.deviceAuthorization\.perClient/,
    )
    // An unknown key is refused (the union of `false` and the object names `throttle` only).
    expect(() => parseOptions({ issuer: ISSUER, throttle: { deviceAuthorization: { pending: 5 } } })).toThrow(
      /throttle/,
    )
    const file = parseConfigFile(
      JSON.stringify({ throttle: { userCode: { perAddress: 10 }, deviceAuthorization: { perAddress: 5 } } }),
    )
    expect(file.throttle).toMatchObject({
      userCode: { perAddress: 10, perNetwork: 100, overall: 1000 },
      deviceAuthorization: { perAddress: 5, perClient: 1000 },
    })
    expect(() => parseConfigFile(JSON.stringify({ throttle: { userCode: { overall: -1 } } }))).toThrow(
      /throttle\.userCode\.overall/,
    )
  })

  it('the configuration file takes the #21 service settings', () => {
    const file = parseConfigFile(
      JSON.stringify({
        profile: 'fapi2-security',
        requirePushedAuthorizationRequests: true,
        parTtl: 30,
        dpop: { requireNonce: true },
      }),
    )
    expect(file).toMatchObject({
      profile: 'fapi2-security',
      requirePushedAuthorizationRequests: true,
      parTtl: 30,
      dpop: { requireNonce: true },
    })
    expect(() => parseConfigFile(JSON.stringify({ parTtl: 0 }))).toThrow(/parTtl/)
  })
})

describe('#21 client registrations: authentication method, keys and security switches', () => {
  const jwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }
  const base = { clientId: 'bank-app', permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'] }

  it('private_key_jwt with jwks or jwksUri is a confidential client without a secret', () => {
    const inline = parseClientRegistration({
      ...base,
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwks: { keys: [jwk] },
    })
    expect(inline.jwks).toEqual({ keys: [jwk] })
    const remote = parseClientRegistration({
      ...base,
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: 'https://bank-app.example/jwks.json',
      requireDpop: true,
      requirePushedAuthorizationRequests: true,
      idTokenSignedResponseAlg: 'ES256',
    })
    expect(remote).toMatchObject({ requireDpop: true, requirePushedAuthorizationRequests: true })
    expect(
      parseClientRegistration({ ...base, tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: 'http://127.0.0.1:9/j' })
        .jwksUri,
    ).toBe('http://127.0.0.1:9/j')
  })

  it('each method has what it needs and nothing it must not have', () => {
    const refused: Array<[Record<string, unknown>, RegExp]> = [
      [{ tokenEndpointAuthMethod: 'private_key_jwt' }, /exactly one of jwks and jwksUri/],
      [
        { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [jwk] }, jwksUri: 'https://a.example/j' },
        /exactly one of jwks and jwksUri/,
      ],
      [
        { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [jwk] }, clientSecret: 's' },
        /a private_key_jwt client has no secret/,
      ],
      [{ tokenEndpointAuthMethod: 'none', clientSecret: 's', permissions: ['ept:token'] }, /none has no secret/],
      [{ tokenEndpointAuthMethod: 'client_secret_post' }, /client_secret_post needs a secret/],
      [
        { tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: 'http://keys.example/j' },
        /must use https \(http only for loopback hosts\)/,
      ],
      [
        { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [{ ...jwk, d: 'private' }] } },
        /must be a public key/,
      ],
      [{ tokenEndpointAuthMethod: 'none', permissions: ['gt:client_credentials'] }, /public client cannot use/],
    ]
    for (const [fields, message] of refused) {
      expect(() => parseClientRegistration({ ...base, ...fields })).toThrow(message)
    }
  })
})

describe('#27 item 13 configuration mistakes are named plainly', () => {
  const message = (fn: () => unknown): string => {
    try {
      fn()
    } catch (err) {
      return (err as Error).message
    }
    throw new Error('did not throw')
  }

  it('#27 item 13 an unknown key in the file says "unknown key" with the likely key, every bad key at once', () => {
    const text = message(() =>
      parseConfigFile(
        JSON.stringify({
          acessTokenTtl: 300,
          clients: [
            {
              clientId: 'a',
              clientSecret: 'a-secret-a-secret',
              permissions: ['ept:token'],
              redirectUri: ['https://a.example/cb'],
              colour: 'blue',
              lifetimes: { acessToken: 60 },
            },
          ],
        }),
        'gatehouse.json',
      ),
    )
    expect(text).not.toMatch(/Expected never/)
    expect(text.split('\n').slice(1).sort()).toEqual([
      'acessTokenTtl: unknown key `acessTokenTtl` (did you mean `accessTokenTtl`?)',
      'clients.0.colour: unknown key `colour`',
      'clients.0.lifetimes.acessToken: unknown key `acessToken` (did you mean `accessToken`?)',
      'clients.0.redirectUri: unknown key `redirectUri` (did you mean `redirectUris`?)',
    ])
  })

  it('#27 item 13 createTokenService options say the same', () => {
    const text = message(() =>
      createTokenService({ issuer: 'https://auth.example', acessTokenTtl: 300, refrehTokenTtl: 4 } as never),
    )
    expect(text.split('\n').slice(1)).toEqual([
      'acessTokenTtl: unknown key `acessTokenTtl` (did you mean `accessTokenTtl`?)',
      'refrehTokenTtl: unknown key `refrehTokenTtl` (did you mean `refreshTokenTtl`?)',
    ])
  })

  it('#27 item 13 a bad gt: permission names the valid grant types', () => {
    const text = message(() =>
      parseClientRegistration({ clientId: 'a', clientSecret: 's', permissions: ['ept:token', 'gt:client_credential'] }),
    )
    expect(text).toContain(
      'permissions.1: unknown permission `gt:client_credential` (did you mean `gt:client_credentials`?): the grant type permissions are gt:authorization_code, gt:refresh_token, gt:client_credentials, gt:urn:ietf:params:oauth:grant-type:token-exchange, gt:urn:ietf:params:oauth:grant-type:device_code',
    )
    expect(message(() => parseClientRegistration({ clientId: 'a', permissions: ['bogus'] }))).toContain(
      'permissions.0: unknown permission `bogus`: expected ept:*, gt:*, rst:code or scp:<scope>',
    )
  })
})

describe('#27 item 2 redirectSchemes of self-registered clients', () => {
  it('#27 item 2 a configuration file takes redirectSchemes under dynamicClientRegistration and clientIdMetadataDocuments', () => {
    const file = parseConfigFile(
      JSON.stringify({
        dynamicClientRegistration: { scopes: ['api1'], redirectSchemes: ['cursor'] },
        clientIdMetadataDocuments: { scopes: ['api1'], redirectSchemes: ['cursor', 'com.example.app'] },
      }),
    )
    expect(file.dynamicClientRegistration?.redirectSchemes).toEqual(['cursor'])
    expect(file.clientIdMetadataDocuments?.redirectSchemes).toEqual(['cursor', 'com.example.app'])
  })

  it.each([
    'ms-msdt',
    'javascript',
    'data',
    'vbscript',
    'file',
    'http',
    'https',
    'search-ms',
    'intent',
    'jar',
    'mailto',
    'tel',
  ])('#27 item 2 redirectSchemes [%j] is a configuration error naming the key', (scheme) => {
    const error = construction({
      issuer: ISSUER,
      scopes: ['mcp:tools'],
      dynamicClientRegistration: { scopes: ['mcp:tools'], redirectSchemes: ['cursor', scheme] },
    })
    expect(error.message).toContain(
      `dynamicClientRegistration.redirectSchemes.1: ${JSON.stringify(scheme)} cannot be a redirect scheme`,
    )
    expect(() =>
      parseConfigFile(
        JSON.stringify({ clientIdMetadataDocuments: { scopes: ['api1'], redirectSchemes: [scheme] } }),
        'gatehouse.json',
      ),
    ).toThrow(`gatehouse.json: invalid configuration\nclientIdMetadataDocuments.redirectSchemes.0: "${scheme}"`)
  })

  it('#27 item 2 redirectSchemes must be lower-case scheme names without the colon', () => {
    for (const scheme of ['Cursor', 'cursor:', '1app', 'cur sor', '']) {
      expect(
        construction({ issuer: ISSUER, clientIdMetadataDocuments: { scopes: ['api1'], redirectSchemes: [scheme] } })
          .message,
      ).toContain('clientIdMetadataDocuments.redirectSchemes.0: must be a lower-case URI scheme name')
    }
  })
})

describe('#45 identityAssertion options', () => {
  it('#45 identityAssertion.issuers: defaults, exactly one of jwksUri and jwks, each issuer once, also a configuration-file key (no hook there)', () => {
    const jwks = { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }] }
    const parsed = parseOptions({
      issuer: ISSUER,
      identityAssertion: { issuers: [{ issuer: 'https://idp.example.test', jwks }] },
    })
    expect(parsed.identityAssertion?.issuers?.[0]).toMatchObject({
      algorithms: ['ES256', 'RS256', 'EdDSA'],
      accountClaim: 'email',
    })
    const idp = 'https://idp.example.test'
    expect(construction({ issuer: ISSUER, identityAssertion: { issuers: [{ issuer: idp }] } }).message).toContain(
      'identityAssertion.issuers.0: give exactly one of jwksUri and jwks',
    )
    const both = { issuer: idp, jwks, jwksUri: `${idp}/jwks` }
    expect(construction({ issuer: ISSUER, identityAssertion: { issuers: [both] } }).message).toContain(
      'give exactly one of jwksUri and jwks',
    )
    const twice = [
      { issuer: idp, jwks },
      { issuer: idp, jwksUri: `${idp}/jwks` },
    ]
    expect(construction({ issuer: ISSUER, identityAssertion: { issuers: twice } }).message).toContain(
      'an issuer appears twice',
    )
    const secret = { issuer: idp, jwks: { keys: [{ ...jwks.keys[0], d: 'private' }] } }
    expect(construction({ issuer: ISSUER, identityAssertion: { issuers: [secret] } }).message).toContain(
      'identityAssertion.issuers.0: jwks must hold public signature keys only',
    )
    const file = parseConfigFile(
      JSON.stringify({
        identityAssertion: { issuers: [{ issuer: idp, jwksUri: `${idp}/jwks`, accountClaim: 'sub' }] },
      }),
    )
    expect(file.identityAssertion?.issuers?.[0]).toMatchObject({ issuer: idp, accountClaim: 'sub' })
    // npm start passes the file's settings to createTokenService as they parsed.
    const fromFile = createTokenService({ issuer: ISSUER, identityAssertion: file.identityAssertion })
    expect(fromFile).toBeDefined()
    expect(() =>
      parseConfigFile(JSON.stringify({ identityAssertion: { findAccount: 'x' } }), 'gatehouse.json'),
    ).toThrow(/identityAssertion\.findAccount: unknown key `findAccount`/)
  })

  it("#45 an issuer mapping users by email with the host's accounts provider needs identityAssertion.findAccount", () => {
    const accounts = { findAccount: async () => undefined }
    const issuers: IdentityAssertionIssuer[] = [
      { issuer: 'https://idp.example.test', jwksUri: 'https://idp.example.test/jwks' },
    ]
    expect(construction({ issuer: ISSUER, accounts, identityAssertion: { issuers } }).message).toContain(
      "maps users by email, which the host's accounts provider cannot look up",
    )
    expect(() =>
      createTokenService({ issuer: ISSUER, accounts, identityAssertion: { issuers, findAccount: () => undefined } }),
    ).not.toThrow()
    const bySub: IdentityAssertionIssuer[] = [
      { issuer: 'https://idp.example.test', jwksUri: 'https://idp.example.test/jwks', accountClaim: 'sub' },
    ]
    expect(() => createTokenService({ issuer: ISSUER, accounts, identityAssertion: { issuers: bySub } })).not.toThrow()
  })
})
