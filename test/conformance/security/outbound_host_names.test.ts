/**
 * #39 item 5: server-side requests to host names a self-registered client chose (its
 * `backchannel_logout_uri`, its `jwks_uri`, a Client ID Metadata Document URL) must not reach a
 * private address, by default, on Node. The origin is an https server on 127.0.0.1 that counts the
 * TCP connections it accepts. The names are made up; what the runtime's own `fetch` would resolve
 * them to is emulated by stubbing the global fetch with one that resolves through `systemDns` (the
 * machine's resolver: `tool.example.test` is 127.0.0.1) and connects wherever that says.
 * - the default service (no `outboundFetch`) refuses such host names: no connection at all
 * - `resolveHost` alone (check, then a fetch that resolves again) is no longer enough: a rebinding
 *   name (public first, 127.0.0.1 next) is refused without a connection
 * - with `outboundFetch` (adapters/node_outbound.ts) the name is resolved once and the connection
 *   goes to the checked address; with a test-only allowance for loopback the three fetches work
 */
import type { JWK } from 'jose'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { type ResolvedAddress, nodeOutboundFetch } from '../../../adapters/node_outbound.ts'
import type { OutboundFetch, TokenServiceOptions } from '../../../src/index.ts'
import type { Page } from '../../helpers/browser.ts'
import { type CountingOrigin, countingOrigin } from '../../helpers/counting_origin.ts'
import { authorizationUrl } from '../../helpers/flow.ts'
import { ISSUER, RU } from '../../helpers/service.ts'
import { type TestCert, selfSignedCert } from '../../helpers/test_cert.ts'
import {
  REVOCATION,
  assertionRequest,
  clientKey,
  errorOf,
  keyService,
  signAssertion,
} from '../client_auth/private_key_jwt_fixtures.ts'
import { type BackchannelCtx, backchannelSetup, rpLogout, signInToBoth, until } from '../oidcc/suite.ts'

const key = await clientKey('ES256', 'k1')
let cert: TestCert
let origin: CountingOrigin
let other: CountingOrigin
/** What the machine's resolver answers for a name (the stubbed global fetch asks it every time). */
let systemDns: (hostname: string) => Promise<ResolvedAddress[]>

const v4 = (...addresses: string[]): ResolvedAddress[] => addresses.map((address) => ({ address, family: 4 }))
const at = (path: string) => `https://tool.example.test:${origin.port}${path}`

beforeAll(async () => {
  cert = selfSignedCert(['tool.example.test', '*.example.test'])
  const handle = (path: string): { type: string; body: string } | undefined => {
    if (path === '/jwks') return { type: 'application/json', body: JSON.stringify({ keys: [key.jwk] as JWK[] }) }
    if (path === '/client.json') {
      return {
        type: 'application/json',
        body: JSON.stringify({ client_id: at('/client.json'), client_name: 'Tool', redirect_uris: [RU] }),
      }
    }
    return undefined
  }
  origin = await countingOrigin({
    key: cert.key,
    cert: cert.cert,
    host: '127.0.0.1',
    handle: (request, response) => {
      request.resume()
      const found = handle(request.url ?? '')
      response.writeHead(200, { 'content-type': found?.type ?? 'text/plain' }).end(found?.body ?? 'ok')
    },
  })
  other = await countingOrigin({
    key: cert.key,
    cert: cert.cert,
    host: '127.0.0.2',
    port: origin.port,
    handle: (request, response) => {
      request.resume()
      response.end('ok')
    },
  })
})
afterAll(async () => {
  await origin?.close()
  await other?.close()
  cert?.remove()
})

beforeEach(() => {
  systemDns = async (hostname) => (hostname === 'tool.example.test' ? v4('127.0.0.1') : [])
  // The runtime's own fetch: it resolves the name itself (systemDns) and connects there. Other
  // names (the host clients' receivers) answer 200 without a connection.
  const resolving = nodeOutboundFetch({ resolve: (hostname) => systemDns(hostname), ca: cert.cert })
  vi.stubGlobal('fetch', async (url: string, init: RequestInit = {}) =>
    new URL(url).hostname === 'tool.example.test' ? resolving(url, init, () => true) : new Response(null),
  )
})
afterEach(() => vi.unstubAllGlobals())

