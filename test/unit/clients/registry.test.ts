import { describe, expect, it } from 'vitest'
import { createTokenService } from '../../../src/index.ts'
import { hashSecret, verifySecret } from '../../../src/security/secrets.ts'
import { CLIENTS, ISSUER, clock } from '../../helpers/service.ts'

async function setup() {
  const time = clock()
  const service = createTokenService({
    issuer: ISSUER,
    now: time.now,
    secretHashIterations: 1000,
    logger: { warn() {}, error() {} },
  })
  return { service, clock: time }
}

function defined<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('expected a value')
  return value
}

const JOB = {
  clientId: 'job',
  clientSecret: 'job-secret-plain',
  displayName: 'Job',
  permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
}

describe('clients.ensure', () => {
  it('creates a client and reports created:true with the host view', async () => {
    const { service, clock } = await setup()
    const { created, client } = await service.clients.ensure(JOB)
    expect(created).toBe(true)
    expect(client).toEqual({
      clientId: 'job',
      displayName: 'Job',
      type: 'confidential',
      permissions: JOB.permissions,
      redirectUris: [],
      postLogoutRedirectUris: [],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
      secrets: [{ id: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/), createdAt: clock.now() }],
      createdAt: clock.now(),
      updatedAt: clock.now(),
    })
  })

  it('skips an existing id: created:false and the stored client is unchanged', async () => {
    const { service, clock } = await setup()
    await service.clients.ensure(JOB)
    const before = await service.store.clients.get('job')
    clock.advance(100)
    const again = await service.clients.ensure({
      ...JOB,
      clientSecret: 'another-secret',
      displayName: 'Changed',
      permissions: ['ept:token'],
    })
    expect(again.created).toBe(false)
    expect(again.client.displayName).toBe('Job')
    expect(again.client.permissions).toEqual(JOB.permissions)
    expect(await service.store.clients.get('job')).toEqual(before)
  })

  it('still validates the registration of an existing id', async () => {
    const { service } = await setup()
    await service.clients.ensure(JOB)
    await expect(service.clients.ensure({ ...JOB, permissions: ['bogus'] })).rejects.toThrow(/permissions\.0/)
  })

  it('concurrent ensure of one id creates it exactly once', async () => {
    const { service } = await setup()
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => service.clients.ensure({ ...JOB, displayName: `Job ${i}` })),
    )
    expect(results.filter((r) => r.created)).toHaveLength(1)
    const winner = results.find((r) => r.created)?.client.displayName
    for (const result of results) expect(result.client.displayName).toBe(winner)
    expect(await service.store.clients.list()).toHaveLength(1)
  })

  it('stores secrets hashed: pbkdf2-sha256, and no plaintext anywhere in the record', async () => {
    const { service } = await setup()
    for (const registration of Object.values(CLIENTS)) await service.clients.ensure(registration)
    for (const registration of Object.values(CLIENTS)) {
      const record = await service.store.clients.get(registration.clientId)
      if (!record) throw new Error(`${registration.clientId} missing`)
      if (registration.clientSecret === undefined) {
        expect(record.secrets).toEqual([])
        continue
      }
      expect(record.secrets).toHaveLength(1)
      expect(record.secrets[0]?.hash.startsWith('pbkdf2-sha256$')).toBe(true)
      expect(JSON.stringify(record)).not.toContain(registration.clientSecret)
      expect(await verifySecret(registration.clientSecret, record.secrets[0]?.hash as string)).toBe(true)
    }
  })

  it('stores a pre-hashed secret as given', async () => {
    const { service } = await setup()
    const hash = await hashSecret('pre-hashed', 1000)
    await service.clients.ensure({ ...JOB, clientSecret: hash })
    expect((await service.store.clients.get('job'))?.secrets[0]?.hash).toBe(hash)
  })

  it('the host view never carries hashes', async () => {
    const { service } = await setup()
    const { client } = await service.clients.ensure(JOB)
    const all = JSON.stringify([client, await service.clients.find('job'), await service.clients.list()])
    expect(all).not.toContain('pbkdf2')
    expect(all).not.toContain(JOB.clientSecret)
  })

  it('a client without a secret is public', async () => {
    const { service } = await setup()
    const { client } = await service.clients.ensure(CLIENTS.spa as never)
    expect(client.type).toBe('public')
    expect(client.secrets).toEqual([])
  })
})

