/**
 * @module resource_server
 * The other side of the wire: an API that accepts Gatehouse's access tokens. Reads the token from
 * the Authorization header (RFC 6750 §2.1 `Bearer`, RFC 9449 §7.1 `DPoP`), verifies it as an
 * RFC 9068 JWT access token against the issuer's published keys, checks scopes, and answers
 * failures as RFC 6750 §3 errors.
 *
 * DPoP (RFC 9449): a token whose claims carry `cnf.jkt` is bound to that key. It is accepted only
 * with the `DPoP` scheme and a `DPoP` proof signed by that key for this request (`htm`, `htu`,
 * `ath`, a fresh `iat`, a `jti` never seen before), never as a bearer token (§7.2). `dpop.required`
 * refuses bearer tokens altogether.
 *
 * Keys come from the issuer's `jwks_uri` (OpenID Connect Discovery, or given) through jose's
 * `createRemoteJWKSet`: cached, and fetched again when a token names an unknown `kid` (rotation)
 * once the cooldown since the last fetch has passed.
 *
 * Revocation: a JWT is verified locally, so by itself this helper cannot know that a token was
 * revoked (at the revocation endpoint, by refresh-token reuse, by logout) before it expires. With
 * the `introspection` option it also asks the authorization server (RFC 7662) and refuses a token
 * that is no longer active, reusing each answer for `cacheTtl` seconds (default 5).
 *
 * Discovery by clients (RFC 9728): with the `resource` option the helper serves the protected
 * resource metadata at `/.well-known/oauth-protected-resource` + the resource's path, names it in
 * every challenge (`resource_metadata`), and requires the resource in the token's `aud`. This is
 * how MCP clients find the authorization server of an MCP server.
 */
import { IssuerUnavailableError, createIssuerAccess } from './issuer.ts'
import { type ProtectedResourceMetadata, createMetadataEndpoints } from './metadata.ts'
import { type ResourceServerOptions, parseResourceServerOptions } from './options.ts'
import { protect } from './protect.ts'
import {
  type LogoutTokenClaims,
  type VerifyLogoutTokenOptions,
  InvalidLogoutTokenError,
  createLogoutTokenVerifier,
} from './logout.ts'
import { type AuthenticatedRequest, type VerifyOptions, type VerifyResult, createVerifier } from './verify.ts'

export type { IntrospectionOptions } from './introspection.ts'
export type { BearerErrorCode, DpopErrorCode } from './bearer.ts'
export type { ProtectedResourceMetadata } from './metadata.ts'
export type {
  DpopNonceOptions,
  DpopOptions,
  FetchFunction,
  ResourceServerOptions,
} from './options.ts'
export type { AuthenticatedRequest, RefusedRequest, VerifyOptions, VerifyResult } from './verify.ts'
export type { AccessTokenClaims } from '../tokens/index.ts'
export type { LogoutTokenClaims, VerifyLogoutTokenOptions } from './logout.ts'
export { InvalidLogoutTokenError, IssuerUnavailableError }

/**
 * Creates a verifier for the access tokens of one issuer, for one API.
 *
 * `verify` resolves `{ ok: true, claims, scopes, token }` for a good token and
 * `{ ok: false, error, description, response }` for anything the caller sent wrong: 400
 * `invalid_request` (malformed header, token in the URL), 401 without an error code (no token),
 * 401 `invalid_token` (bad signature, unknown key, wrong `typ`, issuer or audience, expired, a
 * DPoP-bound token sent as Bearer or with a proof by another key), 401 `invalid_dpop_proof` (RFC
 * 9449 §7.1: a missing, malformed or replayed proof, or one for another method, URL or token), 401
 * `use_dpop_nonce` (with `dpop.nonce`), 403 `insufficient_scope`. It rejects with
 * {@link IssuerUnavailableError} only when the issuer's metadata or keys cannot be fetched.
 *
 * @example
 * import { createResourceServer } from 'gatehouse-oidc/resource-server'
 *
 * const api = createResourceServer({ issuer: 'https://id.example.com', audience: 'api1' })
 *
 * export async function GET(request: Request): Promise<Response> {
 *   const auth = await api.verify(request, { scopes: ['api1'] })
 *   if (!auth.ok) return auth.response
 *   return Response.json({ hello: auth.claims.sub, client: auth.claims.client_id })
 * }
 *
 * // or wrap a handler:
 * export const POST = api.protect((request, { claims }) => Response.json({ sub: claims.sub }), {
 *   scopes: ['api1.write'],
 * })
 *
 * @example
 * // An MCP server (RFC 9728): tokens must name the resource in `aud`; one `protect` wrapper
 * // also serves GET /.well-known/oauth-protected-resource/mcp, and its 401s name that URL.
 * const mcp = createResourceServer({
 *   issuer: 'https://id.example.com',
 *   resource: 'https://mcp.example.com/mcp',
 *   requiredScopes: ['mcp:tools'],
 * })
 * export const handler = mcp.protect((request, auth) => handleMcp(request, auth))
 *
 * @example
 * // DPoP-bound tokens only (RFC 9449), the proofs' jtis shared by every instance through a store.
 * const api = createResourceServer({
 *   issuer: 'https://id.example.com',
 *   audience: 'api1',
 *   dpop: { required: true, origin: 'https://api.example.com', replay: (...args) => store.replays.use(...args) },
 * })
 */
