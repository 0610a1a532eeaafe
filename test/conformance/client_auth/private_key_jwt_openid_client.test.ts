/**
 * TOK-13 INT-01 REV-03 with openid-client v6: `client.PrivateKeyJwt(key)` as the ClientAuth of
 * `client.discovery(...)`, then client_credentials, introspection and revocation. In process (the
 * https test issuer, fetch is the handler) and over real HTTP (an http issuer on 127.0.0.1, which
 * openid-client allows only with `allowInsecureRequests`), the client's keys served by a jwksUri.
 */
import type { Server } from 'node:http'
import * as client from 'openid-client'
import { afterEach, describe, expect, it } from 'vitest'
import { serveNode } from '../../../adapters/node.ts'
import { createTokenService } from '../../../src/index.ts'
import { ISSUER } from '../../helpers/service.ts'
import { freePort } from '../../runtime/server.ts'
import { clientKey, jwksServer, keyClient, keyService, liveClock } from './private_key_jwt_fixtures.ts'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** client_credentials, introspection of the token, its revocation, introspection again. */
async function roundTrip(config: client.Configuration): Promise<void> {
  const tokens = await client.clientCredentialsGrant(config, { scope: 'api1' })
  expect(tokens).toMatchObject({ token_type: 'bearer', access_token: expect.any(String) })
  expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({
    active: true,
    client_id: 'kc',
  })
  await client.tokenRevocation(config, tokens.access_token)
  expect(await client.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false })
}

describe('TOK-13 private_key_jwt with openid-client v6', () => {
  it.each(['ES256', 'EdDSA', 'PS256'])(
    'TOK-13 INT-01 REV-03 discovery with PrivateKeyJwt (%s), client_credentials, introspection, revocation',
    async (alg) => {
      const key = await clientKey(alg)
      const setup = await keyService([keyClient('kc', { jwks: { keys: [key.jwk] } })])
      const fetch: client.CustomFetch = (url, options) => setup.service.fetch(new Request(url, options as RequestInit))
      const config = await client.discovery(
        new URL(ISSUER),
        'kc',
        undefined,
        client.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }),
        { [client.customFetch]: fetch },
      )
      config[client.customFetch] = fetch
      expect(config.serverMetadata().token_endpoint_auth_methods_supported).toContain('private_key_jwt')
      await roundTrip(config)
    },
  )

  it('TOK-13 over real HTTP: an http issuer on 127.0.0.1 (allowInsecureRequests) and a jwksUri', async () => {
    const key = await clientKey('ES256')
    const keys = await jwksServer([key.jwk])
    closers.push(() => keys.close())
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    const clock = liveClock()
    const service = createTokenService({
      issuer,
      now: clock.now,
      secretHashIterations: 1000,
      logger: { warn() {}, error() {} },
    })
    await service.clients.ensure(keyClient('kc', { jwksUri: keys.url }))
    await service.ready()
    const server: Server = await serveNode(service.fetch, { port, hostname: '127.0.0.1' })
    closers.push(() => new Promise((resolve) => server.close(() => resolve())))

    const auth = client.PrivateKeyJwt(key.privateKey)
    // openid-client refuses http unless told otherwise.
    await expect(client.discovery(new URL(issuer), 'kc', undefined, auth)).rejects.toThrow()
    const config = await client.discovery(new URL(issuer), 'kc', undefined, auth, {
      execute: [client.allowInsecureRequests],
    })
    await roundTrip(config)
    expect(keys.fetches).toBe(1)
  })
})
