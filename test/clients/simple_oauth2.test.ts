/**
 * #18: simple-oauth2 (5.x, Node's most used OAuth 2.0 client) against Gatehouse served over HTTP
 * on 127.0.0.1 with the node adapter, default settings on both sides: client credentials, the
 * authorization code flow through the built-in sign-in page, refresh, and `revokeAll()`, which
 * failed on the empty revocation body (simple-oauth2 reads every answer as strict JSON).
 * CONFORMANCE: CC-01, CODE-01, RT-01, REV-01, REV-02, REV-06, REV-07.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { decodeJwt } from 'jose'
import { AuthorizationCode, ClientCredentials, type ModuleOptions } from 'simple-oauth2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveNode } from '../../adapters/node.ts'
import { type TokenService, createTokenService } from '../../src/index.ts'
import { Browser } from '../helpers/browser.ts'
import { CLIENTS, RU, USERS } from '../helpers/service.ts'

let server: Server
let service: TokenService
let issuer = ''

beforeAll(async () => {
  server = await serveNode((request, info) => service.fetch(request, info), { port: 0, hostname: '127.0.0.1' })
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  service = createTokenService({
    issuer,
    users: USERS,
    secretHashIterations: 1000,
    logger: { warn() {}, error: (message, detail) => console.error(message, detail) },
  })
  for (const client of [CLIENTS.service, CLIENTS.web]) await service.clients.ensure(client as never)
  await service.ready()
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await service?.close()
})

/** simple-oauth2's configuration for a Gatehouse client: the endpoint paths, nothing else. */
function options(id: string, secret: string, code = false): ModuleOptions {
  return {
    client: { id, secret },
    auth: {
      tokenHost: issuer,
      tokenPath: '/connect/token',
      revokePath: '/connect/revoke',
      ...(code ? { authorizePath: '/connect/authorize' } : {}),
    },
  }
}

/** What a resource server would see: introspection as `web`. */
async function active(token: string): Promise<boolean> {
  const response = await fetch(`${issuer}/connect/introspect`, {
    method: 'POST',
    headers: { authorization: `Basic ${btoa('web:web-secret')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }),
  })
  return ((await response.json()) as { active: boolean }).active
}

describe('#18 simple-oauth2 against Gatehouse over HTTP', () => {
  it('#18 CC-01 REV-01: ClientCredentials getToken, then revoke the access token', async () => {
    const client = new ClientCredentials(options('service', 'service-secret'))
    const token = await client.getToken({ scope: 'api1' })
    expect(token.token).toMatchObject({ token_type: 'Bearer', expires_in: 3600 })
    const accessToken = token.token.access_token as string
    expect(decodeJwt(accessToken)).toMatchObject({ iss: issuer, sub: 'service', aud: 'api1' })
    await expect(token.revoke('access_token')).resolves.toEqual({})
  })

  it('#18 CODE-01 RT-01 REV-01 REV-06: AuthorizationCode getToken, refresh, then revokeAll()', async () => {
    const client = new AuthorizationCode(options('web', 'web-secret', true))
    const state = crypto.randomUUID()
    const url = client.authorizeURL({ redirect_uri: RU, scope: 'openid profile email', state })
    const browser = new Browser((request) => fetch(request), [RU])
    const first = await browser.navigate(url)
    if (!first.page) throw new Error('no sign-in page')
    const { callback } = await browser.signIn(first.page, 'alice', 'alice-password')
    expect(callback?.searchParams.get('state')).toBe(state)
    const code = callback?.searchParams.get('code') as string

    const token = await client.getToken({ code, redirect_uri: RU, scope: 'openid profile email' })
    expect(token.token).toMatchObject({ token_type: 'Bearer', scope: 'openid profile email' })
    expect(decodeJwt(token.token.id_token as string)).toMatchObject({ sub: 'user-1', email: 'alice@example.com' })

    const refreshed = await token.refresh()
    expect(refreshed.token.refresh_token).not.toBe(token.token.refresh_token)
    expect(await active(refreshed.token.access_token as string)).toBe(true)

    await refreshed.revokeAll() // before #18: "The content-type is not JSON compatible" (empty body)
    expect(await active(refreshed.token.access_token as string)).toBe(false)
    await expect(refreshed.refresh()).rejects.toMatchObject({ output: { statusCode: 400 } })
    // RFC 7009 §2.2: revoking again (now unknown tokens) is still a success
    await refreshed.revokeAll()
  })
})
