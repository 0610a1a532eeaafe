import { describe, expect, it } from 'vitest'
import { createDpopNonces } from '../../../src/dpop/nonce.ts'
import { verifyDpopProof } from '../../../src/dpop/proof.ts'
import { errorResponse } from '../../../src/errors.ts'
import { NOW, input, invalid, proof, rejection } from './fixtures.ts'

const nonceSecret = new Uint8Array(32).fill(7)
const nonces = createDpopNonces({ secret: () => nonceSecret, now: () => NOW })

describe('verifyDpopProof: server nonces', () => {
  it('X-05: nonce required and absent → use_dpop_nonce with a fresh nonce in DPoP-Nonce', async () => {
    const err = await rejection(verifyDpopProof(input(await proof(), { nonces })))
    const fresh = await nonces.current()
    expect(err).toMatchObject({ code: 'use_dpop_nonce', status: 400, headers: { 'dpop-nonce': fresh } })
    const response = errorResponse(err, 'https://auth.example.test')
    expect(response.status).toBe(400)
    expect(response.headers.get('DPoP-Nonce')).toBe(fresh)
    expect(await response.json()).toEqual({ error: 'use_dpop_nonce', error_description: 'a DPoP nonce is required' })
  })

  it('X-05: a stale or forged nonce → use_dpop_nonce with a fresh nonce', async () => {
    const old = await createDpopNonces({ secret: () => nonceSecret, now: () => NOW - 120 }).current()
    const forged = await createDpopNonces({ secret: () => new Uint8Array(32), now: () => NOW }).current()
    for (const nonce of [old, forged, 'not-our-nonce']) {
      const err = await rejection(verifyDpopProof(input(await proof({ claims: { nonce } }), { nonces })))
      expect(err).toMatchObject({ code: 'use_dpop_nonce', message: 'the DPoP nonce is invalid or has expired' })
      expect(err.headers).toEqual({ 'dpop-nonce': await nonces.current() })
    }
  })

  it('X-05: a valid nonce (current or previous window) → ok, and returned', async () => {
    const previous = await createDpopNonces({ secret: () => nonceSecret, now: () => NOW - 60 }).current()
    for (const nonce of [await nonces.current(), previous]) {
      const result = await verifyDpopProof(input(await proof({ claims: { nonce } }), { nonces }))
      expect(result.nonce).toBe(nonce)
    }
  })

  it('RFC 9449 §8: with requireNonce false a proof without nonce passes, a bad nonce still fails', async () => {
    await expect(verifyDpopProof(input(await proof(), { nonces, requireNonce: false }))).resolves.not.toHaveProperty(
      'nonce',
    )
    const bad = await proof({ claims: { nonce: 'stale' } })
    const err = await rejection(verifyDpopProof(input(bad, { nonces, requireNonce: false })))
    expect(err.code).toBe('use_dpop_nonce')
  })

  it('an invalid proof is reported as invalid_dpop_proof even without a nonce', async () => {
    await invalid(verifyDpopProof(input(await proof({ claims: { htm: 'GET' } }), { nonces })), /"htm" does not match/)
  })
})
