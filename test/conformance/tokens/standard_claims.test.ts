/**
 * #30 Standard scopes and claims (OpenID Connect Core §5.1, §5.4; UI-08): users (the configuration
 * file's, and `findAccount` results) carry `name`, `address` (an object), `phone_number`,
 * `phone_number_verified`; the `address` and `phone` scopes (permissions `scp:address`,
 * `scp:phone`) release them; discovery lists the scopes and claims. The request parameters of
 * Core §3.1.2.1 (AUTHZ-09): `login_hint` prefills the built-in sign-in form and, with
 * `ui_locales`, `claims_locales`, `display` and `acr_values`, reaches the host's hook.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { parseConfigFile } from '../../../src/config/file.ts'
import type { PendingInteraction } from '../../../src/index.ts'
import { authorizationUrl, setup, signIn } from '../../helpers/flow.ts'
import { CLIENTS } from '../../helpers/service.ts'

const ADDRESS = {
  formatted: '1 Rue de Rivoli\n75001 Paris\nFrance',
  street_address: '1 Rue de Rivoli',
  locality: 'Paris',
  postal_code: '75001',
  country: 'FR',
}
const CAROL = {
  sub: 'carol-1',
  username: 'carol',
  password: 'carol-password',
  name: 'Carol Example',
  email: 'carol@example.com',
  email_verified: true,
  address: ADDRESS,
  phone_number: '+33 1 23 45 67 89',
  phone_number_verified: true,
}

/** `web` with the address and phone scope permissions. */
async function standardSetup(options: Parameters<typeof setup>[0] = {}) {
  const ctx = await setup({ users: [CAROL], ...options })
  const web = CLIENTS.web as NonNullable<(typeof CLIENTS)['web']>
  await ctx.service.clients.ensure({
    ...web,
    clientId: 'web-all',
    permissions: [...web.permissions, 'scp:address', 'scp:phone'],
  })
  return ctx
}

const webAll: oauth.Client = { client_id: 'web-all' }
const webAllAuth = oauth.ClientSecretBasic('web-secret')

async function userinfo(ctx: Awaited<ReturnType<typeof setup>>, token: string, sub: string) {
  const response = await oauth.userInfoRequest(ctx.as, webAll, token, ctx.opts)
  return (await oauth.processUserInfoResponse(ctx.as, webAll, sub, response)) as Record<string, unknown>
}

