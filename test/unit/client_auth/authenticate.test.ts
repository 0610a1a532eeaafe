import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { authenticateClient, parseBasic, requirePermission } from '../../../src/client_auth/authenticate.ts'
import { createClientRegistry } from '../../../src/clients/registry.ts'
import type { Context } from '../../../src/context.ts'
import { OAuthError } from '../../../src/errors.ts'
import { parseParams } from '../../../src/http.ts'
import { createVerificationCache, hashSecret } from '../../../src/security/secrets.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { ISSUER, basic, inProcess, makeService } from '../../helpers/service.ts'

const NOW = 1_800_000_000
const TOKEN_URL = `${ISSUER}/connect/token`
/** Characters that break naive Basic parsing: '+', ':', '%', '/'. */
const TRICKY = 'a+b:c%d/e'

/** The Authorization header oauth4webapi's ClientSecretBasic sends for this id and secret. */
async function oauth4webapiBasic(clientId: string, secret: string): Promise<string> {
  let header: string | null = null
  const as: oauth.AuthorizationServer = { issuer: ISSUER, token_endpoint: TOKEN_URL }
  await oauth.clientCredentialsGrantRequest(
    as,
    { client_id: clientId },
    oauth.ClientSecretBasic(secret),
    {},
    {
      [oauth.customFetch]: async (_url: string, init?: RequestInit) => {
        header = new Headers(init?.headers).get('authorization')
        return new Response('{}', { headers: { 'content-type': 'application/json' } })
      },
    },
  )
  if (header === null) throw new Error('no Authorization header sent')
  return header
}

async function context() {
  const store = createMemoryStore({ now: () => NOW })
  const clients = createClientRegistry({ store, now: () => NOW, iterations: 1000 })
  await clients.ensure({
    clientId: 'conf',
    clientSecret: 'conf-secret',
    permissions: ['ept:token', 'gt:client_credentials'],
  })
  await clients.ensure({ clientId: TRICKY, clientSecret: TRICKY, permissions: ['ept:token'] })
  await clients.ensure({ clientId: 'pub', permissions: ['ept:token', 'gt:authorization_code'] })
  const ctx = {
    clients,
    store,
    now: () => NOW,
    secretCache: createVerificationCache({ ttl: 300, max: 100, now: () => NOW }),
    config: { secretHashIterations: 1000, limits: { maxParameterLength: 4096 } },
    emit: Object.assign(() => {}, { active: false }),
  } as unknown as Context
  return { ctx, store }
}

function request(body: Record<string, string>, authorization?: string) {
  const params = parseParams(new URLSearchParams(body).toString(), 4096)
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  if (authorization !== undefined) headers.authorization = authorization
  return { request: new Request(TOKEN_URL, { method: 'POST', headers }), params }
}

async function authenticate(ctx: Context, body: Record<string, string>, authorization?: string, allowPublic = false) {
  const { request: req, params } = request(body, authorization)
  return authenticateClient(req, params, ctx, { allowPublic })
}

async function failure(promise: Promise<unknown>): Promise<OAuthError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(OAuthError)
  return err as OAuthError
}

