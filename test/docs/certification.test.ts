/**
 * #30: docs/certification.md's two JSON blocks stay usable: the Gatehouse configuration file
 * parses as one and registers the clients the conformance modules of test/conformance/oidcc play
 * the suite with (same methods, the suite's redirect URIs for its alias), and the suite's test
 * configuration names those clients with the same secrets and the issuer's discovery URL.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseConfigFile } from '../../src/config/file.ts'
import { SUITE_CLIENTS } from '../conformance/oidcc/suite.ts'

const text = readFileSync(new URL('../../docs/certification.md', import.meta.url), 'utf8')
const blocks = [...text.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1] as string)

describe('#30 docs/certification.md', () => {
  it('#30 the Gatehouse configuration parses and holds the clients the modules use', () => {
    expect(blocks).toHaveLength(2)
    const config = parseConfigFile(blocks[0] as string, 'docs/certification.md')
    const clients = config.clients ?? []
    const hosted = 'https://www.certification.openid.net/test/a/gatehouse'
    for (const [role, expected] of Object.entries(SUITE_CLIENTS)) {
      const client = clients.find(
        (c) =>
          c.tokenEndpointAuthMethod === expected.tokenEndpointAuthMethod &&
          c.clientId.endsWith(expected.clientId.slice('oidcc-'.length)),
      )
      expect(client, role).toBeDefined()
      expect(client?.permissions.slice().sort()).toEqual([...expected.permissions].sort())
      expect(client?.redirectUris).toEqual([`${hosted}/callback`])
      expect(client?.postLogoutRedirectUris).toEqual([`${hosted}/post_logout_redirect`])
      // GenerateJWKsFromClientSecret refuses a secret under 32 bytes (HS256).
      expect(new TextEncoder().encode(client?.clientSecret ?? '').length).toBeGreaterThanOrEqual(32)
    }
    expect(config.users?.length).toBe(1)
  })

  it('#30 the suite configuration names the same clients, secrets and discovery URL', () => {
    const config = parseConfigFile(blocks[0] as string)
    const suite = JSON.parse(blocks[1] as string) as Record<
      string,
      { client_id?: string; client_secret?: string; discoveryUrl?: string }
    >
    expect(suite.server?.discoveryUrl).toBe(`${config.issuer}/.well-known/openid-configuration`)
    for (const role of ['client', 'client2', 'client_secret_post'] as const) {
      const entry = suite[role]
      const client = config.clients?.find((c) => c.clientId === entry?.client_id)
      expect(client, role).toBeDefined()
      expect(client?.clientSecret).toBe(entry?.client_secret)
      expect(client?.tokenEndpointAuthMethod).toBe(SUITE_CLIENTS[role].tokenEndpointAuthMethod)
    }
  })
})
