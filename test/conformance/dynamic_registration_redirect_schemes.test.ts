/**
 * #27 item 2: a dynamically registered client (RFC 7591) may use https, loopback http (RFC 8252
 * §7.3) or a private-use scheme in reverse domain name form (RFC 8252 §7.1) as redirect URIs;
 * every other scheme (the operating system's and the browser's protocol handlers) is
 * `invalid_redirect_uri`, without echoing the URI.
 * CONFORMANCE: RFC 7591 §3.2.2 (invalid_redirect_uri).
 */
import { describe, expect, it } from 'vitest'
import { setup } from '../helpers/flow.ts'
import { ISSUER } from '../helpers/service.ts'

const CLIENT = {
  client_name: 'Tool',
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
}

async function service() {
  return setup({ scopes: ['mcp:tools'], dynamicClientRegistration: { scopes: ['mcp:tools'] } })
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
