/**
 * #29 a self-registered CLI (RFC 7591) with the device_code grant, end to end: registration where
 * the host's `dynamicClientRegistration.grantTypes` allows the grant, POST /connect/device, the
 * verification pages (the confirmation names the client as self-registered), and the tokens.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { Browser, type Page } from '../../helpers/browser.ts'
import { DEVICE_GRANT } from '../../helpers/device.ts'
import { ISSUER, inProcess, makeService } from '../../helpers/service.ts'

type GrantTypes = NonNullable<NonNullable<Parameters<typeof makeService>[0]>['dynamicClientRegistration']>['grantTypes']

async function register(
  grantTypes: GrantTypes,
  metadata: Record<string, unknown>,
): Promise<{ service: Awaited<ReturnType<typeof makeService>>['service']; response: Response }> {
  const { service } = await makeService({
    dynamicClientRegistration: { scopes: ['openid', 'profile'], ...(grantTypes ? { grantTypes } : {}) },
  })
  const response = await service.fetch(
    new Request(`${ISSUER}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(metadata),
    }),
    { address: '203.0.113.7' },
  )
  return { service, response }
}

const CLI = { client_name: 'Terminal Agent', grant_types: [DEVICE_GRANT], token_endpoint_auth_method: 'none' }

describe('#29 device flow for self-registered clients', () => {
  it('#29 a public client registers the device_code grant (no redirect URI) and signs a user in; the confirmation says it registered itself', async () => {
    const { service, response } = await register(['authorization_code', 'refresh_token', DEVICE_GRANT], CLI)
    expect(response.status, await response.clone().text()).toBe(201)
    const registered = (await response.json()) as { client_id: string; grant_types: string[]; redirect_uris: string[] }
    expect(registered.grant_types).toEqual([DEVICE_GRANT])
    expect(registered.redirect_uris).toEqual([])

    const opts = inProcess(service.fetch)
    const as = await oauth.processDiscoveryResponse(
      new URL(ISSUER),
      await oauth.discoveryRequest(new URL(ISSUER), opts),
    )
    const client: oauth.Client = { client_id: registered.client_id }
    const device = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(as, client, oauth.None(), { scope: 'openid profile' }, opts),
    )

    const browser = new Browser(service.fetch)
    const codeForm = (await browser.navigate(device.verification_uri_complete as string)).page as Page
    const signIn = (await browser.submit(codeForm, { user_code: device.user_code })).page as Page
    const confirm = (await browser.signIn(signIn, 'alice', 'alice-password')).page as Page
    expect(confirm.html).toContain('id="self-registered"')
    expect(confirm.html).toContain('<strong><bdi>Terminal Agent</bdi></strong> registered itself')
    await browser.submit(confirm, { decision: 'approve' })

    const tokens = await oauth.processDeviceCodeResponse(
      as,
      client,
      await oauth.deviceCodeGrantRequest(as, client, oauth.None(), device.device_code, opts),
    )
    expect(tokens.scope).toBe('openid profile')
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({ sub: 'user-1', aud: registered.client_id })
  })

  it('#29 without the grant in dynamicClientRegistration.grantTypes (the default) the registration is refused and nothing is registered', async () => {
    const { service, response } = await register(undefined, CLI)
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_client_metadata' })
    const clients = await service.clients.list()
    expect(clients.map((client) => client.displayName)).not.toContain('Terminal Agent')
  })

  it('#29 a client registering only the code flow gets no device authorization endpoint', async () => {
    const { service, response } = await register(['authorization_code', DEVICE_GRANT], {
      client_name: 'Web',
      redirect_uris: ['https://tool.example.test/cb'],
      token_endpoint_auth_method: 'none',
    })
    const { client_id } = (await response.json()) as { client_id: string }
    const refused = await service.fetch(
      new Request(`${ISSUER}/connect/device`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id, scope: 'openid' }),
      }),
    )
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: 'unauthorized_client' })
  })
})
