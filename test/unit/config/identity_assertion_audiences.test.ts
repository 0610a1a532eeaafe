/**
 * #45 the identity provider's `identityAssertion` settings (src/config/identity_assertion_audiences.ts):
 * defaults, what an audience must be, and the configuration file keys (data only, no hook).
 */
import { describe, expect, it } from 'vitest'
import { parseConfigFile } from '../../../src/config/file.ts'
import { parseOptions } from '../../../src/config/parse.ts'

const ISSUER = 'https://auth.example.test'
const MCP = { issuer: 'https://mcp-as.example.test', client: 'mcp-app', clientId: 'c1', scopes: ['tools.read'] }

describe('#45 identityAssertion (identity provider side)', () => {
  it('#45 IdP config: defaults are no audience and a 300 s lifetime', () => {
    expect(parseOptions({ issuer: ISSUER }).identityAssertion).toEqual({ audiences: [], lifetime: 300 })
    expect(parseOptions({ issuer: ISSUER, identityAssertion: { audiences: [MCP] } }).identityAssertion).toEqual({
      audiences: [MCP],
      lifetime: 300,
    })
  })

  it('#45 IdP config: an audience needs an https issuer (http only on loopback), a client id, scopes', () => {
    const bad = (audience: Record<string, unknown>, pattern: RegExp) =>
      expect(() =>
        parseOptions({ issuer: ISSUER, identityAssertion: { audiences: [{ ...MCP, ...audience }] } }),
      ).toThrow(pattern)
    bad({ issuer: 'http://mcp-as.example.test' }, /identityAssertion\.audiences\.0\.issuer/)
    bad({ issuer: 'https://mcp-as.example.test/?x=1' }, /issuer identifier/)
    bad({ issuer: 'not a url' }, /absolute URL/)
    bad({ clientId: '' }, /clientId/)
    bad({ scopes: [] }, /at least one scope/)
    bad({ scopes: ['two words'] }, /scope token/)
    bad({ resources: ['https://mcp.example.test/#frag'] }, /without a fragment/)
    bad({ extra: true }, /extra/)
    expect(
      parseOptions({
        issuer: ISSUER,
        identityAssertion: { audiences: [{ ...MCP, issuer: 'http://localhost:4000' }] },
      }).identityAssertion.audiences[0]?.issuer,
    ).toBe('http://localhost:4000')
    expect(() => parseOptions({ issuer: ISSUER, identityAssertion: { lifetime: 0 } })).toThrow(/lifetime/)
    expect(() => parseOptions({ issuer: ISSUER, identityAssertion: { lifetime: 7200 } })).toThrow(/lifetime/)
    expect(() => parseOptions({ issuer: ISSUER, identityAssertion: { authorize: 'yes' } })).toThrow(/authorize/)
  })

  it('#45 IdP config: the configuration file takes audiences and lifetime, not the authorize hook', () => {
    const file = parseConfigFile(JSON.stringify({ identityAssertion: { audiences: [MCP], lifetime: 120 } }))
    expect(file.identityAssertion).toEqual({ audiences: [MCP], lifetime: 120 })
    expect(() => parseConfigFile(JSON.stringify({ identityAssertion: { authorize: 'x' } }))).toThrow(/authorize/)
    expect(() =>
      parseConfigFile(JSON.stringify({ identityAssertion: { audiences: [{ ...MCP, scopes: 'tools.read' }] } })),
    ).toThrow(/scopes/)
  })

  it('#45 review item 1: each audience entry names its local client (`client`, required); one entry per (issuer, client), several per issuer', () => {
    const { client: _, ...unbound } = MCP
    expect(() => parseOptions({ issuer: ISSUER, identityAssertion: { audiences: [unbound] } })).toThrow(
      /identityAssertion\.audiences\.0\.client/,
    )
    expect(() => parseOptions({ issuer: ISSUER, identityAssertion: { audiences: [{ ...MCP, client: '' }] } })).toThrow(
      /audiences\.0\.client/,
    )
    expect(() =>
      parseOptions({ issuer: ISSUER, identityAssertion: { audiences: [MCP, { ...MCP, clientId: 'c2' }] } }),
    ).toThrow(/each \(issuer, client\) pair may appear once/)
    const shared = [MCP, { ...MCP, client: 'other-app', clientId: 'c2' }]
    expect(
      parseOptions({ issuer: ISSUER, identityAssertion: { audiences: shared } }).identityAssertion.audiences,
    ).toEqual(shared)
    expect(parseConfigFile(JSON.stringify({ identityAssertion: { audiences: shared } })).identityAssertion).toEqual({
      audiences: shared,
      lifetime: 300,
    })
    expect(() => parseConfigFile(JSON.stringify({ identityAssertion: { audiences: [unbound] } }))).toThrow(/client/)
  })
})
