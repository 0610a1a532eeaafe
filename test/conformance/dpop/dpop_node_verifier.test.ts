/**
 * #21: DPoP proofs verified through node:crypto (`nodeDpopVerifier`, part of `nodeServiceOptions()`
 * as `npm start` runs on Node and Bun) instead of WebCrypto: the same answers as the default path,
 * for ES256, EdDSA (oauth4webapi names it Ed25519) and PS256 keys, a forged signature refused.
 */
import { CompactSign, exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { nodeDpopVerifier, nodeServiceOptions } from '../../../adapters/node.ts'
import {
  cnfOf,
  dpopClientCredentials,
  dpopKey,
  dpopSetup,
  handProof,
  serviceClient,
  tokenRequest,
} from './dpop_fixtures.ts'

describe('#21 DPoP proofs checked by nodeDpopVerifier', () => {
  it.each(['ES256', 'EdDSA', 'PS256'] as const)(
    'RFC 9449 §4.3: a %s proof binds the client_credentials token as with WebCrypto',
    async (alg) => {
      const { resolveHost: _resolve, dpopVerifier, ...options } = nodeServiceOptions()
      let verified = 0
      const counting: typeof dpopVerifier = (key) => {
        const verify = dpopVerifier(key)
        if (!verify) return undefined
        return (input, signature) => {
          verified++
          return verify(input, signature)
        }
      }
      const ctx = await dpopSetup({ ...options, dpopVerifier: counting })
      const key = await dpopKey(alg)
      const response = await dpopClientCredentials(ctx, oauth.DPoP({}, key.keyPair))
      const result = await oauth.processClientCredentialsResponse(ctx.as, serviceClient, response)
      expect(result.token_type).toBe('dpop')
      expect(cnfOf(result.access_token)).toEqual({ jkt: key.jkt })
      expect(verified).toBe(1)
    },
  )

  it('RFC 9449 §4.3 point 7: a proof whose signature does not verify is invalid_dpop_proof', async () => {
    const ctx = await dpopSetup({ dpopVerifier: nodeDpopVerifier() })
    const key = await dpopKey()
    const proof = await handProof(ctx, key)
    const [header, payload, signature] = proof.split('.') as [string, string, string]
    const forged = `${header}.${payload}.${signature.startsWith('A') ? `B${signature.slice(1)}` : `A${signature.slice(1)}`}`
    const response = await tokenRequest(
      ctx,
      { grant_type: 'client_credentials', scope: 'api1' },
      { auth: ['service', 'service-secret'], proof: forged },
    )
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: string }).error).toBe('invalid_dpop_proof')
  })

  it('verifies the proofs of one turn together, each with its own answer; batch: false answers in the call', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
    const jwk = await exportJWK(publicKey)
    const encoder = new TextEncoder()
    const signed = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        new CompactSign(encoder.encode(`{"n":${i}}`)).setProtectedHeader({ alg: 'ES256' }).sign(privateKey),
      ),
    )
    const parts = signed.map((jws) => {
      const last = jws.lastIndexOf('.')
      return { input: encoder.encode(jws.slice(0, last)), signature: Buffer.from(jws.slice(last + 1), 'base64url') }
    })
    // Proof 2's signature over proof 3's input: forged.
    const inputs = parts.map((p, i) => (i === 2 ? { ...p, input: parts[3]?.input as Uint8Array } : p))

    const batched = nodeDpopVerifier()({ alg: 'ES256', jwk })
    const pending = inputs.map(({ input, signature }) => batched?.(input, signature))
    expect(pending.every((answer) => answer instanceof Promise)).toBe(true)
    expect(await Promise.all(pending)).toEqual([true, true, false, true, true])

    const inline = nodeDpopVerifier({ batch: false })({ alg: 'ES256', jwk })
    expect(inputs.map(({ input, signature }) => inline?.(input, signature))).toEqual([true, true, false, true, true])
  })

  it('declines algorithms it does not know (WebCrypto checks them) and verifies the ones it knows', async () => {
    const verifier = nodeDpopVerifier()
    const { publicKey } = await generateKeyPair('ES256', { extractable: true })
    const jwk = await exportJWK(publicKey)
    expect(verifier({ alg: 'ES512', jwk })).toBeUndefined()
    expect(typeof verifier({ alg: 'ES256', jwk })).toBe('function')
  })
})
