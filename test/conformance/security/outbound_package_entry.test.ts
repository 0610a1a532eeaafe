/**
 * #39 item 5: the package's main entry under the "node" export condition (adapters/node_entry.ts:
 * Node, Bun and Deno) gives a plain `createTokenService` the pinned outbound fetch, so a
 * self-registered client's host name is resolved once and checked instead of refused; a host's own
 * `outboundFetch`, or `allowUnpinnedHostNames: true`, is kept as chosen. The machine's resolver is
 * replaced by a stand-in (`node:dns` `lookup`, which nodeOutboundFetch uses) that answers
 * `tool.example.test` with 127.0.0.1 and records what it was asked. test/package/pack.test.ts
 * checks, on each runtime, that the installed package resolves 'gatehouse-oidc' to this entry.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as entry from '../../../adapters/node_entry.ts'
import * as plain from '../../../src/index.ts'
import type { OutboundFetch, TokenService, TokenServiceOptions } from '../../../src/index.ts'
import { ISSUER } from '../../helpers/service.ts'

const asked = vi.hoisted((): string[] => [])
vi.mock('node:dns', async (original) => {
  const dns = await original<typeof import('node:dns')>()
  type Callback = (err: Error | null, addresses?: { address: string; family: number }[]) => void
  const lookup = (hostname: string, _options: unknown, callback: Callback): void => {
    asked.push(hostname)
    if (hostname === 'tool.example.test') callback(null, [{ address: '127.0.0.1', family: 4 }])
    else callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }))
  }
  return { ...dns, default: { ...dns, lookup }, lookup }
})

// The same declarations: each entry's createTokenService is assignable to the other's.
const typed: typeof plain.createTokenService = entry.createTokenService
const typedBack: typeof entry.createTokenService = plain.createTokenService

const DOCUMENT = 'https://tool.example.test/client.json'

/** Why a pushed request of the client whose id is a document on tool.example.test was refused. */
async function pushDocumentClient(
  create: (options: TokenServiceOptions) => TokenService,
  options: Partial<TokenServiceOptions> = {},
): Promise<string | undefined> {
  const service = create({
    issuer: ISSUER,
    scopes: ['mcp'],
    clientIdMetadataDocuments: { scopes: ['mcp'], timeout: 1 },
    ...options,
  })
  const response = await service.fetch(
    new Request(`${ISSUER}/connect/par`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: DOCUMENT,
        response_type: 'code',
        redirect_uri: 'https://app.example.test/cb',
        scope: 'mcp',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      }),
    }),
  )
  expect(response.status).toBe(401)
  await service.close()
  return ((await response.json()) as { error_description?: string }).error_description
}

beforeEach(() => {
  asked.length = 0
})
afterEach(() => vi.unstubAllGlobals())

describe('#39 item 5 the package entry of Node, Bun and Deno pins outbound fetches by default', () => {
  it('#39 item 5 exports every value src/index.ts does, with the same createTokenService type', () => {
    expect(Object.keys(entry).sort()).toEqual(Object.keys(plain).sort())
    expect(typed).toBe(entry.createTokenService)
    expect(typedBack).not.toBe(typed)
  })

  it('#39 item 5 a plain createTokenService resolves a self-registered host name and refuses its private address', async () => {
    expect(await pushDocumentClient(entry.createTokenService)).toBe(
      'the client metadata document is on a private or local address',
    )
    expect(asked).toEqual(['tool.example.test'])
  })

  it('#39 item 5 (the Web entry, for contrast: the same name is refused unresolved)', async () => {
    expect(await pushDocumentClient(plain.createTokenService)).toBe(
      'the client metadata document host is a name, which this runtime cannot check (docs/security.md)',
    )
    expect(asked).toEqual([])
  })

  it("#39 item 5 the host's own outboundFetch is used as is", async () => {
    const urls: string[] = []
    const own: OutboundFetch = async (url) => {
      urls.push(url)
      throw new Error('offline')
    }
    await pushDocumentClient(entry.createTokenService, { outboundFetch: own })
    expect(urls).toEqual([DOCUMENT])
    expect(asked).toEqual([])
  })

  it('#39 item 5 allowUnpinnedHostNames: true keeps the global fetch (an egress proxy or firewall of the host)', async () => {
    const urls: string[] = []
    vi.stubGlobal('fetch', async (url: string) => {
      urls.push(url)
      throw new Error('offline')
    })
    await pushDocumentClient(entry.createTokenService, { allowUnpinnedHostNames: true })
    expect(urls).toEqual([DOCUMENT])
    expect(asked).toEqual([])
  })

  it('#39 item 5 options that are not an object fail as in src/index.ts', () => {
    const message = (create: (options: TokenServiceOptions) => unknown) => {
      try {
        create(undefined as unknown as TokenServiceOptions)
      } catch (err) {
        return err instanceof Error ? `${err.name}: ${err.message}` : String(err)
      }
    }
    expect(message(entry.createTokenService)).toBe(message(plain.createTokenService))
    expect(message(plain.createTokenService)).toMatch(/^TypeError: /)
  })
})
