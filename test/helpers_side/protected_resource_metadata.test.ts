/**
 * The resource-server helper as an RFC 9728 protected resource: its metadata document and where it
 * lives, `resource_metadata` in its RFC 6750 challenges, the `aud` check against `resource`, and
 * the MCP TypeScript SDK's own discovery functions reading what it serves.
 */
import {
  discoverOAuthProtectedResourceMetadata,
  discoverOAuthServerInfo,
  extractResourceMetadataUrl,
  extractWWWAuthenticateParams,
  selectResourceURL,
} from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ResourceServer,
  type ResourceServerOptions,
  type VerifyResult,
  createResourceServer,
} from '../../src/resource_server/index.ts'
import { type Gatehouse, startGatehouse } from './gatehouse.ts'

const ISSUER = 'https://id.example.test'
const MCP = 'https://mcp.example.test/mcp'
const MCP_METADATA = 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp'

/** RFC 9110 §11.6.1 challenge: `Bearer` and comma-separated quoted params. */
const CHALLENGE = /^Bearer [a-z_]+="[\x20\x21\x23-\x5b\x5d-\x7e]*"(?:, [a-z_]+="[\x20\x21\x23-\x5b\x5d-\x7e]*")*$/

/** The default DPoP proof algorithms, as the helper advertises them. */
const ALGS = 'ES256 EdDSA Ed25519 RS256 PS256 ES384'
/** RFC 9449 §7.2: after the Bearer challenge, the DPoP one says which proof algs are accepted. */
const DPOP = `, DPoP algs="${ALGS}"`

