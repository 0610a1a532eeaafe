/**
 * #29 the device authorization endpoint (RFC 8628 §3.1, §3.2) through oauth4webapi: POST
 * /connect/device answers the codes and the verification URIs; the client authenticates as at the
 * token endpoint (a public client by client_id); permissions, scope and resource are checked as
 * elsewhere. Discovery names the endpoint and the grant type.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import type { GatehouseEvent } from '../../../src/events/index.ts'
import { StoreUnavailableError } from '../../../src/errors.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { USER_CODE_ALPHABET } from '../../../src/tokens/user_code.ts'
import {
  DEVICE_GRANT,
  DEVICE_SCOPES,
  MAIL,
  deviceAuthorizationRequest,
  deviceClient,
  ensureDeviceClients,
  startDevice,
} from '../../helpers/device.ts'
import { setup } from '../../helpers/flow.ts'
import { ISSUER, basic, form } from '../../helpers/service.ts'
import {
  JWT_BEARER_ASSERTION_TYPE,
  clientKey,
  keyService,
  signAssertion,
} from '../client_auth/private_key_jwt_fixtures.ts'

async function start(options: Parameters<typeof setup>[0] = {}) {
  const ctx = await setup({ scopes: DEVICE_SCOPES, ...options })
  await ensureDeviceClients(ctx)
  return ctx
}

/** A device authorization that must fail with `error` and `status`. */
async function refused(
  ctx: Awaited<ReturnType<typeof start>>,
  parameters: Record<string, string> | string[][],
  error: string,
  clientId = 'cli',
  status = 400,
  auth?: oauth.ClientAuth,
) {
  const response = await deviceAuthorizationRequest(ctx, parameters, clientId, auth)
  if (status === 401) {
    // oauth4webapi answers a 401 with its WWW-Authenticate challenge: read the body itself.
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error })
    return
  }
  await expect(
    oauth.processDeviceAuthorizationResponse(ctx.as, deviceClient(clientId).client, response),
  ).rejects.toMatchObject({ error, status })
}

const LETTER = `[${USER_CODE_ALPHABET}]`