describe('parseBasic', () => {
  it('TOK-08: form-url-decodes id and secret exactly as oauth4webapi encodes them', async () => {
    for (const [id, secret] of [
      [TRICKY, TRICKY],
      ['client id', "s p a c e!*'()~-_."],
      ['ünïcødé', 'pässwörd ✓ 🔑'],
      ['x', ':::'],
    ] as const) {
      const header = await oauth4webapiBasic(id, secret)
      expect(parseBasic(header)).toEqual({ clientId: id, clientSecret: secret })
    }
  })

  it('TOK-08: the encoded header differs from a naive base64(id:secret)', async () => {
    const header = await oauth4webapiBasic(TRICKY, TRICKY)
    expect(header).not.toBe(`Basic ${btoa(`${TRICKY}:${TRICKY}`)}`)
  })

  it('splits at the first colon: an unencoded colon in the secret stays in the secret', () => {
    expect(parseBasic(`Basic ${btoa('id:se:cret')}`)).toEqual({ clientId: 'id', clientSecret: 'se:cret' })
  })

  it('accepts a lower-case scheme and an empty secret', () => {
    expect(parseBasic(`basic ${btoa('id:')}`)).toEqual({ clientId: 'id', clientSecret: '' })
  })

  it.each([
    ['not base64', 'Basic ***'],
    ['no colon', `Basic ${btoa('idsecret')}`],
    ['bad percent-encoding', `Basic ${btoa('id%zz:secret')}`],
    ['a truncated escape', `Basic ${btoa('id:secret%')}`],
    ['invalid UTF-8', `Basic ${btoa('id:\xff\xfe')}`],
    ['percent-encoded invalid UTF-8', `Basic ${btoa('id:%FF')}`],
    ['no credentials', 'Basic '],
    ['two tokens', `Basic ${btoa('a:b')} ${btoa('c:d')}`],
  ])('%s → invalid_client with a Basic challenge', (_, header) => {
    expect(() => parseBasic(header)).toThrow(
      expect.objectContaining({ code: 'invalid_client', status: 401, challenge: 'Basic' }),
    )
  })
})

