/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; the MCP
 * authorization spec allows `private_key_jwt` with `jwks_uri`): a document declaring
 * private_key_jwt and an https `jwks_uri` makes a client that authenticates with its assertions
 * (RFC 7523 §2.2) and never with only its client_id; private_key_jwt without a `jwks_uri` is not a
 * usable document. The document comes through the option's `fetch`; the key set through the
 * global fetch (stubbed here), under the self-registered client's address rules.
 */
import type { JWK } from 'jose'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { form } from '../../helpers/service.ts'
import {
  REVOCATION,
  assertionRequest,
  clientKey,
  errorOf,
  keyService,
  signAssertion,
} from './private_key_jwt_fixtures.ts'

const DOCUMENT = 'https://tool.example.test/oauth/client.json'
const KEYS = 'https://tool.example.test/oauth/jwks.json'

async function setup(document: Record<string, unknown>, keys: JWK[]) {
  const fetched: string[] = []
  vi.stubGlobal('fetch', async (url: string) => {
    fetched.push(String(url))
    return String(url) === KEYS ? Response.json({ keys }) : new Response('not here', { status: 404 })
  })
  const ctx = await keyService([], {
    // The key sets come from the stubbed global fetch: the unpinned path, opted into (#39 item 5).
    allowUnpinnedHostNames: true,
    clientIdMetadataDocuments: {
      scopes: ['openid'],
      fetch: async (url) =>
        url === DOCUMENT
          ? Response.json({
              client_id: DOCUMENT,
              client_name: 'Keyed Tool',
              redirect_uris: ['https://tool.example.test/cb'],
              ...document,
            })
          : new Response('not here', { status: 404 }),
    },
  })
  return { ...ctx, fetched }
}

describe('private_key_jwt clients from client ID metadata documents', () => {
  afterEach(() => vi.unstubAllGlobals())

  it('a document with private_key_jwt and jwks_uri: the client authenticates with its assertion only', async () => {
    const key = await clientKey('ES256')
    const ctx = await setup({ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: KEYS }, [key.jwk])
    const assertion = await signAssertion(key, DOCUMENT, ctx.clock.now())
    const revoke = await ctx.service.fetch(assertionRequest(assertion, { token: 'whatever' }, {}, REVOCATION))
    expect(revoke.status).toBe(200)
    expect(ctx.fetched).toEqual([KEYS])
    const idOnly = await ctx.service.fetch(form(REVOCATION, { token: 'whatever', client_id: DOCUMENT }))
    expect(idOnly.status).toBe(401)
    expect(await errorOf(idOnly)).toEqual({
      error: 'invalid_client',
      error_description: 'client authentication is required',
    })
  })

  it('private_key_jwt without jwks_uri, or with an http one, is not a usable document', async () => {
    const key = await clientKey('ES256')
    for (const document of [
      { token_endpoint_auth_method: 'private_key_jwt' },
      { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://tool.example.test/jwks.json' },
    ]) {
      const ctx = await setup(document, [key.jwk])
      const assertion = await signAssertion(key, DOCUMENT, ctx.clock.now())
      const response = await ctx.service.fetch(assertionRequest(assertion, { token: 'x' }, {}, REVOCATION))
      expect(response.status, JSON.stringify(document)).toBe(401)
      expect((await errorOf(response)).error).toBe('invalid_client')
      expect(ctx.fetched).toEqual([])
      vi.unstubAllGlobals()
    }
  })
})