describe('clients.find / list', () => {
  it('find returns the client or undefined; list returns every client', async () => {
    const { service } = await setup()
    for (const registration of Object.values(CLIENTS)) await service.clients.ensure(registration)
    expect(await service.clients.find('web')).toMatchObject({
      clientId: 'web',
      displayName: 'Web App',
      type: 'confidential',
    })
    expect(await service.clients.find('nobody')).toBeUndefined()
    const ids = (await service.clients.list()).map((c) => c.clientId).sort()
    expect(ids).toEqual(
      Object.values(CLIENTS)
        .map((c) => c.clientId)
        .sort(),
    )
  })
})

describe('clients.update', () => {
  it('changes only the given fields and keeps the secret', async () => {
    const { service, clock } = await setup()
    await service.clients.ensure(JOB)
    const before = defined(await service.store.clients.get('job'))
    clock.advance(60)
    const updated = await service.clients.update('job', { displayName: 'Renamed', lifetimes: { accessToken: 120 } })
    expect(updated).toMatchObject({
      displayName: 'Renamed',
      permissions: JOB.permissions,
      lifetimes: { accessToken: 120 },
    })
    expect(updated.createdAt).toBe(before.createdAt)
    expect(updated.updatedAt).toBe(clock.now())
    const after = defined(await service.store.clients.get('job'))
    expect(after.secrets).toEqual(before.secrets)
    expect(after.displayName).toBe('Renamed')
  })

  it('a new clientSecret replaces every secret, hashed', async () => {
    const { service } = await setup()
    await service.clients.ensure(JOB)
    await service.clients.update('job', { clientSecret: 'rotated-secret' })
    const record = defined(await service.store.clients.get('job'))
    expect(record.secrets).toHaveLength(1)
    expect(JSON.stringify(record)).not.toContain('rotated-secret')
    const hash = defined(record.secrets[0]).hash
    expect(await verifySecret('rotated-secret', hash)).toBe(true)
    expect(await verifySecret(JOB.clientSecret, hash)).toBe(false)
  })

  it('clientSecret: null makes a client public (only if it may be public)', async () => {
    const { service } = await setup()
    await service.clients.ensure(CLIENTS.web as never)
    expect((await service.clients.update('web', { clientSecret: null })).type).toBe('public')
    expect((await service.store.clients.get('web'))?.secrets).toEqual([])
    await service.clients.ensure(JOB)
    await expect(service.clients.update('job', { clientSecret: null })).rejects.toThrow(/clientSecret/)
    expect((await service.store.clients.get('job'))?.secrets).toHaveLength(1)
  })

  it('validates the result and leaves the client untouched on error', async () => {
    const { service } = await setup()
    await service.clients.ensure(JOB)
    const before = await service.store.clients.get('job')
    await expect(service.clients.update('job', { permissions: ['nope'] })).rejects.toThrow(TypeError)
    await expect(service.clients.update('job', { redirectUris: ['http://evil.example.test/cb'] })).rejects.toThrow(
      /redirectUris/,
    )
    expect(await service.store.clients.get('job')).toEqual(before)
  })

  it('an unknown client → TypeError', async () => {
    const { service } = await setup()
    await expect(service.clients.update('nobody', { displayName: 'x' })).rejects.toThrow(TypeError)
    expect(await service.store.clients.get('nobody')).toBeUndefined()
  })
})

describe('clients.delete', () => {
  it('deletes and reports whether the client existed', async () => {
    const { service } = await setup()
    await service.clients.ensure(JOB)
    expect(await service.clients.delete('job')).toBe(true)
    expect(await service.clients.find('job')).toBeUndefined()
    expect(await service.clients.delete('job')).toBe(false)
    expect(await service.clients.list()).toEqual([])
  })

  it('an id can be registered again after deletion', async () => {
    const { service } = await setup()
    await service.clients.ensure(JOB)
    await service.clients.delete('job')
    expect((await service.clients.ensure({ ...JOB, displayName: 'Again' })).created).toBe(true)
    expect((await service.clients.find('job'))?.displayName).toBe('Again')
  })
})
