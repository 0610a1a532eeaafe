/**
 * #17.7: an unknown client_id costs the same secret-hash work as a wrong secret of a known client,
 * so the answer's timing does not tell which ids exist. Measured by counting PBKDF2 derivations and
 * their iterations (never by timing, which flakes).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ISSUER, basic, form, makeService } from '../../helpers/service.ts'

const TOKEN = `${ISSUER}/connect/token`

/** The PBKDF2 iterations derived while `run` runs. */
async function hashWork(run: () => Promise<Response>): Promise<{ response: Response; iterations: number[] }> {
  const iterations: number[] = []
  const original = crypto.subtle.deriveBits.bind(crypto.subtle)
  const spy = vi.spyOn(crypto.subtle, 'deriveBits').mockImplementation((algorithm, key, length) => {
    if (typeof algorithm === 'object' && algorithm.name === 'PBKDF2') {
      iterations.push((algorithm as Pbkdf2Params).iterations)
    }
    return original(algorithm, key, length)
  })
  try {
    return { response: await run(), iterations }
  } finally {
    spy.mockRestore()
  }
}

describe('#17.7 client enumeration by timing', () => {
  afterEach(() => vi.restoreAllMocks())

  async function service() {
    // Registration hashed the secrets already: only what the requests do is counted.
    return (await makeService({ throttle: false })).service
  }

  const cc = { grant_type: 'client_credentials' }

  it('#17.7 an unknown client_id does the same hash work as a known client with a wrong secret (Basic and post)', async () => {
    const svc = await service()
    const known = await hashWork(() => svc.fetch(form(TOKEN, cc, { authorization: basic('service', 'wrong-secret') })))
    const unknown = await hashWork(() =>
      svc.fetch(form(TOKEN, cc, { authorization: basic('no-such-client', 'wrong-secret') })),
    )
    const unknownPost = await hashWork(() =>
      svc.fetch(form(TOKEN, { ...cc, client_id: 'no-such-client', client_secret: 'wrong-secret' })),
    )
    expect(known.iterations).toEqual([1000])
    expect(unknown.iterations).toEqual(known.iterations)
    expect(unknownPost.iterations).toEqual(known.iterations)
    for (const { response } of [known, unknown, unknownPost]) {
      expect(response.status).toBe(401)
      expect(await response.json()).toEqual({
        error: 'invalid_client',
        error_description: 'client authentication failed',
      })
    }
  })

  it('#17.7 a public client presented with a secret, and a client whose secrets all expired, hash too', async () => {
    const { service: svc, clock } = await makeService({ throttle: false })
    const spa = await hashWork(() => svc.fetch(form(TOKEN, cc, { authorization: basic('spa', 'any-secret-at-all') })))
    expect(spa.response.status).toBe(401)
    expect(spa.iterations).toEqual([1000])
    // The only live secret expires in 10 s; after that the client has none.
    const [first] = (await svc.clients.find('service'))?.secrets ?? []
    await svc.clients.addSecret('service', { expiresAt: clock.now() + 10 })
    await svc.clients.retireSecret('service', first?.id as string)
    clock.advance(11)
    const expired = await hashWork(() =>
      svc.fetch(form(TOKEN, cc, { authorization: basic('service', 'wrong-secret') })),
    )
    expect(expired.response.status).toBe(401)
    expect(expired.iterations).toEqual([1000])
  })
})
