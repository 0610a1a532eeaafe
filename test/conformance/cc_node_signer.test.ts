/**
 * CC-01 with the Node adapter's synchronous signer injected: the client credentials grant and the
 * code flow pass oauth4webapi's response validation, and their JWTs verify against the JWKS.
 */
import { createLocalJWKSet, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { nodeSigner } from '../../adapters/node.ts'
import type { JwsSigner } from '../../src/index.ts'
import { setup, signIn } from '../helpers/flow.ts'
import { ISSUER, discover, inProcess, makeService } from '../helpers/service.ts'

/** The node signer, counting its signatures per algorithm. */
function counting() {
  const signatures: Record<string, number> = {}
  const inner = nodeSigner()
  const signer: JwsSigner = (key) => {
    const sign = inner(key)
    return sign
      ? (input) => {
          signatures[key.alg] = (signatures[key.alg] ?? 0) + 1
          return sign(input)
        }
      : undefined
  }
  return { signer, signatures }
}

describe('client_credentials with the node signer', () => {
  it('CC-01: oauth4webapi accepts the response; the ES256 at+jwt verifies against the JWKS', async () => {
    const { signer, signatures } = counting()
    const { service, clock } = await makeService({ signer })
    const as = await discover(service.fetch)
    const client = { client_id: 'service' }
    const before = { ...signatures }
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic('service-secret'),
      { scope: 'api1' },
      inProcess(service.fetch),
    )
    expect(response.status).toBe(200)
    const result = await oauth.processClientCredentialsResponse(as, client, response)
    expect(result).toMatchObject({ token_type: 'bearer', expires_in: 3600 })
    expect(signatures).toEqual({ ...before, ES256: (before.ES256 ?? 0) + 1 })

    const jwks = createLocalJWKSet((await service.keys.jwks()) as never)
    const { payload, protectedHeader } = await jwtVerify(result.access_token, jwks, {
      issuer: ISSUER,
      audience: 'api1',
      typ: 'at+jwt',
      currentDate: new Date(clock.now() * 1000),
    })
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'at+jwt' })
    expect(payload).toMatchObject({ iss: ISSUER, sub: 'service', aud: 'api1', client_id: 'service', scope: 'api1' })

    // The service's own introspection accepts it too.
    const introspection = await oauth.introspectionRequest(
      as,
      client,
      oauth.ClientSecretBasic('service-secret'),
      result.access_token,
      inProcess(service.fetch),
    )
    expect(await oauth.processIntrospectionResponse(as, client, introspection)).toMatchObject({ active: true })
  })

  it('code flow: oauth4webapi accepts the response; the RS256 ID token verifies against the JWKS', async () => {
    const { signer, signatures } = counting()
    const ctx = await setup({ signer })
    const before = { ...signatures }
    const { result } = await signIn(ctx)
    expect(signatures).toEqual({ ES256: (before.ES256 ?? 0) + 1, RS256: (before.RS256 ?? 0) + 1 })
    const jwks = createLocalJWKSet((await ctx.service.keys.jwks()) as never)
    const { payload } = await jwtVerify(result.id_token as string, jwks, {
      issuer: ISSUER,
      audience: 'web',
      currentDate: new Date(ctx.clock.now() * 1000),
    })
    expect(payload).toMatchObject({ sub: 'user-1', azp: 'web', at_hash: expect.any(String) })
  })
})
