/** Shared fixtures of the DPoP unit tests (no `.test` suffix: never run alone). */
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose'
import { expect } from 'vitest'
import type { DpopProofInput } from '../../../src/dpop/proof.ts'
import { OAuthError } from '../../../src/errors.ts'

export const NOW = 1_700_000_000
export const URL_ = 'https://auth.example.test/token'
export const TOKEN = 'at-0123456789'

export interface Signer {
  alg: string
  privateKey: CryptoKey
  jwk: JWK
}

async function signer(alg: 'ES256' | 'EdDSA'): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return { alg, privateKey, jwk: await exportJWK(publicKey) }
}

export const es256 = await signer('ES256')
export const eddsa = await signer('EdDSA')
export const other = await signer('ES256')

let counter = 0

/** A proof for POST URL_ at NOW signed by ES256; `undefined` claims are left out. */
export async function proof(
  options: { signer?: Signer; header?: Record<string, unknown>; claims?: Record<string, unknown> } = {},
): Promise<string> {
  const key = options.signer ?? es256
  const claims: Record<string, unknown> = {
    jti: `jti-${++counter}`,
    htm: 'POST',
    htu: URL_,
    iat: NOW,
    ...options.claims,
  }
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name]
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk, ...options.header })
    .sign(key.privateKey)
}

export type Replays = DpopProofInput['replay'] & { calls: [string, number, number][] }

/** A replay store: true the first time a key is seen; records every call. */
export function replays(): Replays {
  const seen = new Set<string>()
  const calls: [string, number, number][] = []
  const use = async (key: string, expiresAt: number, now: number) => {
    calls.push([key, expiresAt, now])
    if (seen.has(key)) return false
    seen.add(key)
    return true
  }
  return Object.assign(use, { calls })
}

export function input(header: DpopProofInput['header'], extra: Partial<DpopProofInput> = {}): DpopProofInput {
  return { header, method: 'POST', url: URL_, now: NOW, replay: replays(), ...extra }
}

export async function rejection(promise: Promise<unknown>): Promise<OAuthError> {
  const err = await promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(OAuthError)
  return err as OAuthError
}

/** Expects a 400 invalid_dpop_proof with this description. */
export async function invalid(promise: Promise<unknown>, description: string | RegExp): Promise<void> {
  const err = await rejection(promise)
  expect(err).toMatchObject({ code: 'invalid_dpop_proof', status: 400 })
  expect(err.message).toMatch(description)
}