describe('#29 device authorization endpoint', () => {
  it('#29 discovery (both documents) names device_authorization_endpoint and the device_code grant type', async () => {
    const ctx = await start()
    expect(ctx.as.device_authorization_endpoint).toBe(`${ISSUER}/connect/device`)
    expect(ctx.as.grant_types_supported).toContain(DEVICE_GRANT)
    const oauthDocument = (await (
      await ctx.service.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`))
    ).json()) as Record<string, unknown>
    expect(oauthDocument.device_authorization_endpoint).toBe(`${ISSUER}/connect/device`)
    expect(oauthDocument.grant_types_supported).toContain(DEVICE_GRANT)
  })

  it('#29 answers 200 no-store JSON: device_code, user_code XXXX-XXXX, verification_uri(_complete), expires_in 600, interval 5', async () => {
    const ctx = await start()
    const response = await deviceAuthorizationRequest(ctx, { scope: 'openid profile' })
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    const body = await oauth.processDeviceAuthorizationResponse(ctx.as, { client_id: 'cli' }, response)
    expect(Object.keys(body).sort()).toEqual([
      'device_code',
      'expires_in',
      'interval',
      'user_code',
      'verification_uri',
      'verification_uri_complete',
    ])
    expect(body.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(body.user_code).toMatch(new RegExp(`^${LETTER}{4}-${LETTER}{4}$`))
    expect(body.verification_uri).toBe(`${ISSUER}/connect/verify`)
    expect(body.verification_uri_complete).toBe(`${ISSUER}/connect/verify?user_code=${body.user_code}`)
    expect(body.expires_in).toBe(600)
    expect(body.interval).toBe(5)
    const again = await startDevice(ctx, { scope: 'openid' })
    expect(again.device_code).not.toBe(body.device_code)
    expect(again.user_code).not.toBe(body.user_code)
  })

  it('#29 deviceCodeTtl and deviceCodeInterval set expires_in and interval; the record holds scope, resources and client', async () => {
    const ctx = await start({ deviceCodeTtl: 300, deviceCodeInterval: 7 })
    const body = await startDevice(ctx, [
      ['scope', 'openid mail.read api1'],
      ['resource', MAIL],
    ])
    expect(body.expires_in).toBe(300)
    expect(body.interval).toBe(7)
    const record = await ctx.service.store.deviceCodes.findByUserCode(body.user_code.replace('-', ''), ctx.clock.now())
    // RFC 8707: with a resource, only that resource's API scopes (and identity scopes) are asked for.
    expect(record).toMatchObject({
      clientId: 'cli',
      scope: 'openid mail.read',
      resources: [MAIL],
      status: 'pending',
      interval: 7,
      expiresAt: ctx.clock.now() + 300,
    })
  })

  it('#29 a public client authenticates by client_id alone; a confidential one with its secret, a wrong secret is 401 invalid_client', async () => {
    const ctx = await start()
    expect((await startDevice(ctx, { scope: 'openid' }, 'cli')).device_code).toBeTypeOf('string')
    expect((await startDevice(ctx, { scope: 'openid' }, 'tv')).device_code).toBeTypeOf('string')
    await refused(ctx, { scope: 'openid' }, 'invalid_client', 'tv', 401, oauth.ClientSecretBasic('wrong'))
    // A confidential client cannot leave its secret out.
    await refused(ctx, { scope: 'openid' }, 'invalid_client', 'tv', 401, oauth.None())
    // client_secret_post, as at the token endpoint.
    const posted = await deviceAuthorizationRequest(ctx, { scope: 'openid' }, 'tv', oauth.ClientSecretPost('tv-secret'))
    expect(posted.status).toBe(200)
    // An unknown client.
    await refused(ctx, { scope: 'openid' }, 'invalid_client', 'nobody', 401)
  })

  it('#29 unauthorized_client without ept:device_authorization, and without the device_code grant permission', async () => {
    const ctx = await start()
    await refused(ctx, { scope: 'openid' }, 'unauthorized_client', 'no-endpoint')
    await refused(ctx, { scope: 'openid' }, 'unauthorized_client', 'no-grant')
    // A client of the code flow only (the shared test clients).
    await refused(ctx, { scope: 'openid' }, 'unauthorized_client', 'web', 400, oauth.ClientSecretBasic('web-secret'))
  })

  it('#29 invalid_scope: an unknown scope, a scope without scp: permission, no scope at all', async () => {
    const ctx = await start()
    await refused(ctx, { scope: 'openid nonexistent' }, 'invalid_scope')
    await refused(ctx, { scope: 'openid email' }, 'invalid_scope')
    await refused(ctx, {}, 'invalid_scope')
  })

  it('#29 invalid_target: a resource that is not a permitted scope audience, or not an absolute URI', async () => {
    const ctx = await start()
    await refused(ctx, { scope: 'openid', resource: 'https://elsewhere.example.test/' }, 'invalid_target')
    await refused(ctx, { scope: 'openid', resource: 'mail' }, 'invalid_target')
  })

  it('#29 form-encoded POST only: GET is 405, a JSON body 400 invalid_request; a repeated scope is invalid_request', async () => {
    const ctx = await start()
    const url = ctx.as.device_authorization_endpoint as string
    const get = await ctx.service.fetch(new Request(url))
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST')
    const jsonBody = await ctx.service.fetch(
      new Request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'cli', scope: 'openid' }),
      }),
    )
    expect(jsonBody.status).toBe(400)
    expect(await jsonBody.json()).toMatchObject({ error: 'invalid_request' })
    await refused(
      ctx,
      [
        ['scope', 'openid'],
        ['scope', 'profile'],
      ],
      'invalid_request',
    )
  })

  it('#29 emits device.authorization_started with client, grant and scope', async () => {
    const events: GatehouseEvent[] = []
    const ctx = await start({ onEvent: (event) => void events.push(event) })
    await startDevice(ctx, { scope: 'openid profile' })
    const started = events.filter((event) => event.type === 'device.authorization_started')
    expect(started).toHaveLength(1)
    expect(started[0]).toMatchObject({ clientId: 'cli', scope: 'openid profile' })
    expect((started[0] as { grantId?: string }).grantId).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  it('#29 answers CORS for a registered origin as the token endpoint does', async () => {
    const ctx = await start()
    const url = ctx.as.device_authorization_endpoint as string
    const preflight = await ctx.service.fetch(
      new Request(url, {
        method: 'OPTIONS',
        headers: { origin: 'https://rp.example.test', 'access-control-request-method': 'POST' },
      }),
    )
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-methods')).toBe('POST')
    const answered = await ctx.service.fetch(
      form(url, { client_id: 'cli', scope: 'openid' }, { origin: 'https://rp.example.test' }),
    )
    expect(answered.status).toBe(200)
    expect(answered.headers.get('access-control-allow-origin')).toBe('https://rp.example.test')
  })

  it('#29 private_key_jwt: an assertion may name the device authorization endpoint (or the issuer) as audience, not another endpoint', async () => {
    const key = await clientKey('ES256')
    const setup = await keyService([
      {
        clientId: 'kiosk',
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwks: { keys: [key.jwk] } as ClientRegistration['jwks'],
        permissions: ['ept:device_authorization', 'ept:token', `gt:${DEVICE_GRANT}`, 'scp:openid'],
      },
    ])
    const url = `${ISSUER}/connect/device`
    const send = async (aud: string) => {
      const assertion = await signAssertion(key, 'kiosk', setup.clock.now(), { aud })
      return setup.service.fetch(
        form(url, { scope: 'openid', client_assertion_type: JWT_BEARER_ASSERTION_TYPE, client_assertion: assertion }),
      )
    }
    expect((await send(url)).status).toBe(200)
    expect((await send(ISSUER)).status).toBe(200)
    const other = await send(`${ISSUER}/connect/revoke`)
    expect(other.status).toBe(401)
    expect(await other.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('#29 failed client authentications are throttled as at the token endpoint, with shared counters', async () => {
    const ctx = await start()
    const url = ctx.as.device_authorization_endpoint as string
    const attacker = { address: '203.0.113.7' }
    const guess = (secret: string) =>
      ctx.service.fetch(form(url, { scope: 'openid' }, { authorization: basic('tv', secret) }), attacker)
    for (let i = 0; i < 5; i++) expect((await guess(`guess-${i}`)).status).toBe(401)
    // Five more at the token endpoint: the same counters.
    for (let i = 5; i < 10; i++) {
      const response = await ctx.service.fetch(
        form(
          ctx.as.token_endpoint as string,
          { grant_type: DEVICE_GRANT, device_code: 'x' },
          { authorization: basic('tv', `guess-${i}`) },
        ),
        attacker,
      )
      expect(response.status).toBe(401)
    }
    // Throttled now, even with the right secret.
    const throttled = await guess('tv-secret')
    expect(throttled.status).toBe(429)
    expect(await throttled.json()).toMatchObject({ error: 'invalid_client' })
    // From elsewhere the client is not locked out.
    const office = await ctx.service.fetch(
      form(url, { scope: 'openid' }, { authorization: basic('tv', 'tv-secret') }),
      {
        address: '198.51.100.20',
      },
    )
    expect(office.status).toBe(200)
  })

  it('#29 a store outage is 503 temporarily_unavailable, with the client authenticated by Basic', async () => {
    const store = createMemoryStore()
    const failing = {
      ...store,
      deviceCodes: {
        ...store.deviceCodes,
        insert: () => Promise.reject(new StoreUnavailableError('injected failure in deviceCodes.insert')),
      },
    }
    const ctx = await start({ store: failing })
    const response = await ctx.service.fetch(
      form(
        ctx.as.device_authorization_endpoint as string,
        { scope: 'openid' },
        { authorization: basic('tv', 'tv-secret') },
      ),
    )
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' })
  })
})