/** Registers a self-registered client with a back-channel URI on `uri`, signs in to it and logs out. */
async function logoutWithSelfRegistered(options: Partial<TokenServiceOptions>): Promise<BackchannelCtx> {
  const ctx = await backchannelSetup({
    dynamicClientRegistration: { scopes: ['openid'] },
    // No `fetch` of the host's: the service's own way out.
    backchannelLogout: { retryDelays: [], timeout: 1 },
    ...options,
  })
  const registered = await ctx.service.fetch(
    new Request(`${ISSUER}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['https://rp.example.test/tool-cb'],
        token_endpoint_auth_method: 'none',
        backchannel_logout_uri: at('/bcl'),
      }),
    }),
    { address: '203.0.113.9' },
  )
  expect(registered.status).toBe(201)
  const { client_id } = await registered.json()
  const { web } = await signInToBoth(ctx)
  const request = await authorizationUrl(ctx.as, {
    clientId: client_id,
    redirectUri: 'https://rp.example.test/tool-cb',
    scope: 'openid',
  })
  const consent = (await ctx.browser.navigate(request.url.href)).page as Page
  expect((await ctx.browser.submit(consent, { decision: 'allow' })).callback?.searchParams.has('code')).toBe(true)
  await rpLogout(ctx, web)
  await until(() => ctx.deliveryEvents().some((event) => event.clientId === client_id), 5000)
  return Object.assign(ctx, { selfClientId: client_id as string })
}

const selfEvent = (ctx: BackchannelCtx) =>
  ctx
    .deliveryEvents()
    .find((event) => (ctx as BackchannelCtx & { selfClientId: string }).selfClientId === event.clientId)

/** A client ID metadata document (through the host's own `fetch`) declaring `jwks_uri` on tool.example.test. */
async function keyedDocumentService(options: Partial<TokenServiceOptions> = {}) {
  const document = 'https://docs.example.test/tool.json'
  const ctx = await keyService([], {
    clientIdMetadataDocuments: {
      scopes: ['openid'],
      fetch: async () =>
        Response.json({
          client_id: document,
          client_name: 'Keyed Tool',
          redirect_uris: [RU],
          token_endpoint_auth_method: 'private_key_jwt',
          jwks_uri: at('/jwks'),
        }),
    },
    ...options,
  })
  const revoke = async () => {
    const assertion = await signAssertion(key, document, ctx.clock.now())
    const response = await ctx.service.fetch(assertionRequest(assertion, { token: 'whatever' }, {}, REVOCATION))
    return { status: response.status, ...(response.status === 200 ? {} : await errorOf(response)) }
  }
  return { ...ctx, revoke }
}

/** The authorization request of a client whose id is a document on tool.example.test. */
async function authorizeDocument(options: Partial<TokenServiceOptions> = {}): Promise<number> {
  const ctx = await keyService([], {
    scopes: ['mcp:tools'],
    clientIdMetadataDocuments: { scopes: ['mcp:tools'] },
    ...options,
  })
  const { url } = await authorizationUrl(
    { issuer: ISSUER, authorization_endpoint: `${ISSUER}/connect/authorize` },
    { clientId: at('/client.json'), scope: 'mcp:tools' },
  )
  const response = await ctx.service.fetch(new Request(url.href, { redirect: 'manual' }))
  await response.body?.cancel()
  return response.status
}

/** The pinning fetch with a test-only allowance for loopback (the origin is on 127.0.0.1). */
function pinnedAllowingLoopback(): OutboundFetch {
  const pinned = nodeOutboundFetch({ resolve: (hostname) => systemDns(hostname), ca: cert.cert })
  return (url, init, allow) => pinned(url, init, (address) => address === '127.0.0.1' || allow(address))
}

describe('#39 item 5 the default service: host names of self-registered clients reach no private address', () => {
  it('#39 item 5 a backchannel_logout_uri on a name that resolves to 127.0.0.1 gets no connection (default createTokenService)', async () => {
    const before = origin.connections
    const ctx = await logoutWithSelfRegistered({})
    expect(selfEvent(ctx)).toMatchObject({ type: 'logout.delivery_failed', reason: 'address_refused', attempts: 1 })
    expect(origin.connections - before).toBe(0)
  })

  it('#39 item 5 a jwks_uri on a name that resolves to 127.0.0.1 gets no connection (default createTokenService)', async () => {
    const before = origin.connections
    const ctx = await keyedDocumentService()
    expect(await ctx.revoke()).toMatchObject({ status: 401, error: 'invalid_client' })
    expect(origin.connections - before).toBe(0)
  })

  it('#39 item 5 a client ID metadata document on a name that resolves to 127.0.0.1 gets no connection (default createTokenService)', async () => {
    const before = origin.connections
    expect(await authorizeDocument()).toBe(400)
    expect(origin.connections - before).toBe(0)
  })

  it('#39 item 5 resolveHost alone (check, then a fetch that resolves again): a rebinding name (public, then 127.0.0.1) gets no connection', async () => {
    let lookups = 0
    const rebinding = async (hostname: string) =>
      hostname === 'tool.example.test' ? v4(lookups++ === 0 ? '93.184.216.34' : '127.0.0.1') : []
    systemDns = rebinding
    const resolveHost = async (hostname: string) => (await rebinding(hostname)).map((entry) => entry.address)
    const before = origin.connections
    const ctx = await logoutWithSelfRegistered({ resolveHost })
    expect(selfEvent(ctx)).toMatchObject({ type: 'logout.delivery_failed', reason: 'address_refused' })
    lookups = 0
    expect(await authorizeDocument({ resolveHost })).toBe(400)
    expect(origin.connections - before).toBe(0)
  })
})

describe('#39 item 5 outboundFetch: resolved once, connected to the checked address', () => {
  it('#39 item 5 a rebinding name (allowed first, 127.0.0.1 next) is resolved once: the POST goes to the checked address, never to 127.0.0.1', async () => {
    // 127.0.0.2 stands for the public first answer (a test-only allowance); 127.0.0.1 is refused.
    let lookups = 0
    systemDns = async (hostname) =>
      hostname === 'tool.example.test' ? v4(lookups++ === 0 ? '127.0.0.2' : '127.0.0.1') : []
    const pinned = nodeOutboundFetch({ resolve: (hostname) => systemDns(hostname), ca: cert.cert })
    const outboundFetch: OutboundFetch = (url, init, allow) =>
      pinned(url, init, (address) => address === '127.0.0.2' || allow(address))
    const before = { loopback: origin.connections, other: other.connections }
    const ctx = await logoutWithSelfRegistered({ outboundFetch })
    expect(selfEvent(ctx)).toMatchObject({ type: 'logout.delivered', status: 200, attempts: 1 })
    expect(lookups).toBe(1)
    expect(origin.connections - before.loopback).toBe(0)
    expect(other.connections - before.other).toBe(1)
  })

  it('#39 item 5 an allowed target still works: back-channel POST, jwks_uri and metadata document through outboundFetch (test-only loopback allowance)', async () => {
    const before = origin.connections
    const requests = origin.requests.length
    const logout = await logoutWithSelfRegistered({ outboundFetch: pinnedAllowingLoopback() })
    expect(selfEvent(logout)).toMatchObject({ type: 'logout.delivered', status: 200, attempts: 1 })
    const keyed = await keyedDocumentService({ outboundFetch: pinnedAllowingLoopback() })
    expect(await keyed.revoke()).toEqual({ status: 200 })
    expect(await authorizeDocument({ outboundFetch: pinnedAllowingLoopback() })).toBe(303)
    expect(origin.requests.slice(requests)).toEqual(['POST /bcl', 'GET /jwks', 'GET /client.json'])
    expect(origin.connections - before).toBe(3)
    // The host name went out as the TLS server name.
    expect(origin.names.at(-1)).toBe('tool.example.test')
  })

  it('#39 item 5 the opt-in allowUnpinnedHostNames restores the check-then-fetch path (resolveHost, then the global fetch)', async () => {
    const before = origin.connections
    systemDns = async (hostname) => (hostname === 'tool.example.test' ? v4('127.0.0.1') : [])
    // The resolver says public; the fetch resolves again to 127.0.0.1: what the opt-in accepts.
    const ctx = await keyedDocumentService({
      allowUnpinnedHostNames: true,
      resolveHost: async () => ['93.184.216.34'],
    })
    expect(await ctx.revoke()).toEqual({ status: 200 })
    expect(origin.connections - before).toBe(1)
  })
})
