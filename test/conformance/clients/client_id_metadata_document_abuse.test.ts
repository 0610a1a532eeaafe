/**
 * #27 items 2, 5 and 6 for Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document):
 * a document's redirect URIs follow the rule of dynamic registration (https, loopback http, or a
 * private-use scheme in reverse domain name form: RFC 8252 §7), its `client_name` is refused with
 * control or bidi override characters, and junk client ids cannot lock a known document's client
 * out (stale on throttle, a separate budget for unknown URLs, per source address). Documents come
 * from the option's `fetch` (a stub counting calls); the clock is the test's.
 */
import { describe, expect, it } from 'vitest'
import type { TokenServiceOptions } from '../../../src/index.ts'
import { ISSUER, RU, form, makeService } from '../../helpers/service.ts'

const TOOL = 'https://tool.example.test/oauth/client.json'
const JUNK_HOST = 'https://tool.example.test/junk'

type Documents = Record<string, Record<string, unknown>>

function stub(documents: Documents) {
  const calls: string[] = []
  const fetch = async (url: string): Promise<Response> => {
    calls.push(url)
    const document = documents[url]
    if (!document) return new Response('not here', { status: 404, headers: { 'content-type': 'text/plain' } })
    return Response.json(document, { headers: { 'cache-control': 'max-age=60' } })
  }
  return { calls, fetch }
}

function documentFor(url: string, extra: Record<string, unknown> = {}) {
  return { client_id: url, client_name: 'Tool', redirect_uris: [RU], token_endpoint_auth_method: 'none', ...extra }
}

async function service(
  documents: Documents,
  limits: NonNullable<TokenServiceOptions['clientIdMetadataDocuments']>['fetchLimits'] = undefined,
  redirectSchemes?: string[],
) {
  const { calls, fetch } = stub(documents)
  const made = await makeService({
    scopes: ['mcp:tools'],
    clientIdMetadataDocuments: {
      scopes: ['mcp:tools'],
      fetch,
      ...(limits ? { fetchLimits: limits } : {}),
      ...(redirectSchemes ? { redirectSchemes } : {}),
    },
  })
  return { ...made, calls }
}

/** A token request naming the client (no client authentication: the client is public). */
async function tokenRequest(ctx: Awaited<ReturnType<typeof service>>, clientId: string, address: string) {
  const response = await ctx.service.fetch(
    form(`${ISSUER}/connect/token`, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code: 'x'.repeat(43),
      redirect_uri: RU,
      code_verifier: 'v'.repeat(43),
    }),
    { address },
  )
  const body = (await response.json()) as { error: string; error_description?: string }
  return { status: response.status, ...body, retryAfter: response.headers.get('retry-after') }
}

/** The authorization endpoint's answer for the client (an error page when its document is refused). */
async function authorize(ctx: Awaited<ReturnType<typeof service>>, clientId: string, redirectUri = RU) {
  const url = new URL(`${ISSUER}/connect/authorize`)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'mcp:tools',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString()
  const response = await ctx.service.fetch(new Request(url, { redirect: 'manual' }))
  return { status: response.status, html: await response.text(), location: response.headers.get('location') }
}

/** The client resolved: the token endpoint got past the client to the (bogus) code. */
const RESOLVED = { status: 400, error: 'invalid_grant' }

describe('#27 item 2 a metadata document’s redirect URIs follow the self-registration rule', () => {
  it.each([
    'ms-msdt:/id PCWDiagnostic',
    'search-ms:query=x',
    'ms-officecmd:{}',
    'intent://x#Intent;end',
    'intent:x',
    'view-source:https://rp.example.test/',
    'jar:https://rp.example.test/a.jar!/',
    'mailto:someone@rp.example.test',
    'javascript:alert(1)',
    'data:text/html,hi',
    'file:///etc/passwd',
    'blob:https://rp.example.test/1',
    'cursor://callback',
    'http://rp.example.test/cb',
  ])('#27 item 2 a document with redirect URI %j is an unusable document', async (uri) => {
    const ctx = await service({ [TOOL]: documentFor(TOOL, { redirect_uris: [uri] }) })
    const page = await authorize(ctx, TOOL, uri)
    expect(page.status).toBe(400)
    expect(page.location).toBeNull()
    expect(page.html).toContain('the client metadata document has an invalid or unsupported redirect_uris')
    const token = await tokenRequest(ctx, TOOL, '203.0.113.1')
    expect(token).toMatchObject({ status: 401, error: 'invalid_client' })
  })

  it('#27 item 2 the same rule for post_logout_redirect_uris', async () => {
    for (const uri of ['ms-officecmd:x', 'javascript:alert(1)', 'search-ms:q']) {
      const ctx = await service({ [TOOL]: documentFor(TOOL, { post_logout_redirect_uris: [uri] }) })
      expect((await tokenRequest(ctx, TOOL, '203.0.113.1')).error_description).toBe(
        'the client metadata document has an invalid or unsupported post_logout_redirect_uris',
      )
    }
  })

  it('#27 item 2 https, loopback http and reverse-DNS private-use schemes are usable', async () => {
    for (const uri of [
      RU,
      'http://127.0.0.1:33418/cb',
      'http://[::1]:33418/cb',
      'http://localhost:33418/cb',
      'com.example.tool:/oauth/cb',
    ]) {
      const ctx = await service({ [TOOL]: documentFor(TOOL, { redirect_uris: [uri] }) })
      expect(await tokenRequest(ctx, TOOL, '203.0.113.1'), uri).toMatchObject(RESOLVED)
    }
  })
})

