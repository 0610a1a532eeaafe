/**
 * Host-side client management as seen on the wire: what ensure, update and delete change about
 * who gets tokens, at once and without restarting the service.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { discover, inProcess, makeService } from '../../helpers/service.ts'

const JOB = {
  clientId: 'job',
  clientSecret: 'job-secret',
  permissions: ['ept:token', 'ept:introspection', 'gt:client_credentials', 'scp:api1'],
}

async function setup() {
  const { service, clock } = await makeService()
  await service.clients.ensure(JOB)
  const as = await discover(service.fetch)
  return { service, clock, as, opts: inProcess(service.fetch) }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** Runs client_credentials; resolves with the token response or rejects with oauth4webapi's error. */
async function tokenFor(
  ctx: Setup,
  clientId: string,
  secret: string,
  auth: 'basic' | 'post' = 'basic',
  parameters: Record<string, string> = {},
) {
  const client = { client_id: clientId }
  const method = auth === 'basic' ? oauth.ClientSecretBasic(secret) : oauth.ClientSecretPost(secret)
  const response = await oauth.clientCredentialsGrantRequest(ctx.as, client, method, parameters, ctx.opts)
  return oauth.processClientCredentialsResponse(ctx.as, client, response)
}

/** The claims of the response's access token (its signature is checked elsewhere). */
function claimsOf(response: { access_token: string }): Record<string, unknown> {
  return decodeJwt(response.access_token)
}

const rejected = { status: 401 }

describe('client lifecycle on the wire', () => {
  it('a registered client gets tokens with Basic and post', async () => {
    const ctx = await setup()
    await expect(tokenFor(ctx, 'job', 'job-secret')).resolves.toMatchObject({ token_type: 'bearer' })
    await expect(tokenFor(ctx, 'job', 'job-secret', 'post')).resolves.toMatchObject({ token_type: 'bearer' })
  })

  it('a deleted client can no longer get tokens, even right after a successful request', async () => {
    const ctx = await setup()
    await tokenFor(ctx, 'job', 'job-secret')
    expect(await ctx.service.clients.delete('job')).toBe(true)
    await expect(tokenFor(ctx, 'job', 'job-secret')).rejects.toMatchObject(rejected)
    await expect(tokenFor(ctx, 'job', 'job-secret', 'post')).rejects.toMatchObject(rejected)
  })

  it('a deleted client can no longer introspect', async () => {
    const ctx = await setup()
    const { access_token } = await tokenFor(ctx, 'job', 'job-secret')
    await ctx.service.clients.delete('job')
    const client = { client_id: 'job' }
    const response = await oauth.introspectionRequest(
      ctx.as,
      client,
      oauth.ClientSecretBasic('job-secret'),
      access_token,
      ctx.opts,
    )
    await expect(oauth.processIntrospectionResponse(ctx.as, client, response)).rejects.toMatchObject(rejected)
  })

  it('ensure on an existing id keeps the original secret working and does not accept the new one', async () => {
    const ctx = await setup()
    await tokenFor(ctx, 'job', 'job-secret')
    const { created } = await ctx.service.clients.ensure({ ...JOB, clientSecret: 'other-secret' })
    expect(created).toBe(false)
    await expect(tokenFor(ctx, 'job', 'job-secret')).resolves.toBeDefined()
    await expect(tokenFor(ctx, 'job', 'other-secret')).rejects.toMatchObject(rejected)
  })

  it('a rotated secret works at once; the old one (even recently verified) stops working', async () => {
    const ctx = await setup()
    await tokenFor(ctx, 'job', 'job-secret')
    await ctx.service.clients.update('job', { clientSecret: 'rotated-secret' })
    await expect(tokenFor(ctx, 'job', 'job-secret')).rejects.toMatchObject(rejected)
    await expect(tokenFor(ctx, 'job', 'rotated-secret')).resolves.toBeDefined()
  })

  it('removing gt:client_credentials makes the grant unauthorized_client at once', async () => {
    const ctx = await setup()
    await tokenFor(ctx, 'job', 'job-secret')
    await ctx.service.clients.update('job', { permissions: ['ept:token', 'scp:api1'] })
    await expect(tokenFor(ctx, 'job', 'job-secret')).rejects.toMatchObject({
      error: 'unauthorized_client',
      status: 400,
    })
  })

  it('removing a scope permission narrows what the client may request', async () => {
    const ctx = await setup()
    await ctx.service.clients.update('job', { permissions: ['ept:token', 'gt:client_credentials'] })
    const client = { client_id: 'job' }
    const response = await oauth.clientCredentialsGrantRequest(
      ctx.as,
      client,
      oauth.ClientSecretBasic('job-secret'),
      { scope: 'api1' },
      ctx.opts,
    )
    await expect(oauth.processClientCredentialsResponse(ctx.as, client, response)).rejects.toMatchObject({
      error: 'invalid_scope',
    })
  })

  it('#44 item 4: a scope permission removed after the scope was granted is refused at once (granted-scope cache)', async () => {
    const ctx = await setup()
    // Both scope parameters granted once, so that what they grant is remembered.
    expect(claimsOf(await tokenFor(ctx, 'job', 'job-secret', 'basic', { scope: 'api1' }))).toMatchObject({
      scope: 'api1',
      aud: 'api1',
    })
    expect(claimsOf(await tokenFor(ctx, 'job', 'job-secret'))).toMatchObject({ scope: 'api1', aud: 'api1' })
    await ctx.service.clients.update('job', { permissions: ['ept:token', 'gt:client_credentials'] })
    await expect(tokenFor(ctx, 'job', 'job-secret', 'basic', { scope: 'api1' })).rejects.toMatchObject({
      error: 'invalid_scope',
    })
    expect(claimsOf(await tokenFor(ctx, 'job', 'job-secret'))).toMatchObject({ scope: '', aud: ctx.as.issuer })
  })

  it('#44 item 4: a scope permission added after a request without scope is granted at once (granted-scope cache)', async () => {
    const ctx = await setup()
    await ctx.service.clients.update('job', { permissions: ['ept:token', 'gt:client_credentials'] })
    expect(claimsOf(await tokenFor(ctx, 'job', 'job-secret'))).toMatchObject({ scope: '' })
    await ctx.service.clients.update('job', { permissions: JOB.permissions })
    expect(claimsOf(await tokenFor(ctx, 'job', 'job-secret'))).toMatchObject({ scope: 'api1', aud: 'api1' })
    expect(claimsOf(await tokenFor(ctx, 'job', 'job-secret', 'basic', { scope: 'api1' }))).toMatchObject({
      scope: 'api1',
    })
  })

  it('an updated access token lifetime applies to the next token', async () => {
    const ctx = await setup()
    expect((await tokenFor(ctx, 'job', 'job-secret')).expires_in).toBe(3600)
    await ctx.service.clients.update('job', { lifetimes: { accessToken: 300 } })
    expect((await tokenFor(ctx, 'job', 'job-secret')).expires_in).toBe(300)
  })

  it('a client registered while the service runs can get tokens at once', async () => {
    const ctx = await setup()
    await expect(tokenFor(ctx, 'late', 'late-secret')).rejects.toMatchObject(rejected)
    await ctx.service.clients.ensure({
      clientId: 'late',
      clientSecret: 'late-secret',
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
    })
    await expect(tokenFor(ctx, 'late', 'late-secret')).resolves.toBeDefined()
  })
})
