import { base64url, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { createDpopNonces } from '../../../src/dpop/nonce.ts'
import { verifyDpopProof } from '../../../src/dpop/proof.ts'
import type { OAuthError } from '../../../src/errors.ts'
import { TOKEN, URL_, replays } from './fixtures.ts'

const nonceSecret = new Uint8Array(32).fill(7)

describe('verifyDpopProof: proofs made by oauth4webapi', () => {
  it('X-05: a resource request proof (ath) verifies, after one use_dpop_nonce retry', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
    const handle = oauth.DPoP({}, { privateKey, publicKey })
    const now = Math.floor(Date.now() / 1000)
    const live = createDpopNonces({ secret: () => nonceSecret, now: () => now })
    const replay = replays()
    const url = new URL('https://rs.example.test/api/items?page=2')
    const seen: unknown[] = []
    type Init = oauth.CustomFetchOptions<string, oauth.ProtectedResourceRequestBody>
    const resource = async (href: string, init: Init): Promise<Response> => {
      const request = new Request(href, { method: init.method, headers: init.headers })
      const token = request.headers.get('authorization')?.replace(/^DPoP /, '') ?? ''
      const args = { method: request.method, url: 'https://rs.example.test/api/items', now, replay, nonces: live }
      try {
        seen.push(await verifyDpopProof({ ...args, header: request.headers.get('dpop'), accessToken: token }))
        return Response.json({ ok: true })
      } catch (err) {
        const { code, headers } = err as OAuthError
        seen.push(code)
        const challenge = `DPoP error="${code}", algs="ES256"`
        return new Response(null, { status: 401, headers: { ...headers, 'www-authenticate': challenge } })
      }
    }
    const request = () =>
      oauth.protectedResourceRequest(TOKEN, 'GET', url, undefined, undefined, {
        DPoP: handle,
        [oauth.customFetch]: resource,
      })
    const first = await request().catch((err: unknown) => err)
    expect(oauth.isDPoPNonceError(first)).toBe(true)
    const response = await request()
    expect(response.status).toBe(200)
    expect(seen).toEqual(['use_dpop_nonce', expect.objectContaining({ jkt: await handle.calculateThumbprint() })])
  })

  const remapEd25519: oauth.ModifyAssertionOptions = {
    [oauth.modifyAssertion]: (header) => {
      if (header.alg === 'Ed25519') header.alg = 'EdDSA'
    },
  }
  it.each([
    ['Ed25519', undefined],
    ['EdDSA', remapEd25519],
  ])('a token endpoint proof (no ath) signed %s verifies', async (alg, options) => {
    const { privateKey, publicKey } = await generateKeyPair('EdDSA', { extractable: true })
    const handle = oauth.DPoP({}, { privateKey, publicKey }, options)
    const as = { issuer: 'https://auth.example.test', token_endpoint: URL_ }
    let header: string | null = null
    await oauth
      .clientCredentialsGrantRequest(as, { client_id: 'c' }, oauth.None(), new URLSearchParams(), {
        DPoP: handle,
        [oauth.customFetch]: async (_href, init) => {
          header = new Headers(init.headers).get('dpop')
          return Response.json({ access_token: 'x', token_type: 'DPoP' })
        },
      })
      .catch(() => undefined)
    const now = Math.floor(Date.now() / 1000)
    const result = await verifyDpopProof({ header, method: 'POST', url: URL_, now, replay: replays() })
    expect(result.jkt).toBe(await handle.calculateThumbprint())
    expect(JSON.parse(new TextDecoder().decode(base64url.decode(String(header).split('.')[0] ?? '')))).toMatchObject({
      alg,
    })
  })
})
