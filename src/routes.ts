/**
 * @module routes
 * The route table: every endpoint as data (its paths, methods, handler, CORS class, whether it is
 * a browser page or an API, its metrics label, when it is mounted). `createHandler` (handler.ts)
 * compiles it once per service into one Map from the whole request path to its route.
 */
import type { Config } from './config/index.ts'
import { PATHS, type Context } from './context.ts'
import { type CorsRoute, appendVary } from './cors.ts'
import {
  createRegistration,
  handleAuthorize,
  handleBackchannelAuthentication,
  handleCibaApproval,
  handleDeviceAuthorization,
  handleDiscovery,
  handleGrantManagement,
  handleGrantsPage,
  handleInteraction,
  handleIntrospection,
  handleJwks,
  handleLogout,
  handlePushedAuthorizationRequest,
  handleRevocation,
  handleToken,
  handleUserinfo,
  handleVerification,
  metadata,
} from './endpoints/index.ts'
import { createProbes } from './ops/index.ts'
import type { EndpointName } from './events/index.ts'

export type Handle = (request: Request) => Promise<Response> | Response

/** A part built once per handler and shared by routes (registration and its management URIs, the probes). */
export type Shared = <T>(make: (ctx: Context) => T) => T

/**
 * How a route answers CORS (see cors.ts): `document` is the discovery documents' and the JWKS's,
 * open to every origin when clients register themselves; `registration` is open to every origin;
 * the others answer the registered clients' origins only. A route without a class answers none.
 */
export type CorsClass = 'document' | 'token' | 'userinfo' | 'par' | 'revocation' | 'registration'

export interface RouteEntry {
  /**
   * Paths below the issuer (`at: 'issuer'`, the default) or of the host (`at: 'host'`); with
   * `at: 'prefix'`, every path below the issuer's path + this one. A function reads it from the
   * configuration (undefined: not mounted).
   */
  paths: readonly string[] | ((config: Config) => readonly (string | undefined)[])
  at?: 'issuer' | 'host' | 'prefix'
  /**
   * RFC 8414 §3.1: for an issuer with a path, also served with the well-known suffix inserted before
   * the issuer's path (MCP clients try that location for the OpenID document too).
   */
  inserted?: boolean
  /** The `endpoint` label of the metrics (probes are not measured). */
  name: EndpointName
  /** `browser`: errors are HTML pages; `api`: JSON errors; `probe`: a health probe, before routing. */
  kind: 'browser' | 'api' | 'probe'
  cors?: CorsClass
  /** The methods, in the order `Allow` lists them; HEAD is answered as GET. */
  methods: readonly string[]
  /** Builds the route's handler, once, when the handler is created. */
  handler: (ctx: Context, shared: Shared) => Handle
  /** Whether the route is mounted (default: always). */
  when?: (config: Config) => boolean
}

/** CORS of the endpoints: what a browser app may send (header names spelled out, never `*`). */
const CORS = {
  document: { methods: 'GET, HEAD', headers: 'accept' },
  // DPoP (RFC 9449): browser apps send proofs in a DPoP header and read DPoP-Nonce (EXPOSE_HEADERS).
  token: { methods: 'POST', headers: 'authorization, content-type, dpop' },
  userinfo: { methods: 'GET, POST', headers: 'authorization, content-type, dpop' },
  par: { methods: 'POST', headers: 'authorization, content-type, dpop' },
  revocation: { methods: 'POST', headers: 'authorization, content-type' },
  // MCP clients send MCP-Protocol-Version with discovery and registration requests.
  publicDocument: { methods: 'GET, HEAD', headers: 'accept, mcp-protocol-version' },
  registration: { methods: 'POST', headers: 'authorization, content-type, accept, mcp-protocol-version' },
} as const satisfies Record<string, CorsRoute>

/**
 * The CORS of a class: what a preflight allows, and whether every origin may call (public documents
 * and open registration, when clients register themselves: their origins are not known before they
 * come; never with credentials).
 */
export function corsOf(cors: CorsClass, config: Config): { cors: CorsRoute; anyOrigin: boolean } {
  if (cors === 'registration') return { cors: CORS.registration, anyOrigin: true }
  if (cors !== 'document') return { cors: CORS[cors], anyOrigin: false }
  // With self-registration on, a browser client (MCP Inspector, a web agent) reads discovery and the
  // JWKS before any of its origins is registered: those public documents then answer every origin.
  const open = Boolean(config.dynamicClientRegistration || config.clientIdMetadataDocuments)
  return open ? { cors: CORS.publicDocument, anyOrigin: true } : { cors: CORS.document, anyOrigin: false }
}

/** Publicly cacheable documents differ by Origin once CORS is answered: shared caches must key on it. */
function varyOrigin(response: Response): Response {
  appendVary(response.headers)
  return response
}

const registered = (config: Config): boolean => Boolean(config.dynamicClientRegistration)

