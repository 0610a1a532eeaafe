/**
 * TOK-13 (RFC 7523 §2.2 and §3, OpenID Connect Core §9): private_key_jwt through oauth4webapi's
 * PrivateKeyJwt (`aud` = the issuer) with ES256, EdDSA (Ed25519), RS256 and PS256 keys; inline
 * `jwks` and a `jwksUri` served over HTTP on 127.0.0.1; key rotation (a new kid → a refetch); the
 * audiences accepted (issuer, token endpoint, the endpoint called); introspection and revocation
 * (INT-01, REV-03) authenticated the same way.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { basic, form } from '../../helpers/service.ts'
import {
  INTROSPECTION,
  TOKEN,
  assertionRequest,
  clientCredentials,
  clientKey,
  errorOf,
  jwksServer,
  keyAuth,
  keyClient,
  keyService,
  refusal,
  signAssertion,
} from './private_key_jwt_fixtures.ts'

const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

async function served(keys: Parameters<typeof jwksServer>[0]) {
  const server = await jwksServer(keys)
  servers.push(server)
  return server
}

describe('TOK-13 private_key_jwt with oauth4webapi', () => {
  it.each(['ES256', 'EdDSA', 'RS256', 'PS256'])(
    'TOK-13 client_credentials with an inline %s key gets a token for the client',
    async (alg) => {
      const key = await clientKey(alg)
      const setup = await keyService([keyClient('kc', { jwks: { keys: [key.jwk] } })])
      const result = await clientCredentials(setup, 'kc', keyAuth(key))
      expect(result).toMatchObject({ token_type: 'bearer', access_token: expect.any(String), expires_in: 3600 })
      expect(decodeJwt(result.access_token)).toMatchObject({ client_id: 'kc', sub: 'kc', aud: 'api1' })
    },
  )

  it('TOK-13 a key without kid verifies too (each registered key that fits the alg is tried)', async () => {
    const key = await clientKey('ES256')
    const { kid: _, ...withoutKid } = key.jwk
    const setup = await keyService([keyClient('kc', { jwks: { keys: [withoutKid] } })])
    const auth = oauth.PrivateKeyJwt(key.privateKey)
    await expect(clientCredentials(setup, 'kc', auth)).resolves.toMatchObject({ token_type: 'bearer' })
  })

  it('TOK-13 a jwksUri on 127.0.0.1 is fetched over HTTP once and cached', async () => {
    const key = await clientKey('ES256')
    const server = await served([key.jwk])
    const setup = await keyService([keyClient('remote', { jwksUri: server.url })])
    for (let i = 0; i < 3; i++) {
      await expect(clientCredentials(setup, 'remote', keyAuth(key))).resolves.toMatchObject({ token_type: 'bearer' })
    }
    expect(server.fetches).toBe(1)
  })

  it('TOK-13 key rotation: a new kid makes the service fetch the jwksUri again, at most once per 30 s', async () => {
    const [first, next] = [await clientKey('ES256', 'k1'), await clientKey('EdDSA', 'k2')]
    const server = await served([first.jwk])
    const setup = await keyService([keyClient('remote', { jwksUri: server.url })])
    await clientCredentials(setup, 'remote', keyAuth(first))
    expect(server.fetches).toBe(1)

    server.serve([first.jwk, next.jwk])
    // Within 30 s of the last fetch the unknown kid gets no refetch: a flood of made-up kids
    // cannot make the service hammer the client's host.
    expect(await refusal(clientCredentials(setup, 'remote', keyAuth(next)))).toEqual({
      error: 'invalid_client',
      error_description: 'client authentication failed',
    })
    expect(server.fetches).toBe(1)

    setup.clock.advance(31)
    await expect(clientCredentials(setup, 'remote', keyAuth(next))).resolves.toMatchObject({ token_type: 'bearer' })
    expect(server.fetches).toBe(2)
    // The old key is still published: it keeps working, from the cache.
    await expect(clientCredentials(setup, 'remote', keyAuth(first))).resolves.toMatchObject({ token_type: 'bearer' })
    expect(server.fetches).toBe(2)
  })

  it('TOK-13 aud may be the issuer, the token endpoint, or the endpoint called (OpenID Connect Core §9)', async () => {
    const key = await clientKey('ES256')
    const setup = await keyService([keyClient('kc', { jwks: { keys: [key.jwk] } })])
    const now = setup.clock.now()
    for (const aud of [setup.as.issuer, TOKEN, [TOKEN, 'https://elsewhere.example']]) {
      const response = await setup.service.fetch(assertionRequest(await signAssertion(key, 'kc', now, { aud })))
      expect(response.status, JSON.stringify(aud)).toBe(200)
    }
    // The introspection endpoint's URL is an audience there, not at the token endpoint.
    const atIntrospection = await signAssertion(key, 'kc', now, { aud: INTROSPECTION })
    const introspected = await setup.service.fetch(
      assertionRequest(atIntrospection, { token: 'not-a-token' }, {}, INTROSPECTION),
    )
    expect(introspected.status).toBe(200)
    expect(await introspected.json()).toEqual({ active: false })
    const atToken = await setup.service.fetch(
      assertionRequest(await signAssertion(key, 'kc', now, { aud: INTROSPECTION })),
    )
    expect(atToken.status).toBe(401)
    expect(await errorOf(atToken)).toEqual({
      error: 'invalid_client',
      error_description: 'client_assertion aud must be the issuer identifier',
    })
  })

  it('TOK-13 a form client_id naming the assertion’s client is fine; another one is invalid_client', async () => {
    const key = await clientKey('ES256')
    const setup = await keyService([keyClient('kc', { jwks: { keys: [key.jwk] } })])
    const now = setup.clock.now()
    const same = await setup.service.fetch(assertionRequest(await signAssertion(key, 'kc', now), { client_id: 'kc' }))
    expect(same.status).toBe(200)
    const other = await setup.service.fetch(
      assertionRequest(await signAssertion(key, 'kc', now), { client_id: 'service' }),
    )
    expect(other.status).toBe(401)
    expect((await errorOf(other)).error).toBe('invalid_client')
  })
})

describe('INT-01 REV-03 introspection and revocation with private_key_jwt', () => {
  it('INT-01 INT-02 REV-03 REV-07: the client introspects and revokes its token, authenticated by assertions', async () => {
    const key = await clientKey('PS256')
    const setup = await keyService([keyClient('kc', { jwks: { keys: [key.jwk] } })])
    const client: oauth.Client = { client_id: 'kc' }
    const { access_token } = await clientCredentials(setup, 'kc', keyAuth(key))

    const introspect = async () => {
      const response = await oauth.introspectionRequest(setup.as, client, keyAuth(key), access_token, setup.opts)
      return oauth.processIntrospectionResponse(setup.as, client, response)
    }
    expect(await introspect()).toMatchObject({ active: true, client_id: 'kc', token_type: 'Bearer' })

    const revoked = await oauth.revocationRequest(setup.as, client, keyAuth(key), access_token, setup.opts)
    await expect(oauth.processRevocationResponse(revoked)).resolves.toBeUndefined()
    expect(await introspect()).toEqual({ active: false })
  })

  it('INT-01: a secret for a private_key_jwt client does not authenticate at introspection either', async () => {
    const key = await clientKey('ES256')
    const setup = await keyService([keyClient('kc', { jwks: { keys: [key.jwk] } })])
    const response = await setup.service.fetch(
      form(INTROSPECTION, { token: 'x' }, { authorization: basic('kc', 'any-secret') }),
    )
    expect(response.status).toBe(401)
    expect(await errorOf(response)).toEqual({
      error: 'invalid_client',
      error_description: 'client authentication failed',
    })
  })
})