describe('#30 standard scopes and claims', () => {
  it('#30 DISC-05: scopes_supported lists address and phone; claims_supported their claims and name', async () => {
    const ctx = await setup()
    expect(ctx.as.scopes_supported).toEqual(expect.arrayContaining(['openid', 'profile', 'email', 'address', 'phone']))
    expect(ctx.as.claims_supported).toEqual(
      expect.arrayContaining(['name', 'address', 'phone_number', 'phone_number_verified', 'email', 'email_verified']),
    )
  })

  it('#30 UI-08 oidcc-scope-address / -phone: the scopes release address (an object) and the phone claims', async () => {
    const ctx = await standardSetup()
    const { result } = await signIn(ctx, {
      client: webAll,
      auth: webAllAuth,
      clientId: 'web-all',
      scope: 'openid address phone',
      credentials: { username: 'carol', password: 'carol-password' },
    })
    const info = await userinfo(ctx, result.access_token, 'carol-1')
    expect(info).toEqual({
      sub: 'carol-1',
      address: ADDRESS,
      phone_number: CAROL.phone_number,
      phone_number_verified: true,
    })
    // idTokenClaims 'scopes' (the default): the ID token carries the same.
    const claims = oauth.getValidatedIdTokenClaims(result) as Record<string, unknown>
    expect(claims.address).toEqual(ADDRESS)
    expect(claims.phone_number).toBe(CAROL.phone_number)
    expect(claims.name).toBeUndefined()
  })

  it('#30 the address and phone scopes need scp:address / scp:phone', async () => {
    const ctx = await standardSetup()
    for (const scope of ['openid address', 'openid phone']) {
      const request = await authorizationUrl(ctx.as, { scope })
      const response = await ctx.browser.request(request.url.href)
      expect(new URL(response.headers.get('location') as string).searchParams.get('error'), scope).toBe('invalid_scope')
    }
  })

  it("#30 findAccount's address and phone claims are released by the scopes too", async () => {
    const ctx = await standardSetup({
      accounts: {
        findAccount: async (sub) => ({ sub, name: 'Host', address: { country: 'DE' }, phone_number: '+49 30 1234' }),
      },
      interaction: () => ({ login: { sub: 'h1' } }),
    })
    const { result } = await signIn(ctx, {
      client: webAll,
      auth: webAllAuth,
      clientId: 'web-all',
      scope: 'openid profile address phone',
    })
    expect(await userinfo(ctx, result.access_token, 'h1')).toEqual({
      sub: 'h1',
      name: 'Host',
      address: { country: 'DE' },
      phone_number: '+49 30 1234',
    })
  })

  it('#30 the configuration file takes name, address (an object), phone_number, phone_number_verified', () => {
    const file = parseConfigFile(JSON.stringify({ users: [CAROL] }))
    expect(file.users[0]).toMatchObject({ address: ADDRESS, phone_number_verified: true, name: 'Carol Example' })
    for (const bad of [
      { ...CAROL, address: '1 Rue de Rivoli' },
      { ...CAROL, address: { street: 'x' } },
      { ...CAROL, phone_number_verified: 'yes' },
      { ...CAROL, phone_number: 33 },
    ]) {
      expect(() => parseConfigFile(JSON.stringify({ users: [bad] }))).toThrow(/users/)
    }
  })
})

describe('#30 AUTHZ-09 request parameters: login_hint, ui_locales, claims_locales, display, acr_values', () => {
  it('#30 login_hint prefills the built-in sign-in form (escaped)', async () => {
    const ctx = await setup()
    const request = await authorizationUrl(ctx.as, { extra: { login_hint: 'alice"<b>' } })
    const { page } = await ctx.browser.navigate(request.url.href)
    expect(page?.html).toContain('name="username"')
    expect(page?.html).toMatch(/id="username"[^>]* value="alice&quot;&lt;b&gt;"/)
  })

  it("#30 they reach the host's hook; acr_values as a list", async () => {
    const seen: PendingInteraction[] = []
    const ctx = await setup({
      interaction: (_request, pending) => {
        seen.push(pending)
        return { login: { sub: 'user-1', acr: 'urn:example:loa:2' } }
      },
    })
    const extra = {
      login_hint: 'alice@example.com',
      ui_locales: 'se en-GB',
      claims_locales: 'se',
      display: 'popup',
      acr_values: 'urn:example:loa:2 urn:example:loa:1',
    }
    const { result } = await signIn(ctx, { extra })
    expect(seen[0]).toMatchObject({
      loginHint: 'alice@example.com',
      uiLocales: 'se en-GB',
      claimsLocales: 'se',
      display: 'popup',
      acrValues: ['urn:example:loa:2', 'urn:example:loa:1'],
    })
    expect((oauth.getValidatedIdTokenClaims(result) as oauth.IDToken).acr).toBe('urn:example:loa:2')
  })

  it('#30 display must be page, popup, touch or wap (invalid_request otherwise)', async () => {
    const ctx = await setup()
    for (const display of ['page', 'popup', 'touch', 'wap']) {
      const request = await authorizationUrl(ctx.as, { extra: { display } })
      expect((await ctx.browser.request(request.url.href)).status, display).toBe(303)
      const location = (await ctx.browser.request(request.url.href)).headers.get('location') as string
      expect(location, display).toContain('/connect/interaction')
    }
    const request = await authorizationUrl(ctx.as, { extra: { display: 'fullscreen' } })
    const location = new URL((await ctx.browser.request(request.url.href)).headers.get('location') as string)
    expect(location.searchParams.get('error')).toBe('invalid_request')
  })
})