describe('#27 item 2 clientIdMetadataDocuments.redirectSchemes: schemes the host trusts', () => {
  const CURSOR = 'cursor://anysphere.cursor-retrieval/oauth/callback'

  it('#27 item 2 with redirectSchemes [cursor] a document with a cursor:// redirect URI is usable', async () => {
    const ctx = await service({ [TOOL]: documentFor(TOOL, { redirect_uris: [CURSOR] }) }, undefined, ['cursor'])
    expect(await tokenRequest(ctx, TOOL, '203.0.113.1')).toMatchObject(RESOLVED)
  })

  it('#27 item 2 with redirectSchemes [cursor] a cursor:// post_logout_redirect_uri is usable too', async () => {
    const ctx = await service(
      { [TOOL]: documentFor(TOOL, { post_logout_redirect_uris: ['cursor://anysphere.cursor-retrieval/signed-out'] }) },
      undefined,
      ['cursor'],
    )
    expect(await tokenRequest(ctx, TOOL, '203.0.113.1')).toMatchObject(RESOLVED)
  })

  it('#27 item 2 without redirectSchemes the same document is unusable', async () => {
    const ctx = await service({ [TOOL]: documentFor(TOOL, { redirect_uris: [CURSOR] }) })
    expect(await tokenRequest(ctx, TOOL, '203.0.113.1')).toMatchObject({
      status: 401,
      error: 'invalid_client',
      error_description: 'the client metadata document has an invalid or unsupported redirect_uris',
    })
  })

  it('#27 item 2 redirectSchemes lets in only the schemes it lists', async () => {
    for (const uri of ['vscode://ext/cb', 'ms-msdt:/id x', 'javascript:alert(1)']) {
      const ctx = await service({ [TOOL]: documentFor(TOOL, { redirect_uris: [uri] }) }, undefined, ['cursor'])
      expect((await tokenRequest(ctx, TOOL, '203.0.113.1')).error, uri).toBe('invalid_client')
    }
  })

  it.each([[['ms-msdt']], [['javascript']], [['cursor', 'search-ms']], [['file']], [['CURSOR']]])(
    '#27 item 2 redirectSchemes %j is refused at construction',
    async (schemes) => {
      await expect(service({}, undefined, schemes)).rejects.toThrow(
        /invalid token service options\nclientIdMetadataDocuments\.redirectSchemes\.\d: /,
      )
    },
  )
})

describe('#27 item 6 a metadata document’s client_name is filtered like a registration’s', () => {
  it.each([
    ['a trailing U+202E', 'Tool\u202e'],
    ['a U+2066 isolate', 'Tool \u2066evil'],
    ['a control character', 'Tool\u0007'],
    ['only spaces', '   '],
  ])('#27 item 6 a client_name with %s makes the document unusable', async (_what, name) => {
    const ctx = await service({ [TOOL]: documentFor(TOOL, { client_name: name }) })
    const page = await authorize(ctx, TOOL)
    expect(page.status).toBe(400)
    expect(page.html).toContain('the client metadata document has an invalid or unsupported client_name')
    expect(page.html).not.toContain('\u202e')
    expect(await tokenRequest(ctx, TOOL, '203.0.113.1')).toMatchObject({ status: 401, error: 'invalid_client' })
  })
})

