/**
 * @module resource_server/protect
 * The resource-server helper as middleware: `protect(handler)` runs the handler only for requests
 * with a good token, answers the others with their RFC 6750 error (503 while the issuer cannot be
 * reached), and serves the RFC 9728 metadata path without a token.
 */
import type { MetadataEndpoints } from './metadata.ts'
import { IssuerUnavailableError } from './issuer.ts'
import { checkScopes } from './options.ts'
import type { AuthenticatedRequest, Verify, VerifyOptions, VerifyResult } from './verify.ts'

/** Wraps `handler` (see `ResourceServer.protect`). */
export function protect(
  verify: Verify,
  endpoints: MetadataEndpoints,
  handler: (request: Request, auth: AuthenticatedRequest) => Response | Promise<Response>,
  protectOptions: VerifyOptions,
): (request: Request) => Promise<Response> {
  checkScopes('scopes', protectOptions.scopes)
  return async (request) => {
    // The metadata is public: a wrapper around the whole host serves it without a token.
    if (endpoints.isMetadataRequest(request)) return endpoints.metadataHandler(request)
    let result: VerifyResult
    try {
      result = await verify(request, protectOptions)
    } catch (err) {
      // The issuer's keys could not be read: the request may be fine, so 503, never a 500.
      if (!(err instanceof IssuerUnavailableError)) throw err
      return Response.json(
        { error: 'temporarily_unavailable', error_description: 'the token cannot be verified right now' },
        { status: 503, headers: { 'cache-control': 'no-store', 'retry-after': '5' } },
      )
    }
    if (!result.ok) return result.response
    const { ok: _, ...auth } = result
    return handler(request, auth)
  }
}