/** Every endpoint of the service. */
export const ROUTES: readonly RouteEntry[] = [
  {
    paths: [PATHS.openidConfiguration, PATHS.oauthMetadata],
    inserted: true,
    name: 'discovery',
    kind: 'api',
    cors: 'document',
    methods: ['GET'],
    handler: (ctx) => {
      const document = JSON.stringify(metadata(ctx))
      return () => varyOrigin(handleDiscovery(document))
    },
  },
  {
    paths: [PATHS.jwks],
    name: 'jwks',
    kind: 'api',
    cors: 'document',
    methods: ['GET'],
    handler: (ctx) => async () => varyOrigin(await handleJwks(ctx)),
  },
  {
    paths: [PATHS.token],
    name: 'token',
    kind: 'api',
    cors: 'token',
    methods: ['POST'],
    handler: (ctx) => (r) => handleToken(r, ctx),
  },
  {
    paths: [PATHS.deviceAuthorization],
    name: 'device_authorization',
    kind: 'api',
    cors: 'token',
    methods: ['POST'],
    handler: (ctx) => (r) => handleDeviceAuthorization(r, ctx),
  },
  {
    paths: [PATHS.backchannelAuthentication],
    name: 'backchannel_authentication',
    kind: 'api',
    methods: ['POST'],
    handler: (ctx) => (r) => handleBackchannelAuthentication(r, ctx),
  },
  {
    paths: [PATHS.par],
    name: 'par',
    kind: 'api',
    cors: 'par',
    methods: ['POST'],
    handler: (ctx) => (r) => handlePushedAuthorizationRequest(r, ctx),
  },
  // For resource servers, which are not browsers: no CORS.
  {
    paths: [PATHS.introspection],
    name: 'introspection',
    kind: 'api',
    methods: ['POST'],
    handler: (ctx) => (r) => handleIntrospection(r, ctx),
  },
  {
    paths: [PATHS.revocation],
    name: 'revocation',
    kind: 'api',
    cors: 'revocation',
    methods: ['POST'],
    handler: (ctx) => (r) => handleRevocation(r, ctx),
  },
  {
    paths: [PATHS.userinfo],
    name: 'userinfo',
    kind: 'api',
    cors: 'userinfo',
    methods: ['GET', 'POST'],
    handler: (ctx) => (r) => handleUserinfo(r, ctx),
  },
  // Grant Management for OAuth 2.0 §6: {grant_management_endpoint}/{grant_id}, for confidential
  // clients (servers, not browsers): no CORS. The endpoint itself names no grant (a 404 once the
  // caller is authenticated: the API lists no grants, §6).
  {
    paths: [PATHS.grantManagement],
    name: 'grant_management',
    kind: 'api',
    methods: ['GET', 'DELETE'],
    handler: (ctx) => (r) => handleGrantManagement(r, ctx),
  },
  {
    paths: [`${PATHS.grantManagement}/`],
    at: 'prefix',
    name: 'grant_management',
    kind: 'api',
    methods: ['GET', 'DELETE'],
    handler: (ctx) => (r) => handleGrantManagement(r, ctx),
  },
  {
    paths: [PATHS.authorization],
    name: 'authorization',
    kind: 'browser',
    methods: ['GET', 'POST'],
    handler: (ctx) => (r) => handleAuthorize(r, ctx),
  },
  {
    paths: [PATHS.interaction],
    name: 'interaction',
    kind: 'browser',
    methods: ['GET', 'POST'],
    handler: (ctx) => (r) => handleInteraction(r, ctx),
  },
  {
    paths: [PATHS.verification],
    name: 'verification',
    kind: 'browser',
    methods: ['GET', 'POST'],
    handler: (ctx) => (r) => handleVerification(r, ctx),
  },
  {
    paths: [PATHS.cibaApproval],
    name: 'ciba_approval',
    kind: 'browser',
    methods: ['GET', 'POST'],
    handler: (ctx) => (r) => handleCibaApproval(r, ctx),
  },
  {
    paths: [PATHS.logout],
    name: 'logout',
    kind: 'browser',
    methods: ['GET', 'POST'],
    handler: (ctx) => (r) => handleLogout(r, ctx),
  },
  // The end-user's grants page (#42 item 3), at the `grantsPage` path when configured.
  {
    paths: (config) => [config.grantsPage?.path],
    name: 'grants_page',
    kind: 'browser',
    methods: ['GET', 'POST'],
    handler: (ctx) => (r) => handleGrantsPage(r, ctx),
  },
  // Dynamic client registration (RFC 7591) and its management URIs (RFC 7592), when configured.
  {
    paths: [PATHS.registration],
    name: 'registration',
    kind: 'api',
    cors: 'registration',
    methods: ['POST'],
    handler: (_ctx, shared) => shared(createRegistration).register,
    when: registered,
  },
  {
    paths: [`${PATHS.registration}/`],
    at: 'prefix',
    name: 'registration',
    kind: 'api',
    methods: ['GET', 'PUT', 'DELETE'],
    handler: (_ctx, shared) => shared(createRegistration).manage,
    when: registered,
  },
  // Probes answer at paths of the host, before routing (and outside the request metrics).
  {
    paths: (config) => [config.health?.livenessPath],
    at: 'host',
    name: 'unknown',
    kind: 'probe',
    methods: ['GET'],
    handler: (_ctx, shared) => shared(createProbes).liveness,
  },
  {
    paths: (config) => [config.health?.readinessPath],
    at: 'host',
    name: 'unknown',
    kind: 'probe',
    methods: ['GET'],
    handler: (_ctx, shared) => shared(createProbes).readiness,
  },
]
