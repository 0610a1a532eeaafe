/**
 * @module resource_server/metadata
 * RFC 9728 OAuth 2.0 Protected Resource Metadata as the resource-server helper serves it: the
 * document (§2) at `/.well-known/oauth-protected-resource` + the resource's path (§3.1), public
 * (any origin may read it, with a CORS preflight) and cacheable for 5 minutes.
 */
import type { ResourceLocation, ResourceServerSettings } from './options.ts'

/**
 * RFC 9728 §2 OAuth 2.0 Protected Resource Metadata, as served by the helper.
 * @see https://www.rfc-editor.org/rfc/rfc9728#section-2
 */
export type ProtectedResourceMetadata = {
  /** The resource identifier (the `resource` option, as given). */
  resource: string
  /** The issuers whose tokens this resource accepts: the `issuer` option. */
  authorization_servers: string[]
  /** The scopes a client can request for this resource. */
  scopes_supported?: string[]
  /** How the token may be sent: `header` only (RFC 6750 §2.1). */
  bearer_methods_supported: string[]
  /** The DPoP proof algorithms accepted (RFC 9449 §7.1 `algs`): the helper takes DPoP-bound tokens. */
  dpop_signing_alg_values_supported: string[]
  /** `true` with `dpop.required`: only DPoP-bound access tokens are accepted (omitted otherwise). */
  dpop_bound_access_tokens_required?: boolean
  /** A human-readable name of the resource. */
  resource_name?: string
  /** Human-readable documentation for developers. */
  resource_documentation?: string
}

/** The pathname of a request URL, relative ones included (some frameworks). */
export function pathnameOf(requestUrl: string): string {
  try {
    return new URL(requestUrl, 'http://localhost').pathname
  } catch {
    return ''
  }
}

/** Paths compared without a trailing slash (clients strip it before inserting the well-known suffix). */
export function samePath(a: string, b: string): boolean {
  const trim = (path: string) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)
  return trim(a) === trim(b)
}

/** Headers of the public metadata document: any origin may read it, caches may keep it 5 minutes. */
function metadataHeaders(extra: Record<string, string>): Headers {
  return new Headers({
    'access-control-allow-origin': '*',
    'cache-control': 'public, max-age=300',
    ...extra,
  })
}

/** The metadata document and its responses; each throws a TypeError without the `resource` option. */
export interface MetadataEndpoints {
  metadata(): ProtectedResourceMetadata
  metadataResponse(): Response
  metadataHandler(request: Request): Response
  /** Whether a request is for the metadata path (false without `resource`): `protect` serves it without a token. */
  isMetadataRequest(request: Request): boolean
}

export function createMetadataEndpoints(settings: ResourceServerSettings): MetadataEndpoints {
  const { resource, issuer, scopesSupported, resourceName, resourceDocumentation, dpop } = settings

  function requireResource(): ResourceLocation {
    if (resource === undefined) throw new TypeError('resource: required for protected resource metadata (RFC 9728)')
    return resource
  }

  function metadata(): ProtectedResourceMetadata {
    const { identifier } = requireResource()
    return {
      resource: identifier,
      authorization_servers: [issuer],
      ...(scopesSupported.length > 0 ? { scopes_supported: [...scopesSupported] } : {}),
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: [...dpop.algorithms],
      ...(dpop.required ? { dpop_bound_access_tokens_required: true } : {}),
      ...(resourceName !== undefined ? { resource_name: resourceName } : {}),
      ...(resourceDocumentation !== undefined ? { resource_documentation: resourceDocumentation } : {}),
    }
  }

  function metadataResponse(): Response {
    return new Response(JSON.stringify(metadata()), {
      status: 200,
      headers: metadataHeaders({ 'content-type': 'application/json' }),
    })
  }

  function metadataHandler(request: Request): Response {
    const { metadataPath } = requireResource()
    if (!samePath(pathnameOf(request.url), metadataPath)) {
      return new Response(null, { status: 404, headers: metadataHeaders({ 'cache-control': 'no-store' }) })
    }
    if (request.method === 'GET') return metadataResponse()
    if (request.method === 'HEAD') {
      return new Response(null, { status: 200, headers: metadataHeaders({ 'content-type': 'application/json' }) })
    }
    if (request.method === 'OPTIONS') return preflight(request)
    return new Response(null, { status: 405, headers: metadataHeaders({ allow: 'GET, HEAD, OPTIONS' }) })
  }

  return {
    metadata,
    metadataResponse,
    metadataHandler,
    isMetadataRequest: (request) => resource !== undefined && samePath(pathnameOf(request.url), resource.metadataPath),
  }
}

/** CORS preflight: MCP clients in browsers send `MCP-Protocol-Version`. */
function preflight(request: Request): Response {
  const headers = metadataHeaders({ 'access-control-allow-methods': 'GET, HEAD, OPTIONS' })
  const requested = request.headers.get('access-control-request-headers')
  if (requested !== null && /^[\w-]+(?:\s*,\s*[\w-]+)*$/.test(requested.trim())) {
    headers.set('access-control-allow-headers', requested.trim())
  }
  headers.set('access-control-max-age', '86400')
  return new Response(null, { status: 204, headers })
}
