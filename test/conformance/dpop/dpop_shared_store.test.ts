/**
 * RFC 9449 §11.1 across instances: a DPoP proof's `jti` is spent in the store every instance
 * shares, so a proof accepted by one instance is refused by another. Two services on one
 * PostgreSQL store (a fresh schema); runs when DATABASE_URL is set.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { safeDescription } from '../../../src/errors.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import { type DpopContext, dpopKey, dpopSetup, handProof, serviceToken } from './dpop_fixtures.ts'

const postgres = STORES.find((kind) => kind.name === 'postgres')

describe.runIf(process.env.DATABASE_URL)('RFC 9449 §11.1 DPoP jti replay across instances (PostgreSQL)', () => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  /** Two service instances on one fresh PostgreSQL schema. */
  async function twoInstances(): Promise<[DpopContext, DpopContext]> {
    if (!postgres) throw new Error('DATABASE_URL is set but the PostgreSQL store kind is missing')
    const now = () => Math.floor(Date.now() / 1000)
    opened = await postgres.create(now)
    const a = await dpopSetup({ store: opened.store })
    const b = await dpopSetup({ store: opened.store })
    return [a, b]
  }

  it('RFC 9449 §11.1: the proof accepted by instance A is refused by instance B', async () => {
    const [a, b] = await twoInstances()
    const proof = await handProof(a, await dpopKey())
    const first = await serviceToken(a, proof)
    expect(first.status).toBe(200)
    expect(await first.json()).toMatchObject({ token_type: 'DPoP' })
    const replayed = await serviceToken(b, proof)
    expect(replayed.status).toBe(400)
    expect(await replayed.json()).toEqual({
      error: 'invalid_dpop_proof',
      error_description: safeDescription('DPoP proof "jti" has already been used'),
    })
  })

  it('RFC 9449 §11.1: one proof sent to both instances at once → exactly one token', async () => {
    const [a, b] = await twoInstances()
    const proof = await handProof(a, await dpopKey())
    const responses = await Promise.all([
      ...Array.from({ length: 4 }, () => serviceToken(a, proof)),
      ...Array.from({ length: 4 }, () => serviceToken(b, proof)),
    ])
    expect(responses.map((response) => response.status).sort()).toEqual([200, 400, 400, 400, 400, 400, 400, 400])
  })

  it('a nonce issued by instance A is accepted by instance B (requireNonce)', async () => {
    if (!postgres) throw new Error('no PostgreSQL store kind')
    opened = await postgres.create(() => Math.floor(Date.now() / 1000))
    const a = await dpopSetup({ store: opened.store, dpop: { requireNonce: true } })
    const b = await dpopSetup({ store: opened.store, dpop: { requireNonce: true } })
    const key = await dpopKey()
    const demanded = await serviceToken(a, await handProof(a, key))
    expect(demanded.status).toBe(400)
    const nonce = demanded.headers.get('dpop-nonce') as string
    const accepted = await serviceToken(b, await handProof(b, key, { nonce }))
    expect(accepted.status).toBe(200)
  })
})