/** The auth-param names of the Bearer challenge (the DPoP one after it stripped), and their values. */
function params(header: string | null): Record<string, string> {
  expect(header?.endsWith(DPOP)).toBe(true)
  const challenge = (header ?? '').slice(0, -DPOP.length)
  expect(challenge).toMatch(CHALLENGE)
  return Object.fromEntries([...challenge.matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
}

function refused(result: VerifyResult): Response {
  expect(result.ok).toBe(false)
  if (result.ok) throw new Error('accepted')
  return result.response
}

function bearer(token: string, url = MCP): Request {
  return new Request(url, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
}

/** A fetch for the MCP SDK that routes the MCP host to `serve` and everything else to the network. */
function routed(serve: (request: Request) => Promise<Response> | Response) {
  const seen: string[] = []
  const fetchFn = async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const href = String(url)
    seen.push(href)
    if (new URL(href).host === 'mcp.example.test' || new URL(href).host === 'root.example.test') {
      return serve(new Request(href, init))
    }
    return fetch(href, init)
  }
  return { fetchFn, seen }
}

describe('RFC 9728 metadata document and its location', () => {
  const api = createResourceServer({
    issuer: ISSUER,
    resource: MCP,
    requiredScopes: ['mcp'],
    scopesSupported: ['mcp', 'mcp.admin'],
    resourceName: 'Example MCP server',
    resourceDocumentation: 'https://docs.example.test/mcp',
  })

  it('a resource with a path: the well-known suffix goes between host and path', async () => {
    expect(api.resource).toBe(MCP)
    expect(api.metadataPath).toBe('/.well-known/oauth-protected-resource/mcp')
    expect(api.metadataUrl).toBe(MCP_METADATA)
    const expected = {
      resource: MCP,
      authorization_servers: [ISSUER],
      scopes_supported: ['mcp', 'mcp.admin'],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: ALGS.split(' '),
      resource_name: 'Example MCP server',
      resource_documentation: 'https://docs.example.test/mcp',
    }
    expect(api.metadata()).toEqual(expected)

    for (const response of [api.metadataResponse(), api.metadataHandler(new Request(MCP_METADATA))]) {
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('application/json')
      expect(response.headers.get('access-control-allow-origin')).toBe('*')
      expect(response.headers.get('cache-control')).toBe('public, max-age=300')
      expect(await response.json()).toEqual(expected)
    }
    // a trailing slash (clients strip it, RFC 9728 keeps it) matches too
    expect(api.metadataHandler(new Request(`${MCP_METADATA}/`)).status).toBe(200)

    const head = api.metadataHandler(new Request(MCP_METADATA, { method: 'HEAD' }))
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    // CORS preflight, as a browser MCP client sends it (MCP-Protocol-Version is a custom header)
    const preflight = api.metadataHandler(
      new Request(MCP_METADATA, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example.test',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'mcp-protocol-version',
        },
      }),
    )
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*')
    expect(preflight.headers.get('access-control-allow-methods')).toContain('GET')
    expect(preflight.headers.get('access-control-allow-headers')).toBe('mcp-protocol-version')
    expect(api.metadataHandler(new Request(MCP_METADATA, { method: 'POST' })).status).toBe(405)
    // not at the root: that would describe https://mcp.example.test, another resource (RFC 9728 §3.3)
    expect(
      api.metadataHandler(new Request('https://mcp.example.test/.well-known/oauth-protected-resource')).status,
    ).toBe(404)
    expect(api.metadataHandler(new Request('https://mcp.example.test/mcp')).status).toBe(404)
  })

  it('a resource without a path: the metadata is at the root well-known URL, resource byte for byte', async () => {
    for (const resource of ['https://mcp.example.test', 'https://mcp.example.test/']) {
      const root = createResourceServer({ issuer: ISSUER, resource })
      expect(root.metadataPath).toBe('/.well-known/oauth-protected-resource')
      expect(root.metadataUrl).toBe('https://mcp.example.test/.well-known/oauth-protected-resource')
      const response = root.metadataHandler(
        new Request('https://mcp.example.test/.well-known/oauth-protected-resource'),
      )
      expect(response.status).toBe(200)
      // no scopes required or given: no scopes_supported; the identifier exactly as configured
      expect(await response.json()).toEqual({
        resource,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ['header'],
        dpop_signing_alg_values_supported: ALGS.split(' '),
      })
    }
  })

  it('scopes_supported defaults to requiredScopes; a query stays at the end of the metadata URL', () => {
    const api2 = createResourceServer({
      issuer: ISSUER,
      resource: 'https://mcp.example.test/t/a?x=1',
      requiredScopes: ['a'],
    })
    expect(api2.metadata().scopes_supported).toEqual(['a'])
    expect(api2.metadataPath).toBe('/.well-known/oauth-protected-resource/t/a')
    expect(api2.metadataUrl).toBe('https://mcp.example.test/.well-known/oauth-protected-resource/t/a?x=1')
  })

  it('rejects unusable options with a TypeError naming them', () => {
    const bad: Array<[Partial<ResourceServerOptions>, RegExp]> = [
      [{ resource: 'mcp' }, /^resource: must be an absolute URL/],
      [{ resource: 'http://mcp.example.test/mcp' }, /^resource: must be an https: URL/],
      [{ resource: 'https://mcp.example.test/mcp#x' }, /^resource: must not have a fragment/],
      [{ resource: MCP, scopesSupported: ['a b'] }, /^scopesSupported:/],
      [{ resource: MCP, resourceName: '' }, /^resourceName:/],
      [{ resource: MCP, resourceDocumentation: 'docs' }, /^resourceDocumentation:/],
      [{}, /^audience:/],
    ]
    for (const [options, message] of bad) {
      expect(() => createResourceServer({ issuer: ISSUER, ...options })).toThrow(message)
    }
    expect(
      createResourceServer({ issuer: ISSUER, resource: 'http://localhost:3000/mcp', allowInsecureRequests: true })
        .metadataUrl,
    ).toBe('http://localhost:3000/.well-known/oauth-protected-resource/mcp')
  })

  it('without `resource`: no metadata, and the challenges are as before (RFC 9449 §7.2: DPoP after Bearer)', async () => {
    const plain = createResourceServer({ issuer: ISSUER, audience: 'api1', requiredScopes: ['api1'] })
    expect(plain.resource).toBeUndefined()
    expect(plain.metadataPath).toBeUndefined()
    expect(plain.metadataUrl).toBeUndefined()
    expect(() => plain.metadata()).toThrow(TypeError)
    expect(() => plain.metadataResponse()).toThrow(/^resource:/)
    expect(() => plain.metadataHandler(new Request(MCP_METADATA))).toThrow(TypeError)
    expect(refused(await plain.verify(new Request(MCP))).headers.get('www-authenticate')).toBe(
      `Bearer realm="api1"${DPOP}`,
    )
    const invalid = refused(await plain.verify(bearer('not-a-jwt'))).headers.get('www-authenticate')
    expect(invalid).toBe(
      `Bearer realm="api1", error="invalid_token", error_description="the access token is not a JWT"${DPOP}`,
    )
    // protect() does not serve the well-known path without `resource`
    const guarded = plain.protect(() => new Response('data'))
    expect((await guarded(new Request(MCP_METADATA))).status).toBe(401)
  })
})