export function createResourceServer(options: ResourceServerOptions): ResourceServer {
  const settings = parseResourceServerOptions(options)
  const issuerAccess = createIssuerAccess(settings)
  const verify = createVerifier(settings, issuerAccess)
  const endpoints = createMetadataEndpoints(settings)
  const { resource } = settings
  return {
    issuer: settings.issuer,
    resource: resource?.identifier,
    metadataPath: resource?.metadataPath,
    metadataUrl: resource?.metadataUrl,
    metadata: endpoints.metadata,
    metadataResponse: endpoints.metadataResponse,
    metadataHandler: endpoints.metadataHandler,
    verify,
    verifyLogoutToken: createLogoutTokenVerifier(settings, issuerAccess),
    protect: (handler, protectOptions = {}) => protect(verify, endpoints, handler, protectOptions),
  }
}

/** What {@link createResourceServer} returns. */
export interface ResourceServer {
  /** The issuer, as configured. */
  readonly issuer: string
  /** The `resource` option, as given; `undefined` without it. */
  readonly resource: string | undefined
  /**
   * Where the RFC 9728 metadata is served: `/.well-known/oauth-protected-resource` + the
   * resource's path (`/.well-known/oauth-protected-resource/mcp` for `https://host/mcp`); route
   * GET, HEAD and OPTIONS requests for it to {@link ResourceServer.metadataHandler}. `undefined`
   * without `resource`.
   * @see https://www.rfc-editor.org/rfc/rfc9728#section-3.1
   */
  readonly metadataPath: string | undefined
  /** The absolute metadata URL, as named in `resource_metadata`; `undefined` without `resource`. */
  readonly metadataUrl: string | undefined
  /**
   * The RFC 9728 metadata document: `resource`, `authorization_servers` (the issuer),
   * `scopes_supported`, `bearer_methods_supported`, `resource_name`, `resource_documentation`.
   * Throws a `TypeError` without the `resource` option.
   * @see https://www.rfc-editor.org/rfc/rfc9728#section-2
   */
  metadata(): ProtectedResourceMetadata
  /**
   * The metadata as a 200 JSON response, with `Access-Control-Allow-Origin: *` and
   * `Cache-Control: public, max-age=300`. Throws a `TypeError` without the `resource` option.
   */
  metadataResponse(): Response
  /**
   * Answers requests for {@link ResourceServer.metadataPath}: GET and HEAD with the metadata,
   * OPTIONS as a CORS preflight, other methods 405, other paths 404. `protect` wrappers call it
   * themselves for that path.
   * @see https://www.rfc-editor.org/rfc/rfc9728#section-3.1
   */
  metadataHandler(request: Request): Response
  /**
   * Verifies the access token of a request (`Bearer`, or `DPoP` with its proof) and the scopes it
   * needs; a token given as a string is taken as a bearer token (a DPoP-bound one is refused: there
   * is no proof). See {@link createResourceServer}.
   * @see https://www.rfc-editor.org/rfc/rfc9449#section-7
   */
  verify(input: Request | string, options?: VerifyOptions): Promise<VerifyResult>
  /**
   * For a relying party of this issuer: verifies a back-channel logout token (OpenID Connect
   * Back-Channel Logout 1.0 §2.6) POSTed to its `backchannel_logout_uri` and returns its claims
   * (`sub`, `sid`: end that local session). Rejects with {@link InvalidLogoutTokenError} (answer
   * 400) or `IssuerUnavailableError` (answer 5xx: the issuer retries).
   * @see https://openid.net/specs/openid-connect-backchannel-1_0.html#Validation
   * @example
   * const rp = createResourceServer({ issuer: 'https://id.example.com', audience: 'my-app' })
   * const form = await request.formData()
   * const claims = await rp.verifyLogoutToken(String(form.get('logout_token')), { clientId: 'my-app' })
   * await sessions.endWhere({ sid: claims.sid })
   */
  verifyLogoutToken(token: string, options: VerifyLogoutTokenOptions): Promise<LogoutTokenClaims>
  /**
   * Wraps a handler: it runs only for requests with a good token carrying `scopes`; others get
   * the RFC 6750 error response. With `resource`, a request for {@link ResourceServer.metadataPath}
   * gets the RFC 9728 metadata instead (no token needed), so one wrapper can cover a whole host.
   */
  protect(
    handler: (request: Request, auth: AuthenticatedRequest) => Response | Promise<Response>,
    options?: VerifyOptions,
  ): (request: Request) => Promise<Response>
}
