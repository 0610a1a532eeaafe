/**
 * Dynamic client registration (RFC 7591 §2, §3.2) of private_key_jwt clients (RFC 7523, OpenID
 * Connect Core §9): `jwks` (public signature keys only) or an https `jwks_uri`, never both, and no
 * client_secret issued; the token endpoint then takes the client's assertions. The metadata
 * `id_token_signed_response_alg` (OpenID Connect Registration §2), `require_pushed_authorization_requests`
 * (RFC 9126 §6) and `dpop_bound_access_tokens` (RFC 9449 §5.2) round-trip through the registration
 * response and RFC 7592 reads, and land on the client record.
 */
import { exportJWK } from 'jose'
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent } from '../../../src/index.ts'
import { ISSUER, basic, form } from '../../helpers/service.ts'
import {
  TOKEN,
  assertionRequest,
  clientCredentials,
  clientKey,
  errorOf,
  keyAuth,
  keyService,
  signAssertion,
} from '../client_auth/private_key_jwt_fixtures.ts'

const DCR = {
  scopes: ['api1'],
  grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'] as Array<
    'authorization_code' | 'refresh_token' | 'client_credentials'
  >,
}
const KEYED = { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', scope: 'api1' }

async function setup(options: Parameters<typeof keyService>[1] = {}) {
  const events: GatehouseEvent[] = []
  const ctx = await keyService([], {
    dynamicClientRegistration: DCR,
    onEvent: (event) => void events.push(event),
    ...options,
  })
  const register = (body: unknown) =>
    ctx.service.fetch(
      new Request(`${ISSUER}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    )
  return { ...ctx, events, register }
}

describe('RFC 7591 registration of private_key_jwt clients', () => {
  it('RFC 7591 §3.2.1 a client registers jwks, gets no secret, and gets a token with its key (RFC 7523 §2.2)', async () => {
    const ctx = await setup()
    const key = await clientKey('ES256')
    const response = await ctx.register({ ...KEYED, jwks: { keys: [key.jwk] } })
    expect(response.status).toBe(201)
    const info = (await response.json()) as Record<string, unknown> & { client_id: string }
    expect(info.client_secret).toBeUndefined()
    expect(info.client_secret_expires_at).toBeUndefined()
    expect(info).toMatchObject({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [key.jwk] },
      grant_types: ['client_credentials'],
    })
    expect(ctx.events).toContainEqual(
      expect.objectContaining({ type: 'client.registered', clientId: info.client_id, authMethod: 'private_key_jwt' }),
    )
    const result = await clientCredentials(ctx, info.client_id, keyAuth(key))
    expect(result).toMatchObject({ token_type: 'bearer', access_token: expect.any(String) })
    // It has no secret to authenticate with.
    const secret = await ctx.service.fetch(
      form(TOKEN, { grant_type: 'client_credentials' }, { authorization: basic(info.client_id, '') }),
    )
    expect(secret.status).toBe(401)
  })

  const PUBLIC_ONLY = 'jwks must hold public keys only'
  const PRIVATE_HOST = 'jwks_uri must not be on a private or local address'
  const HTTPS = 'jwks_uri must be an https URL without user information'
  it.each<[string, Record<string, unknown>, string]>([
    [
      'jwks and jwks_uri together (RFC 7591 §2)',
      { jwks: 'KEYS', jwks_uri: 'https://keys.example.test/jwks' },
      'jwks and jwks_uri must not both be present',
    ],
    ['a private key in jwks', { jwks: 'PRIVATE' }, PUBLIC_ONLY],
    ['a symmetric key in jwks', { jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, PUBLIC_ONLY],
    ['jwks that is not a JWK set', { jwks: [{ kty: 'EC' }] }, 'jwks must be a JWK set'],
    ['jwks without a signature key', { jwks: { keys: [] } }, 'jwks must hold 1 to 20 signature keys'],
    [
      'a key lacking its public members',
      { jwks: { keys: [{ kty: 'EC', crv: 'P-256' }] } },
      'jwks holds a key that lacks its public members',
    ],
    ['neither jwks nor jwks_uri', {}, 'private_key_jwt needs jwks or jwks_uri'],
    ['an http jwks_uri', { jwks_uri: 'http://keys.example.test/jwks' }, HTTPS],
    ['a jwks_uri with user info', { jwks_uri: 'https://user:pw@keys.example.test/jwks' }, HTTPS],
    ['a jwks_uri on a private address', { jwks_uri: 'https://10.1.2.3/jwks' }, PRIVATE_HOST],
    ['a jwks_uri on localhost', { jwks_uri: 'https://localhost/jwks' }, PRIVATE_HOST],
    [
      'an unsupported id_token_signed_response_alg',
      { jwks: 'KEYS', id_token_signed_response_alg: 'none' },
      'id_token_signed_response_alg must be one of id_token_signing_alg_values_supported',
    ],
    [
      'a non-boolean require_pushed_authorization_requests',
      { jwks: 'KEYS', require_pushed_authorization_requests: 'yes' },
      'require_pushed_authorization_requests must be a boolean',
    ],
    [
      'a non-boolean dpop_bound_access_tokens',
      { jwks: 'KEYS', dpop_bound_access_tokens: 1 },
      'dpop_bound_access_tokens must be a boolean',
    ],
  ])('RFC 7591 §3.2.2 %s → invalid_client_metadata', async (_, extra, description) => {
    const ctx = await setup()
    const key = await clientKey('ES256')
    const privateJwk = { ...(await exportJWK(key.privateKey)), kid: key.kid }
    const jwks =
      extra.jwks === 'KEYS' ? { keys: [key.jwk] } : extra.jwks === 'PRIVATE' ? { keys: [privateJwk] } : extra.jwks
    const response = await ctx.register({ ...KEYED, ...extra, ...(jwks !== undefined ? { jwks } : {}) })
    expect(response.status).toBe(400)
    // The description names the field, never the value sent.
    expect(await errorOf(response)).toEqual({ error: 'invalid_client_metadata', error_description: description })
    expect(ctx.events.filter((event) => event.type === 'client.registration_failed')).toHaveLength(1)
  })

  it('RFC 7591 §2 a client with a secret method keeps no keys it sent (only private_key_jwt reads them)', async () => {
    const ctx = await setup()
    const key = await clientKey('ES256')
    const response = await ctx.register({
      ...KEYED,
      token_endpoint_auth_method: 'client_secret_post',
      jwks: { keys: [key.jwk] },
    })
    expect(response.status).toBe(201)
    const info = (await response.json()) as Record<string, unknown> & { client_id: string }
    expect(info.client_secret).toEqual(expect.any(String))
    expect(info.jwks).toBeUndefined()
    const assertion = await signAssertion(key, info.client_id, ctx.clock.now())
    expect((await ctx.service.fetch(assertionRequest(assertion))).status).toBe(401)
  })

  it('RFC 7592 §2.1 the new metadata round-trips: registration response, read, and the client record', async () => {
    const ctx = await setup()
    const metadata = {
      ...KEYED,
      grant_types: ['authorization_code', 'client_credentials'],
      redirect_uris: ['https://rp.example.test/cb'],
      jwks_uri: 'https://keys.example.test/jwks.json',
      id_token_signed_response_alg: 'RS256',
      require_pushed_authorization_requests: true,
      dpop_bound_access_tokens: true,
    }
    const response = await ctx.register(metadata)
    expect(response.status).toBe(201)
    const info = (await response.json()) as Record<string, unknown> & { client_id: string }
    const expected = {
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: metadata.jwks_uri,
      id_token_signed_response_alg: 'RS256',
      require_pushed_authorization_requests: true,
      dpop_bound_access_tokens: true,
    }
    expect(info).toMatchObject(expected)
    const read = await ctx.service.fetch(
      new Request(info.registration_client_uri as string, {
        headers: { authorization: `Bearer ${info.registration_access_token}` },
      }),
    )
    expect(read.status).toBe(200)
    expect(await read.json()).toMatchObject(expected)
    expect(await ctx.service.clients.find(info.client_id)).toMatchObject({
      type: 'confidential',
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: metadata.jwks_uri,
      idTokenSignedResponseAlg: 'RS256',
      requirePushedAuthorizationRequests: true,
      requireDpop: true,
      secrets: [],
    })
  })

  it('RFC 7592 §2.2 an update may swap jwks for jwks_uri, not turn the client into a secret one', async () => {
    const ctx = await setup()
    const key = await clientKey('EdDSA')
    const info = (await (await ctx.register({ ...KEYED, jwks: { keys: [key.jwk] } })).json()) as Record<
      string,
      unknown
    > & { client_id: string }
    const put = (body: Record<string, unknown>) =>
      ctx.service.fetch(
        new Request(info.registration_client_uri as string, {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${info.registration_access_token}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ client_id: info.client_id, ...body }),
        }),
      )
    const swapped = await put({ ...KEYED, jwks_uri: 'https://keys.example.test/jwks.json' })
    expect(swapped.status).toBe(200)
    const after = await ctx.service.clients.find(info.client_id)
    expect(after?.jwksUri).toBe('https://keys.example.test/jwks.json')
    expect(after?.jwks).toBeUndefined()
    const toSecret = await put({ ...KEYED, token_endpoint_auth_method: 'client_secret_basic' })
    expect(toSecret.status).toBe(400)
    expect((await errorOf(toSecret)).error).toBe('invalid_client_metadata')
  })

  it('RFC 7591 §2 a self-registered jwks_uri whose host resolves to a private address is never fetched', async () => {
    const ctx = await setup({ resolveHost: async () => ['10.0.0.5'] })
    const key = await clientKey('ES256')
    const response = await ctx.register({ ...KEYED, jwks_uri: 'https://keys.example.test/jwks.json' })
    expect(response.status).toBe(201)
    const { client_id } = (await response.json()) as { client_id: string }
    const token = await ctx.service.fetch(assertionRequest(await signAssertion(key, client_id, ctx.clock.now())))
    expect(token.status).toBe(401)
    expect(await errorOf(token)).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' })
    expect(ctx.events).toContainEqual(
      expect.objectContaining({
        type: 'client.authentication_failed',
        clientId: client_id,
        reason: 'keys_unavailable',
      }),
    )
  })
})
