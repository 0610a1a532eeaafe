/**
 * Several secrets per client with expiry dates: rotation without downtime through the host API
 * (`clients.addSecret` / `clients.retireSecret`), issue #6.
 */
import { describe, expect, it } from 'vitest'
import { ISSUER, basic, form, makeService } from '../../helpers/service.ts'

type Service = Awaited<ReturnType<typeof makeService>>['service']

async function status(service: Service, secret: string): Promise<number> {
  const request = form(
    `${ISSUER}/connect/token`,
    { grant_type: 'client_credentials' },
    {
      authorization: basic('service', secret),
    },
  )
  return (await service.fetch(request)).status
}

describe('client secret rotation', () => {
  it('add a secret, both work; retire the old one, only the new one works', async () => {
    const { service, clock } = await makeService({ throttle: false })
    const [old] = (await service.clients.find('service'))?.secrets ?? []
    if (!old) throw new Error('expected a secret')
    const added = await service.clients.addSecret('service')
    expect(added.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(added.id).not.toBe(old.id)
    expect(await status(service, 'service-secret')).toBe(200)
    expect(await status(service, added.secret)).toBe(200)

    const info = await service.clients.retireSecret('service', old.id)
    expect(info.secrets).toEqual([
      { id: old.id, createdAt: old.createdAt, expiresAt: clock.now() },
      { id: added.id, createdAt: added.createdAt },
    ])
    expect(await status(service, 'service-secret')).toBe(401)
    expect(await status(service, added.secret)).toBe(200)
  })

  it('retiring with a grace period keeps the old secret working until then', async () => {
    const { service, clock } = await makeService({ throttle: false })
    const [old] = (await service.clients.find('service'))?.secrets ?? []
    const added = await service.clients.addSecret('service', { secret: 'the-next-long-secret' })
    await service.clients.retireSecret('service', old?.id ?? '', { at: clock.now() + 3600 })
    clock.advance(3599)
    expect(await status(service, 'service-secret')).toBe(200)
    clock.advance(1)
    expect(await status(service, 'service-secret')).toBe(401)
    expect(await status(service, added.secret)).toBe(200)
  })

  it('a secret with an expiry stops at that time; expired secrets are dropped after a day', async () => {
    const { service, clock } = await makeService({ throttle: false })
    const added = await service.clients.addSecret('service', { expiresAt: clock.now() + 60 })
    expect(await status(service, added.secret)).toBe(200)
    clock.advance(60)
    expect(await status(service, added.secret)).toBe(401)
    expect(await status(service, 'service-secret')).toBe(200)
    clock.advance(86_400)
    const [current] = (await service.clients.find('service'))?.secrets ?? []
    const next = await service.clients.addSecret('service')
    await service.clients.retireSecret('service', current?.id ?? '', { at: clock.now() + 10 })
    const ids = (await service.clients.find('service'))?.secrets.map((s) => s.id)
    expect(ids).toEqual([current?.id, next.id]) // the long-expired one is gone
  })

  it('refuses what would break the client or is malformed, with a message naming the problem', async () => {
    const { service, clock } = await makeService()
    const [only] = (await service.clients.find('service'))?.secrets ?? []
    await expect(service.clients.retireSecret('service', only?.id ?? '')).rejects.toThrow(/last valid secret/)
    await expect(service.clients.retireSecret('service', 'nope')).rejects.toThrow(/has no secret "nope"/)
    // Retiring the only secret later would lock the client out then: refused too.
    await expect(service.clients.retireSecret('service', only?.id ?? '', { at: clock.now() + 60 })).rejects.toThrow(
      /last valid secret/,
    )
    const short = await service.clients.addSecret('service', { expiresAt: clock.now() + 30 })
    await expect(service.clients.retireSecret('service', only?.id ?? '', { at: clock.now() + 60 })).rejects.toThrow(
      /last valid secret/,
    )
    await service.clients.retireSecret('service', short.id)
    await expect(service.clients.addSecret('ghost')).rejects.toThrow(/does not exist/)
    await expect(service.clients.addSecret('spa')).rejects.toThrow(/public/)
    await expect(service.clients.addSecret('service', { secret: 'short' })).rejects.toThrow(
      /secret: must be at least 16/,
    )
    await expect(service.clients.addSecret('service', { expiresAt: clock.now() - 1 })).rejects.toThrow(/expiresAt/)
    const invalid = await service.clients.addSecret('service', { secret: 'tiny-secret' }).catch((err) => err)
    expect(invalid).toBeInstanceOf(TypeError)
    expect(JSON.stringify(invalid.cause)).not.toContain('tiny-secret') // causes carry no input
    await expect(service.clients.addSecret('service', { extra: 1 } as never)).rejects.toThrow(/invalid secret/)
  })

  it('the host never sees a hash, and the added value is not stored', async () => {
    const { service } = await makeService()
    const added = await service.clients.addSecret('service')
    const info = JSON.stringify(await service.clients.find('service'))
    expect(info).not.toMatch(/pbkdf2/)
    expect(info).not.toContain(added.secret)
    const stored = JSON.stringify(await service.store.clients.get('service'))
    expect(stored).not.toContain(added.secret)
    expect(stored).toMatch(/pbkdf2-sha256\$/)
  })
})
