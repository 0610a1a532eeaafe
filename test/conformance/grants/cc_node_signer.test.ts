/**
 * CC-01 with the Node adapter's synchronous signer injected: the client credentials grant and the
 * code flow pass oauth4webapi's response validation, and their JWTs verify against the JWKS. And
 * with all of `nodeServiceOptions()` (signer, HMAC, SHA-256): code + PKCE, refresh rotation,
 * introspection and revocation of refresh tokens, and sign-out behave as on WebCrypto.
 */
import { createLocalJWKSet, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { nodeServiceOptions, nodeSha256, nodeSigner } from '../../../adapters/node.ts'
import { sha256 } from '../../../src/crypto/opaque.ts'
import type { JwsSigner } from '../../../src/index.ts'
import { setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { ISSUER, discover, inProcess, makeService } from '../../helpers/service.ts'

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

describe('nodeServiceOptions (synchronous HMAC, SHA-256 and signatures)', () => {
  it('nodeSha256 is the base64url SHA-256 of the UTF-8 value, as the WebCrypto default', async () => {
    const digest = nodeSha256()
    for (const value of ['', 'abc', 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk', 'Zoë ✓ 名前', 'x'.repeat(10_000)]) {
      expect(digest(value)).toBe(await sha256(value))
    }
    // RFC 7636 Appendix B: the S256 challenge of the example verifier.
    expect(digest('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')
  })

  it('RT-01 RT-03: code + PKCE, refresh rotation, reuse detection, introspection and revocation work on it', async () => {
    const options = nodeServiceOptions()
    let digests = 0
    const ctx = await setup({
      ...options,
      sha256: (value) => {
        digests++
        return options.sha256(value)
      },
    })
    const { result } = await signIn(ctx, { scope: 'openid offline_access api1' })
    expect(digests).toBeGreaterThanOrEqual(3) // session, code, PKCE verifier, refresh token
    const first = result.refresh_token as string
    expect(first).toBeTypeOf('string')

    const introspect = async (token: string) => {
      const response = await oauth.introspectionRequest(ctx.as, webClient, webAuth, token, ctx.opts)
      return oauth.processIntrospectionResponse(ctx.as, webClient, response)
    }
    expect(await introspect(first)).toMatchObject({ active: true, token_type: 'refresh_token', client_id: 'web' })

    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, first, ctx.opts),
    )
    const second = refreshed.refresh_token as string
    expect(second).not.toBe(first)
    expect(await introspect(first)).toEqual({ active: false })
    expect(await introspect(second)).toMatchObject({ active: true })

    // Reuse of the rotated token revokes the family: the successor stops working too.
    const reuse = await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, first, ctx.opts)
    expect(reuse.status).toBe(400)
    expect(await introspect(second)).toEqual({ active: false })

    // A fresh family, revoked through the revocation endpoint.
    const again = await signIn(ctx, { scope: 'openid offline_access api1' })
    const third = again.result.refresh_token as string
    const revoked = await oauth.revocationRequest(ctx.as, webClient, webAuth, third, ctx.opts)
    await oauth.processRevocationResponse(revoked)
    expect(await introspect(third)).toEqual({ active: false })
  })
})