describe('#27 item 5 junk client ids cannot lock a metadata-document client out', () => {
  it('#27 item 5 junk URLs from many addresses spend their own budget; the known document keeps resolving', async () => {
    const ctx = await service({ [TOOL]: documentFor(TOOL) })
    expect(await tokenRequest(ctx, TOOL, '198.51.100.1')).toMatchObject(RESOLVED)
    // 100 junk client ids on the document's host, from 25 addresses.
    const junk: number[] = []
    for (let i = 0; i < 100; i++) {
      junk.push((await tokenRequest(ctx, `${JUNK_HOST}-${i}.json`, `203.0.113.${i % 25}`)).status)
    }
    expect(junk.filter((status) => status === 429).length).toBeGreaterThan(80)
    // The unknown-URL budget of the host (30, a failure counting two): 15 junk fetches.
    expect(ctx.calls.filter((url) => url !== TOOL)).toHaveLength(15)
    // The document expires from the cache; its refetch is not throttled by the junk.
    ctx.clock.advance(61)
    expect(await tokenRequest(ctx, TOOL, '198.51.100.1')).toMatchObject(RESOLVED)
    expect(ctx.calls.filter((url) => url === TOOL)).toHaveLength(2)
  })

  it('#27 item 5 junk from one address is capped per address (a failure counts two)', async () => {
    const ctx = await service({ [TOOL]: documentFor(TOOL) })
    expect(await tokenRequest(ctx, TOOL, '203.0.113.9')).toMatchObject(RESOLVED)
    ctx.calls.length = 0
    const fromOne: number[] = []
    for (let i = 0; i < 20; i++)
      fromOne.push((await tokenRequest(ctx, `${JUNK_HOST}-a${i}.json`, '203.0.113.9')).status)
    // 20 per address: 10 failed fetches, then 429 with Retry-After.
    expect(ctx.calls).toHaveLength(10)
    expect(fromOne.slice(10).every((status) => status === 429)).toBe(true)
    const refused = await tokenRequest(ctx, `${JUNK_HOST}-a99.json`, '203.0.113.9')
    expect(refused).toMatchObject({ status: 429, error: 'invalid_client' })
    expect(Number(refused.retryAfter)).toBeGreaterThan(0)
    // Another address still gets fetches (until the host's unknown budget is spent), and the
    // known document, refetched for the capped address itself, is unaffected.
    await tokenRequest(ctx, `${JUNK_HOST}-b0.json`, '203.0.113.10')
    expect(ctx.calls).toHaveLength(11)
    ctx.clock.advance(61)
    expect(await tokenRequest(ctx, TOOL, '203.0.113.9')).toMatchObject(RESOLVED)
    expect(ctx.calls.at(-1)).toBe(TOOL)
  })

  it('#27 item 5 junk client ids at the authorization endpoint are capped per address too', async () => {
    const ctx = await service({ [TOOL]: documentFor(TOOL) })
    const fromOne: number[] = []
    for (let i = 0; i < 20; i++) {
      const url = new URL(`${ISSUER}/connect/authorize`)
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: `${JUNK_HOST}-z${i}.json`,
        redirect_uri: RU,
      }).toString()
      fromOne.push((await ctx.service.fetch(new Request(url), { address: '203.0.113.77' })).status)
    }
    // The per-address budget (20, a failure counting two): 10 fetches from this address, then 429 pages.
    expect(ctx.calls).toHaveLength(10)
    expect(fromOne.slice(10).every((status) => status === 429)).toBe(true)
  })

  it('#27 item 5 a known document whose host budget is spent is served from its last good copy (stale on throttle)', async () => {
    const ctx = await service({ [TOOL]: documentFor(TOOL) }, { perHost: 1 })
    expect(await tokenRequest(ctx, TOOL, '198.51.100.1')).toMatchObject(RESOLVED)
    ctx.clock.advance(61)
    // The refetch spends the host's one known-document fetch of this window.
    expect(await tokenRequest(ctx, TOOL, '198.51.100.1')).toMatchObject(RESOLVED)
    expect(ctx.calls).toHaveLength(2)
    for (let i = 0; i < 3; i++) {
      ctx.clock.advance(61)
      expect(await tokenRequest(ctx, TOOL, '198.51.100.1')).toMatchObject(RESOLVED)
    }
    expect(ctx.calls).toHaveLength(2)
    // A new window: fetched again.
    ctx.clock.advance(900)
    expect(await tokenRequest(ctx, TOOL, '198.51.100.1')).toMatchObject(RESOLVED)
    expect(ctx.calls).toHaveLength(3)
  })
})