describe('challenges name the metadata (RFC 9728 §5.1) and the aud check uses the resource', () => {
  let gh: Gatehouse
  let api: ResourceServer
  const claims = (aud: string | string[], scope = 'mcp') => {
    const now = gh.clock.now()
    return { iss: gh.issuer, sub: 'alice', aud, exp: now + 600, iat: now, jti: `j${now}`, client_id: 'c', scope }
  }

  beforeAll(async () => {
    gh = await startGatehouse()
    api = createResourceServer({
      issuer: gh.issuer,
      resource: MCP,
      requiredScopes: ['mcp'],
      allowInsecureRequests: true,
    })
  })
  afterAll(async () => {
    await gh?.close()
  })

  it('401 without a token: realm, resource_metadata and scope, no error (RFC 6750 §3.1)', async () => {
    for (const request of [
      new Request(MCP, { method: 'POST' }),
      new Request(MCP, { method: 'POST', headers: { authorization: 'Basic YTpi' } }),
    ]) {
      const result = await api.verify(request)
      expect(result.ok || result.error).toBeUndefined()
      const response = refused(result)
      expect(response.status).toBe(401)
      const challenge = response.headers.get('www-authenticate')
      expect(challenge).toBe(`Bearer realm="${MCP}", resource_metadata="${MCP_METADATA}", scope="mcp"${DPOP}`)
      expect(params(challenge)).not.toHaveProperty('error')
      expect(params(challenge)).not.toHaveProperty('error_description')
    }
    // a scope a call needs is named as well
    const more = refused(await api.verify(new Request(MCP), { scopes: ['mcp.admin'] }))
    expect(params(more.headers.get('www-authenticate')).scope).toBe('mcp mcp.admin')
    // without required scopes, no scope attribute
    const open = createResourceServer({ issuer: gh.issuer, resource: MCP, allowInsecureRequests: true })
    expect(refused(await open.verify(new Request(MCP))).headers.get('www-authenticate')).toBe(
      `Bearer realm="${MCP}", resource_metadata="${MCP_METADATA}"${DPOP}`,
    )
  })

  it('401 invalid_token and 403 insufficient_scope: error, error_description, scope and resource_metadata', async () => {
    const invalid = refused(await api.verify(bearer('not-a-jwt')))
    expect(invalid.status).toBe(401)
    expect(params(invalid.headers.get('www-authenticate'))).toEqual({
      realm: MCP,
      resource_metadata: MCP_METADATA,
      error: 'invalid_token',
      error_description: 'the access token is not a JWT',
      scope: 'mcp',
    })

    const token = await gh.forge(claims(MCP))
    const insufficient = refused(await api.verify(bearer(token), { scopes: ['mcp.admin'] }))
    expect(insufficient.status).toBe(403)
    expect(params(insufficient.headers.get('www-authenticate'))).toEqual({
      realm: MCP,
      resource_metadata: MCP_METADATA,
      error: 'insufficient_scope',
      error_description: 'the access token lacks the scope mcp.admin',
      scope: 'mcp mcp.admin',
    })
    expect(await insufficient.json()).toEqual({
      error: 'insufficient_scope',
      error_description: 'the access token lacks the scope mcp.admin',
    })
    // 400 invalid_request carries no challenge (RFC 6750 §3.1), as before
    expect(refused(await api.verify(new Request(`${MCP}?access_token=x`))).headers.get('www-authenticate')).toBeNull()
  })

  it('aud must contain the resource: a token for another audience → 401 invalid_token', async () => {
    const ok = await api.verify(bearer(await gh.forge(claims(MCP))))
    expect(ok.ok).toBe(true)
    expect((await api.verify(bearer(await gh.forge(claims([MCP, 'api1']))))).ok).toBe(true)
    for (const aud of [
      'api1',
      'https://mcp.example.test/',
      'https://mcp.example.test/mcp/',
      'https://other.example.test/mcp',
    ]) {
      const result = await api.verify(bearer(await gh.forge(claims(aud))))
      expect(result.ok || result.description, aud).toBe('the access token is not meant for this API')
      const response = refused(result)
      expect(response.status).toBe(401)
      expect(params(response.headers.get('www-authenticate'))).toMatchObject({
        error: 'invalid_token',
        resource_metadata: MCP_METADATA,
      })
    }
    // a real Gatehouse token for the api1 audience is not for the MCP server
    expect((await api.verify(bearer(await gh.token()))).ok).toBe(false)
    // with `audience` as well, aud may name either (a move from a plain audience to the resource URL)
    const both = createResourceServer({
      issuer: gh.issuer,
      audience: 'api1',
      resource: MCP,
      allowInsecureRequests: true,
    })
    expect((await both.verify(bearer(await gh.token()))).ok).toBe(true)
    expect((await both.verify(bearer(await gh.forge(claims(MCP))))).ok).toBe(true)
    expect((await both.verify(bearer(await gh.forge(claims('api2'))))).ok).toBe(false)
    expect(params(refused(await both.verify(new Request(MCP))).headers.get('www-authenticate')).realm).toBe('api1')
  })

  it('protect() serves the metadata without a token and guards everything else', async () => {
    let calls = 0
    const app = api.protect((_request, auth) => {
      calls++
      return Response.json({ sub: auth.claims.sub })
    })
    const metadata = await app(new Request(MCP_METADATA))
    expect(metadata.status).toBe(200)
    expect(metadata.headers.get('access-control-allow-origin')).toBe('*')
    expect(await metadata.json()).toMatchObject({ resource: MCP, authorization_servers: [gh.issuer] })
    expect((await app(new Request(MCP_METADATA, { method: 'OPTIONS' }))).status).toBe(204)
    const anonymous = await app(new Request(MCP, { method: 'POST' }))
    expect(anonymous.status).toBe(401)
    expect(params(anonymous.headers.get('www-authenticate')).resource_metadata).toBe(MCP_METADATA)
    const ok = await app(bearer(await gh.forge(claims(MCP))))
    expect(ok.status).toBe(200)
    expect(calls).toBe(1)
  })

  it('the MCP SDK reads the challenge, discovers the metadata and the authorization server', async () => {
    const app = api.protect(() => new Response('ok'))
    const anonymous = await app(new Request(MCP, { method: 'POST' }))
    expect(extractResourceMetadataUrl(anonymous)?.href).toBe(MCP_METADATA)
    const { resourceMetadataUrl, scope, error } = extractWWWAuthenticateParams(anonymous)
    expect(resourceMetadataUrl?.href).toBe(MCP_METADATA)
    expect(scope).toBe('mcp')
    expect(error).toBeUndefined()
    const invalid = extractWWWAuthenticateParams(await app(bearer('not-a-jwt')))
    expect(invalid).toEqual({ resourceMetadataUrl: new URL(MCP_METADATA), scope: 'mcp', error: 'invalid_token' })

    // path-aware discovery from the server URL alone, and from the URL the challenge named
    const { fetchFn, seen } = routed(app)
    const fromServerUrl = await discoverOAuthProtectedResourceMetadata(MCP, undefined, fetchFn)
    expect(seen).toEqual([MCP_METADATA])
    expect(fromServerUrl).toMatchObject({
      resource: MCP,
      authorization_servers: [gh.issuer],
      scopes_supported: ['mcp'],
    })
    const fromChallenge = await discoverOAuthProtectedResourceMetadata(MCP, { resourceMetadataUrl }, fetchFn)
    expect(fromChallenge).toEqual(fromServerUrl)
    // the SDK checks `resource` against the server URL and sends it verbatim as RFC 8707 `resource`
    const provider = {} as OAuthClientProvider
    expect((await selectResourceURL(MCP, provider, fromServerUrl))?.href).toBe(MCP)

    // the whole discovery: resource metadata, then the authorization server's metadata (Gatehouse)
    const info = await discoverOAuthServerInfo(MCP, { fetchFn })
    expect(info.authorizationServerUrl).toBe(gh.issuer)
    expect(info.resourceMetadata?.resource).toBe(MCP)
    expect(info.authorizationServerMetadata?.issuer).toBe(gh.issuer)
  })

  it('the MCP SDK discovers a resource without a path at the root well-known URL', async () => {
    const root = createResourceServer({
      issuer: gh.issuer,
      resource: 'https://root.example.test',
      allowInsecureRequests: true,
    })
    const { fetchFn, seen } = routed(root.protect(() => new Response('ok')))
    const metadata = await discoverOAuthProtectedResourceMetadata('https://root.example.test', undefined, fetchFn)
    expect(seen).toEqual(['https://root.example.test/.well-known/oauth-protected-resource'])
    expect(metadata.resource).toBe('https://root.example.test')
    expect((await selectResourceURL('https://root.example.test', {} as OAuthClientProvider, metadata))?.origin).toBe(
      'https://root.example.test',
    )
  })
})
