/**
 * #27 item 2: a dynamically registered client (RFC 7591) may use https, loopback http (RFC 8252
 * §7.3) or a private-use scheme in reverse domain name form (RFC 8252 §7.1) as redirect URIs;
 * every other scheme (the operating system's and the browser's protocol handlers) is
 * `invalid_redirect_uri`, without echoing the URI. A host opts in to a dotless private-use scheme
 * (Cursor's `cursor://…`) with `dynamicClientRegistration.redirectSchemes`.
 * CONFORMANCE: RFC 7591 §3.2.2 (invalid_redirect_uri).
 */
import { describe, expect, it } from 'vitest'
import { setup } from '../../helpers/flow.ts'
import { ISSUER } from '../../helpers/service.ts'

const CLIENT = {
  client_name: 'Tool',
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
}

async function service(redirectSchemes?: string[]) {
  return setup({
    scopes: ['mcp:tools'],
    dynamicClientRegistration: { scopes: ['mcp:tools'], ...(redirectSchemes ? { redirectSchemes } : {}) },
  })
}

async function register(ctx: Awaited<ReturnType<typeof service>>, redirectUri: string, address: string) {
  const response = await ctx.service.fetch(
    new Request(`${ISSUER}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CLIENT, redirect_uris: [redirectUri] }),
    }),
    { address },
  )
  return { status: response.status, body: (await response.json()) as { error?: string; error_description?: string } }
}

const REFUSED = [
  'ms-msdt:/id PCWDiagnostic /skip force',
  'search-ms:query=invoice&crumb=location:\\\\evil.example\\share',
  'ms-officecmd:{"id":3}',
  'intent:#Intent;scheme=x;end',
  'intent://evil.example/cb',
  'view-source:https://rp.example.test/cb',
  'jar:https://rp.example.test/a.jar!/cb',
  'mailto:victim@rp.example.test',
  'javascript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'file:///C:/Windows/System32/calc.exe',
  'blob:https://rp.example.test/uuid',
  'ms-settings:privacy',
  'x-apple.systempreferences:com.apple.preference.security',
  'cursor://callback',
  'tel:+15555550100',
]

describe('#27 item 2 redirect URI schemes of dynamically registered clients', () => {
  it.each(REFUSED)('#27 item 2 registering %j is invalid_redirect_uri (no echo)', async (uri) => {
    const ctx = await service()
    const { status, body } = await register(ctx, uri, '203.0.113.5')
    expect(status).toBe(400)
    expect(body.error).toBe('invalid_redirect_uri')
    expect(body.error_description).toContain('redirect_uris')
    expect(body.error_description).not.toContain(uri.split(':')[0])
  })

  it('#27 item 2 https, loopback http (127.0.0.1, [::1], localhost) and reverse-DNS private-use schemes register', async () => {
    const ctx = await service()
    const allowed = [
      'https://rp.example.test/cb',
      'http://127.0.0.1:33418/cb',
      'http://[::1]:33418/cb',
      'http://localhost:33418/cb',
      'com.example.app:/oauth2redirect',
      'com.example.app://callback',
      'io.modelcontextprotocol.inspector:/cb',
    ]
    for (const [i, uri] of allowed.entries()) {
      expect((await register(ctx, uri, `203.0.113.${10 + i}`)).status, uri).toBe(201)
    }
  })
})

describe('#27 item 2 dynamicClientRegistration.redirectSchemes: schemes the host trusts', () => {
  const CURSOR = 'cursor://anysphere.cursor-retrieval/oauth/callback'

  it('#27 item 2 with redirectSchemes [cursor] a cursor:// redirect URI registers (and updates keep it)', async () => {
    const ctx = await service(['cursor'])
    const response = await ctx.service.fetch(
      new Request(`${ISSUER}/connect/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          ...CLIENT,
          redirect_uris: [CURSOR, 'cursor://anysphere.cursor-retrieval/oauth/user-callback'],
        }),
      }),
      { address: '203.0.113.40' },
    )
    expect(response.status).toBe(201)
    const client = (await response.json()) as {
      redirect_uris: string[]
      registration_client_uri: string
      registration_access_token: string
      client_id: string
    }
    expect(client.redirect_uris).toContain(CURSOR)
    // RFC 7592 §2.2: the update is checked by the same rule.
    const update = await ctx.service.fetch(
      new Request(client.registration_client_uri, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${client.registration_access_token}` },
        body: JSON.stringify({ ...CLIENT, client_id: client.client_id, redirect_uris: [CURSOR] }),
      }),
      { address: '203.0.113.40' },
    )
    expect(update.status).toBe(200)
  })

  it('#27 item 2 without redirectSchemes the same cursor:// URI is invalid_redirect_uri', async () => {
    const { status, body } = await register(await service(), CURSOR, '203.0.113.41')
    expect(status).toBe(400)
    expect(body.error).toBe('invalid_redirect_uri')
  })

  it('#27 item 2 redirectSchemes lets in only the schemes it lists', async () => {
    const ctx = await service(['cursor'])
    for (const [i, uri] of ['vscode://ext/cb', 'ms-msdt:/id x', 'javascript:alert(1)', 'cursorx://a/b'].entries()) {
      const { status, body } = await register(ctx, uri, `203.0.113.${50 + i}`)
      expect(status, uri).toBe(400)
      expect(body.error).toBe('invalid_redirect_uri')
    }
  })

  it.each([
    [['ms-msdt'], 'dynamicClientRegistration.redirectSchemes.0'],
    [['javascript'], 'dynamicClientRegistration.redirectSchemes.0'],
    [['cursor', 'search-ms'], 'dynamicClientRegistration.redirectSchemes.1'],
    [['https'], 'dynamicClientRegistration.redirectSchemes.0'],
    [['ms-officecmd'], 'dynamicClientRegistration.redirectSchemes.0'],
    [['intent'], 'dynamicClientRegistration.redirectSchemes.0'],
    [['Cursor'], 'dynamicClientRegistration.redirectSchemes.0'],
    [['cursor:'], 'dynamicClientRegistration.redirectSchemes.0'],
    [[''], 'dynamicClientRegistration.redirectSchemes.0'],
  ])('#27 item 2 redirectSchemes %j is refused at construction', async (schemes, path) => {
    await expect(service(schemes)).rejects.toThrow(`invalid token service options\n${path}: `)
  })
})