describe('authenticateClient', () => {
  it('TOK-08: client_secret_basic with id and secret containing a+b:c%d/e', async () => {
    const { ctx } = await context()
    const result = await authenticate(ctx, {}, await oauth4webapiBasic(TRICKY, TRICKY))
    expect(result.method).toBe('client_secret_basic')
    expect(result.client.clientId).toBe(TRICKY)
  })

  it('TOK-08: the un-encoded form of the same credentials does not authenticate', async () => {
    const { ctx } = await context()
    // base64("a+b:c%d/e:a+b:c%d/e") decodes to id "a b", which does not exist.
    const err = await failure(authenticate(ctx, {}, `Basic ${btoa(`${TRICKY}:${TRICKY}`)}`))
    expect(err.code).toBe('invalid_client')
  })

  it('TOK-10: client_secret_post', async () => {
    const { ctx } = await context()
    const result = await authenticate(ctx, { client_id: TRICKY, client_secret: TRICKY })
    expect(result).toMatchObject({ method: 'client_secret_post', client: { clientId: TRICKY } })
  })

  it('TOK-11: Basic and client_secret together → invalid_request', async () => {
    const { ctx } = await context()
    const err = await failure(authenticate(ctx, { client_secret: 'conf-secret' }, basic('conf', 'conf-secret')))
    expect(err).toMatchObject({ code: 'invalid_request', status: 400 })
  })

  it('TOK-11: a client assertion with Basic or with client_secret → invalid_request (RFC 6749 §5.2)', async () => {
    const { ctx } = await context()
    const assertion = { client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' }
    for (const [body, authorization] of [
      [{ ...assertion, client_assertion: 'a.b.c' }, basic('conf', 'conf-secret')],
      [{ client_assertion: 'a.b.c', client_id: 'conf', client_secret: 'conf-secret' }, undefined],
    ] as const) {
      const err = await failure(authenticate(ctx, body, authorization))
      expect(err).toMatchObject({ code: 'invalid_request', status: 400 })
    }
  })

  it('TOK-11: a body client_id different from the Basic id → invalid_client', async () => {
    const { ctx } = await context()
    const err = await failure(authenticate(ctx, { client_id: 'pub' }, basic('conf', 'conf-secret')))
    expect(err).toMatchObject({ code: 'invalid_client', status: 401, challenge: 'Basic' })
  })

  it('TOK-11: a body client_id equal to the Basic id is fine', async () => {
    const { ctx } = await context()
    const result = await authenticate(ctx, { client_id: 'conf' }, basic('conf', 'conf-secret'))
    expect(result.method).toBe('client_secret_basic')
  })

  it('TOK-12: a confidential client sending only client_id → invalid_client', async () => {
    const { ctx } = await context()
    const err = await failure(authenticate(ctx, { client_id: 'conf' }, undefined, true))
    expect(err).toMatchObject({ code: 'invalid_client', status: 401 })
  })

  it('TOK-12: a public client sends client_id only where the endpoint allows it', async () => {
    const { ctx } = await context()
    expect(await authenticate(ctx, { client_id: 'pub' }, undefined, true)).toMatchObject({ method: 'none' })
    const err = await failure(authenticate(ctx, { client_id: 'pub' }, undefined, false))
    expect(err.code).toBe('invalid_client')
  })

  it('a public client presenting a secret → invalid_client', async () => {
    const { ctx } = await context()
    expect((await failure(authenticate(ctx, { client_id: 'pub', client_secret: 'x' }, undefined, true))).code).toBe(
      'invalid_client',
    )
    expect((await failure(authenticate(ctx, {}, basic('pub', 'x'), true))).code).toBe('invalid_client')
  })

  it.each([
    ['a wrong secret via Basic', {}, basic('conf', 'wrong')],
    ['a wrong secret via post', { client_id: 'conf', client_secret: 'wrong' }, undefined],
    ['an unknown client via Basic', {}, basic('nobody', 'conf-secret')],
    ['an unknown client via post', { client_id: 'nobody', client_secret: 'conf-secret' }, undefined],
    ['no credentials at all', {}, undefined],
    ['a Bearer header', {}, 'Bearer abc'],
    ['a secret without client_id', { client_secret: 'conf-secret' }, undefined],
    ['the secret of another client', {}, basic('conf', TRICKY)],
  ])('TOK-09: %s → invalid_client (401, Basic challenge)', async (_, body, authorization) => {
    const { ctx } = await context()
    const err = await failure(authenticate(ctx, body, authorization))
    expect(err).toMatchObject({ code: 'invalid_client', status: 401, challenge: 'Basic' })
  })

  it('an expired secret no longer authenticates; another unexpired secret of the client does', async () => {
    const { ctx, store } = await context()
    const record = await store.clients.get('conf')
    if (!record) throw new Error('missing fixture')
    record.secrets = [
      { hash: await hashSecret('old-secret', 1000), createdAt: NOW - 100, expiresAt: NOW },
      { hash: await hashSecret('new-secret', 1000), createdAt: NOW - 10 },
    ]
    await store.clients.update(record)
    expect((await failure(authenticate(ctx, {}, basic('conf', 'old-secret')))).code).toBe('invalid_client')
    expect((await authenticate(ctx, {}, basic('conf', 'new-secret'))).client.clientId).toBe('conf')
  })
})

describe('requirePermission', () => {
  it('throws unauthorized_client unless the client holds the permission', async () => {
    const { ctx } = await context()
    const client = await ctx.clients.get('conf')
    if (!client) throw new Error('missing fixture')
    expect(() => requirePermission(client, 'ept:token', 'the token endpoint')).not.toThrow()
    expect(() => requirePermission(client, 'ept:introspection', 'the introspection endpoint')).toThrow(
      expect.objectContaining({ code: 'unauthorized_client', status: 400 }),
    )
  })
})

describe('over the wire', () => {
  it('TOK-08: oauth4webapi ClientSecretBasic with id and secret a+b:c%d/e gets a token', async () => {
    const { service } = await makeService()
    await service.clients.ensure({
      clientId: TRICKY,
      clientSecret: TRICKY,
      permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
    })
    const as = { issuer: ISSUER, token_endpoint: service.endpoints.token }
    const client = { client_id: TRICKY }
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(TRICKY),
      {},
      inProcess(service.fetch),
    )
    const result = await oauth.processClientCredentialsResponse(as, client, response)
    expect(result.token_type).toBe('bearer')
    expect(result.access_token).toEqual(expect.any(String))
  })
})
