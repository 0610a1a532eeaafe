/**
 * FAPI 2.0 Security Profile §5.3.2.1 (client authentication: private_key_jwt only; the assertion's
 * `aud` is the issuer identifier as a string, draft-ietf-oauth-rfc7523bis) and §5.4.1 (PS256,
 * ES256, EdDSA) under `profile: 'fapi2-security'`: a client with a secret is refused as
 * invalid_client naming the profile, a private_key_jwt client gets a (DPoP-bound) token.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { basic, form } from '../../helpers/service.ts'
import {
  INTROSPECTION,
  TOKEN,
  assertionRequest,
  clientKey,
  errorOf,
  keyAuth,
  keyClient,
  keyService,
  signAssertion,
} from './private_key_jwt_fixtures.ts'

const PROFILE_REFUSAL = {
  error: 'invalid_client',
  error_description: 'the fapi2-security profile admits only clients authenticating with private_key_jwt',
}

async function setup() {
  const [es, rs] = [await clientKey('ES256'), await clientKey('RS256')]
  const ctx = await keyService([keyClient('kc', { jwks: { keys: [es.jwk, rs.jwk] } })], {
    profile: 'fapi2-security',
    accessTokenSigningAlg: 'ES256',
    idTokenSigningAlg: 'ES256',
  })
  return { ...ctx, es, rs }
}

describe('FAPI 2.0 §5.3.2.1 client authentication under fapi2-security', () => {
  it('FAPI2 §5.3.2.1 a client authenticating with its secret is refused (Basic and post), a wrong secret as any', async () => {
    const ctx = await setup()
    const cc = { grant_type: 'client_credentials' }
    const viaBasic = await ctx.service.fetch(form(TOKEN, cc, { authorization: basic('service', 'service-secret') }))
    const viaPost = await ctx.service.fetch(
      form(INTROSPECTION, { token: 'x', client_id: 'service', client_secret: 'service-secret' }),
    )
    for (const response of [viaBasic, viaPost]) {
      expect(response.status).toBe(401)
      expect(await errorOf(response)).toEqual(PROFILE_REFUSAL)
    }
    // Only a caller that proved who it is learns why: a wrong secret is the usual failure.
    const wrong = await ctx.service.fetch(form(TOKEN, cc, { authorization: basic('service', 'wrong') }))
    expect(await errorOf(wrong)).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' })
  })

  it('FAPI2 §5.3.2.1 a private_key_jwt client gets a DPoP-bound token (oauth4webapi, aud = issuer)', async () => {
    const ctx = await setup()
    const client: oauth.Client = { client_id: 'kc' }
    const dpop = oauth.DPoP(client, await oauth.generateKeyPair('ES256'))
    const response = await oauth.clientCredentialsGrantRequest(
      ctx.as,
      client,
      keyAuth(ctx.es),
      { scope: 'api1' },
      { ...ctx.opts, DPoP: dpop },
    )
    const result = await oauth.processClientCredentialsResponse(ctx.as, client, response)
    expect(result.token_type).toBe('dpop')
    // Introspection takes no DPoP proof: the assertion alone authenticates there.
    const introspected = await oauth.introspectionRequest(
      ctx.as,
      client,
      keyAuth(ctx.es),
      result.access_token,
      ctx.opts,
    )
    expect(await oauth.processIntrospectionResponse(ctx.as, client, introspected)).toMatchObject({ active: true })
  })

  it.each([
    ['the token endpoint URL', { aud: TOKEN }],
    ['the issuer inside an array', { aud: ['https://auth.example.test'] }],
    ['the endpoint called', { aud: INTROSPECTION }],
  ])('FAPI2 §5.3.2.1 aud must be the issuer as a string, not %s', async (_, claims) => {
    const ctx = await setup()
    const assertion = await signAssertion(ctx.es, 'kc', ctx.clock.now(), claims)
    const response = await ctx.service.fetch(assertionRequest(assertion, { token: 'x' }, {}, INTROSPECTION))
    expect(response.status).toBe(401)
    expect(await errorOf(response)).toEqual({
      error: 'invalid_client',
      error_description: 'client_assertion aud must be the issuer identifier',
    })
  })

  it('FAPI2 §5.4.1 an RS256 assertion is refused, even by a registered key', async () => {
    const ctx = await setup()
    const response = await ctx.service.fetch(
      assertionRequest(await signAssertion(ctx.rs, 'kc', ctx.clock.now()), { token: 'x' }, {}, INTROSPECTION),
    )
    expect(response.status).toBe(401)
    expect(await errorOf(response)).toEqual({
      error: 'invalid_client',
      error_description: 'client_assertion alg is not allowed',
    })
    // The same client's ES256 key authenticates.
    const es = await ctx.service.fetch(
      assertionRequest(await signAssertion(ctx.es, 'kc', ctx.clock.now()), { token: 'x' }, {}, INTROSPECTION),
    )
    expect(es.status).toBe(200)
  })
})
