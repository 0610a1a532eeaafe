/**
 * #20/#21: a client may register the alg of its ID tokens (`idTokenSignedResponseAlg`, OpenID
 * Connect Registration §2 `id_token_signed_response_alg`), one of the algs the service signs with;
 * discovery lists exactly those (DISC-11), so resource-server libraries that take their accepted
 * algs from it accept the ES256 access tokens too. oauth4webapi checks the ID token's alg against
 * the client's registered one.
 */
import * as oauth from 'oauth4webapi'
import { decodeProtectedHeader } from 'jose'
import { describe, expect, it } from 'vitest'
import { setup, signIn, webClient } from '../../helpers/flow.ts'
import { makeService } from '../../helpers/service.ts'

async function discovery(options: Parameters<typeof makeService>[0] = {}): Promise<Record<string, unknown>> {
  const { service } = await makeService(options)
  const response = await service.fetch(new Request(`${service.endpoints.openidConfiguration}`))
  return (await response.json()) as Record<string, unknown>
}

describe('#21 idTokenSignedResponseAlg and the algs discovery lists', () => {
  it('DISC-11: id_token_signing_alg_values_supported is every alg the service signs with, its ID token alg first', async () => {
    expect((await discovery()).id_token_signing_alg_values_supported).toEqual(['RS256', 'ES256'])
    expect(
      (await discovery({ idTokenSigningAlg: 'PS256', accessTokenSigningAlg: 'EdDSA' }))
        .id_token_signing_alg_values_supported,
    ).toEqual(['PS256', 'RS256', 'EdDSA'])
  })

  it('FAPI 2.0 §5.4.1: under fapi2-security no RS256 is listed and the ID token alg is ES256', async () => {
    const doc = await discovery({ profile: 'fapi2-security' })
    expect(doc.id_token_signing_alg_values_supported).toEqual(['ES256'])
    expect(doc.token_endpoint_auth_methods_supported).toEqual(['private_key_jwt'])
    expect(doc.code_challenge_methods_supported).toEqual(['S256'])
    expect(doc.require_pushed_authorization_requests).toBe(true)
  })

  it('a client registered for ES256 gets ES256 ID tokens (code and refresh); others keep RS256', async () => {
    const ctx = await setup()
    const plain = await signIn(ctx, { scope: 'openid offline_access' })
    expect(decodeProtectedHeader(plain.result.id_token as string).alg).toBe('RS256')
    await ctx.service.clients.update('web', { idTokenSignedResponseAlg: 'ES256' })
    const client: oauth.Client = { ...webClient, id_token_signed_response_alg: 'ES256' }
    const { result } = await signIn(ctx, { client, scope: 'openid offline_access' })
    expect(decodeProtectedHeader(result.id_token as string).alg).toBe('ES256')
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      client,
      await oauth.refreshTokenGrantRequest(
        ctx.as,
        client,
        oauth.ClientSecretBasic('web-secret'),
        result.refresh_token as string,
        ctx.opts,
      ),
    )
    expect(decodeProtectedHeader(refreshed.id_token as string).alg).toBe('ES256')
  })

  it('a registration naming an alg the service does not sign with is refused', async () => {
    const { service } = await makeService()
    await expect(
      service.clients.ensure({ clientId: 'eddsa-app', permissions: ['ept:token'], idTokenSignedResponseAlg: 'EdDSA' }),
    ).rejects.toThrow(/idTokenSignedResponseAlg: EdDSA is not one the service signs with \(RS256, ES256\)/)
  })
})
