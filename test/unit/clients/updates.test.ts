/**
 * #17.3: `clients.sync` gives a registration the configuration file's meaning (the file is the
 * source of truth for the clients it lists), next to `ensure`'s skip-if-exists.
 */
import { describe, expect, it } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { parseConfigFile } from '../../../src/config/file.ts'
import { hashSecret } from '../../../src/security/secrets.ts'
import { ISSUER, basic, form, makeService } from '../../helpers/service.ts'

const JOB: ClientRegistration = {
  clientId: 'job',
  clientSecret: 'job-secret-one',
  displayName: 'Nightly job',
  permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
}

async function cc(service: Awaited<ReturnType<typeof makeService>>['service'], secret: string, scope = 'api1') {
  const response = await service.fetch(
    form(
      `${ISSUER}/connect/token`,
      { grant_type: 'client_credentials', scope },
      { authorization: basic('job', secret) },
    ),
  )
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

describe('#17.3 clients.sync: the registration is the source of truth', () => {
  it('#17.3 creates a missing client, then reports unchanged without rewriting or rehashing it', async () => {
    const { service, clock } = await makeService()
    const created = await service.clients.sync(JOB)
    expect(created.status).toBe('created')
    clock.advance(60)
    const again = await service.clients.sync(JOB)
    expect(again.status).toBe('unchanged')
    expect(again.client.secrets).toEqual(created.client.secrets) // the same hash: not replaced
    expect(again.client.updatedAt).toBe(created.client.updatedAt)
    expect((await cc(service, 'job-secret-one')).status).toBe(200)
  })

  it('#17.3 a changed secret replaces the stored ones: the old secret stops working', async () => {
    const { service } = await makeService()
    await service.clients.sync(JOB)
    expect((await cc(service, 'job-secret-one')).status).toBe(200)
    const changed = await service.clients.sync({ ...JOB, clientSecret: 'job-secret-two' })
    expect(changed.status).toBe('updated')
    expect(changed.client.secrets).toHaveLength(1)
    expect((await cc(service, 'job-secret-one')).status).toBe(401)
    expect((await cc(service, 'job-secret-two')).status).toBe(200)
  })

  it('#17.3 secrets added by addSecret survive a sync whose secret still verifies', async () => {
    const { service } = await makeService()
    await service.clients.sync(JOB)
    const added = await service.clients.addSecret('job')
    expect((await service.clients.sync(JOB)).status).toBe('unchanged')
    expect((await cc(service, added.secret)).status).toBe(200)
  })

  it('#17.3 a removed permission, a changed redirect URI and left-out fields take effect', async () => {
    const { service } = await makeService()
    await service.clients.sync({ ...JOB, permissions: [...(JOB.permissions ?? []), 'scp:api2'], requirePkce: true })
    const updated = await service.clients.sync({ ...JOB, permissions: ['ept:token', 'gt:client_credentials'] })
    expect(updated.status).toBe('updated')
    expect(updated.client.permissions).toEqual(['ept:token', 'gt:client_credentials'])
    expect(updated.client.requirePkce).toBe(false) // left out: back to the default
    expect((await cc(service, 'job-secret-one')).body.error).toBe('invalid_scope')
  })

  it('#17.3 no secret makes the client public; a pre-hashed secret compares by hash', async () => {
    const { service } = await makeService()
    const web = {
      clientId: 'job',
      permissions: ['ept:authorization', 'ept:token', 'gt:authorization_code', 'rst:code', 'scp:openid'],
      redirectUris: ['https://rp.example.test/cb'],
    }
    await service.clients.sync({ ...web, clientSecret: 'job-secret-one' })
    expect((await service.clients.sync(web)).client.type).toBe('public')
    const hash = await hashSecret('job-secret-three', 1000)
    const hashed = await service.clients.sync({ ...web, clientSecret: hash })
    expect(hashed.status).toBe('updated')
    expect((await service.clients.sync({ ...web, clientSecret: hash })).status).toBe('unchanged')
  })

  it('#17.3 ensure keeps its skip-if-exists meaning', async () => {
    const { service } = await makeService()
    await service.clients.ensure(JOB)
    const skipped = await service.clients.ensure({ ...JOB, clientSecret: 'job-secret-two' })
    expect(skipped.created).toBe(false)
    expect((await cc(service, 'job-secret-one')).status).toBe(200)
  })

  it('#17.3 the configuration file takes "pruneClients": a boolean, false by default', () => {
    const file = (extra: Record<string, unknown>) =>
      parseConfigFile(JSON.stringify({ clients: [JOB], ...extra }), 'gatehouse.json')
    expect(file({}).pruneClients).toBe(false)
    expect(file({ pruneClients: true }).pruneClients).toBe(true)
    expect(() => file({ pruneClients: 'yes' })).toThrow(/^gatehouse\.json: invalid configuration\npruneClients: /)
  })
})
