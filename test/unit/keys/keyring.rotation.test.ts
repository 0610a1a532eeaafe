import { decodeProtectedHeader } from 'jose'
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { basic, clock, form, makeService } from '../../helpers/service.ts'

async function token(service: Awaited<ReturnType<typeof makeService>>['service']) {
  const response = await service.fetch(
    form(
      service.endpoints.token,
      { grant_type: 'client_credentials' },
      { authorization: basic('service', 'service-secret') },
    ),
  )
  return ((await response.json()) as { access_token: string }).access_token
}

async function active(service: Awaited<ReturnType<typeof makeService>>['service'], value: string) {
  const response = await service.fetch(
    form(service.endpoints.introspection, { token: value }, { authorization: basic('service', 'service-secret') }),
  )
  return ((await response.json()) as { active: boolean }).active
}

describe('JWKS-06 signing key rotation', () => {
  it('publishes the new key before it signs and keeps the old one until its tokens expired', async () => {
    const { service, clock: time } = await makeService({ keyPublishAhead: 300, accessTokenTtl: 600, idTokenTtl: 600 })
    const before = await token(service)
    const oldKid = decodeProtectedHeader(before).kid
    const created = (await service.keys.rotate({ algorithms: ['ES256'] }))[0] as { kid: string; activatesAt: number }
    const kids = (await service.keys.jwks()).keys.map((k) => k.kid)
    expect(kids).toContain(oldKid)
    expect(kids).toContain(created.kid)
    // still the old key until the new one activates
    expect(decodeProtectedHeader(await token(service)).kid).toBe(oldKid)
    time.advance(301)
    const after = await token(service)
    expect(decodeProtectedHeader(after).kid).toBe(created.kid)
    expect(await active(service, after)).toBe(true)
    // retired but still published: a token it signed verifies until the token expires
    expect((await service.keys.jwks()).keys.map((k) => k.kid)).toContain(oldKid)
    expect(await active(service, before)).toBe(true)
    // once everything it signed has expired, the old key leaves the JWKS
    time.advance(300 + 600 + 3600)
    expect((await service.keys.jwks()).keys.map((k) => k.kid)).not.toContain(oldKid)
    const info = await service.keys.list()
    expect(info.find((k) => k.kid === oldKid)?.retiresAt).toBe(created.activatesAt)
    expect(JSON.stringify(info)).not.toContain('"d"')
  })

  it('keyRotationInterval rotates automatically', async () => {
    const { service, clock: time } = await makeService({ keyRotationInterval: 86_400, keyPublishAhead: 60 })
    const first = (await service.keys.jwks()).keys.filter((k) => k.alg === 'ES256').map((k) => k.kid)
    time.advance(86_400 + 61) // past the interval and the keyring's cache
    await token(service)
    const es = (await service.keys.list()).filter((k) => k.alg === 'ES256')
    expect(es).toHaveLength(2)
    time.advance(61)
    const signer = decodeProtectedHeader(await token(service)).kid
    expect(first).not.toContain(signer)
  })

  it('two instances starting together on an empty store converge on one key within seconds', async () => {
    const time = clock()
    const store = createMemoryStore({ now: time.now })
    const [a, b] = await Promise.all([makeService({ store, now: time.now }), makeService({ store, now: time.now })])
    time.advance(3)
    const kidA = decodeProtectedHeader(await token(a.service)).kid
    const kidB = decodeProtectedHeader(await token(b.service)).kid
    expect(kidA).toBe(kidB)
    expect((await a.service.keys.jwks()).keys).toEqual((await b.service.keys.jwks()).keys)
  })
})
