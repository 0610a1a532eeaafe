import { describe, expect, it } from 'vitest'
import { PATHS } from '../../src/context.ts'
import { createTokenService } from '../../src/index.ts'
import { ROUTES } from '../../src/routes.ts'

describe('#32 the route table (src/routes.ts)', () => {
  it('#32 routes every endpoint path once', () => {
    const paths = ROUTES.flatMap((entry) =>
      typeof entry.paths === 'function' || entry.at !== undefined ? [] : entry.paths,
    )
    expect([...paths].sort()).toEqual(Object.values(PATHS).sort())
  })

  it('#32 a probe at an endpoint path answers before routing; the inserted and management paths route', async () => {
    const service = createTokenService({
      issuer: 'https://auth.example.com/tenant',
      health: { livenessPath: '/tenant/connect/token' },
      scopes: [{ name: 'api1' }],
      dynamicClientRegistration: { scopes: ['api1'] },
    })
    const probe = await service.fetch(new Request('https://auth.example.com/tenant/connect/token'))
    expect(probe.status).toBe(200)
    const notAllowed = await service.fetch(
      new Request('https://auth.example.com/tenant/connect/token', { method: 'POST' }),
    )
    expect([notAllowed.status, notAllowed.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
    const inserted = await service.fetch(
      new Request('https://auth.example.com/.well-known/openid-configuration/tenant'),
    )
    expect(((await inserted.json()) as { issuer: string }).issuer).toBe('https://auth.example.com/tenant')
    const manage = await service.fetch(
      new Request('https://auth.example.com/tenant/connect/register/unknown', { method: 'POST' }),
    )
    expect([manage.status, manage.headers.get('allow')]).toEqual([405, 'GET, PUT, DELETE'])
    const outside = await service.fetch(new Request('https://auth.example.com/connect/token', { method: 'POST' }))
    expect(outside.status).toBe(404)
  })
})
