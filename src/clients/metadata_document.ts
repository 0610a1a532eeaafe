/**
 * @module clients/metadata_document
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, as the MCP
 * authorization spec uses them): a `client_id` that is an https URL with a path names a JSON
 * document of client metadata (RFC 7591 names) that the service fetches, checks, caches and turns
 * into a PKCE-only, explicit-consent client: public, or authenticating with private_key_jwt.
 *
 * The fetch must not become an SSRF tool. Checks, in order:
 * - the client_id is a canonical https URL with a path, no fragment, no user info (draft §3)
 * - the fetch is within its budgets per throttle window (see Budgets below)
 * - the host is not in a private, loopback, link-local, unique-local or otherwise non-global
 *   range (unless `allowPrivateNetworks`): a literal host is checked as it is; a host name is
 *   resolved once by the runtime's `outboundFetch`, which connects to the checked address (Node,
 *   Bun, Deno), and is refused where there is none, unless the host opts in
 *   (`allowUnpinnedHostNames`, or a `fetch` of its own; src/security/outbound.ts)
 * - the fetch takes at most `timeout` seconds (5), follows no redirect (a 3xx is a failure),
 *   answers 200 with a JSON media type and at most `MAX_DOCUMENT_BYTES` (64 KiB)
 * - the document is a JSON object whose `client_id` equals the URL, with `redirect_uris` (and
 *   `post_logout_redirect_uris`) a self-registered client may use (the registration rule, see
 *   src/clients/metadata_document_schema.ts), an optional `client_name` without control or bidi override characters, `token_endpoint_auth_method` `none` (absent: `none`) or
 *   `private_key_jwt` with an https `jwks_uri` (its keys fetched under the same address rules), no
 *   secret, and no grant but authorization_code and refresh_token
 * Results (failures too, briefly) are cached per the response's Cache-Control, between
 * `MIN_TTL` and `MAX_TTL`. Errors name what failed, never the fetched body.
 *
 * Budgets (src/clients/metadata_document_budget.ts): fetches of documents that resolved before count per
 * host, fetches of other URLs per host and per source address, a failure twice; when a host's
 * budget is spent, a document resolved before is served from its last good copy (stale on throttle).
 *
 * DNS rebinding (#39 item 5): with `outboundFetch` the name is resolved once and the connection
 * goes to the address that was checked. Without it, a host name is refused unless the host opts
 * in; with `allowUnpinnedHostNames` (or a `fetch` of its own) the addresses `resolveHost` gives are
 * checked and the fetch resolves the name again, so a name whose answer changes between the two
 * can still reach a private address: an egress proxy or firewall closes that (the fetch goes out
 * with no credentials and reads no more than 64 KiB either way).
 */
import * as v from 'valibot'
import { type DocumentFetchLimits, createDocumentBudget } from './metadata_document_budget.ts'
import { documentSchema } from './metadata_document_schema.ts'
import { OAuthError } from '../errors.ts'
import { mediaType, readCapped as readStreamCapped } from '../http.ts'
import { fetchPublic, type Limiter, type OutboundFetch } from '../security/index.ts'
import { Permissions, scopePermission } from './permissions.ts'
import { parseDetailTypes } from './detail_types.ts'
import type { ClientRecord } from '../storage/index.ts'

/** Largest document read, bytes (the draft suggests 5 KB is plenty; 64 KiB leaves room for jwks). */
export const MAX_DOCUMENT_BYTES = 65_536
/** Shortest time a fetched document is kept, seconds, whatever its headers say (one authorization flow reads it several times). */
export const MIN_TTL = 60
/** Longest time a fetched document is kept, seconds. */
export const MAX_TTL = 86_400
/** How long a document without caching headers is kept, seconds. */
export const DEFAULT_TTL = 300
/** How long a failed fetch or an invalid document is remembered, seconds (no refetch storm). */
export const FAILURE_TTL = 30
/** Documents (and failures) kept in memory at most. */
const CACHE_MAX = 1000
/** Longest client_id URL, characters. */
const MAX_URL_LENGTH = 1024

/** The fetch the resolver uses (the global one by default). */
export type MetadataFetch = (url: string, init: RequestInit) => Promise<Response>

export interface MetadataDocumentResolverOptions {
  /** Scopes such clients may be granted (the option's `scopes`). */
  scopes: readonly string[]
  /** The service's authorization details types (RFC 9396 §10): a document's list is cut to them. */
  authorizationDetailsTypes?: readonly string[]
  allowPrivateNetworks: boolean
  /** Seconds a fetch (name resolution, response and body) may take. */
  timeout: number
  fetch?: MetadataFetch
  /** The runtime's name resolution: the addresses of a host name (adapters provide it). */
  resolveHost?: (hostname: string) => Promise<string[]>
  /** The runtime's fetch that connects to the address it checked (src/security/outbound.ts). */
  outboundFetch?: OutboundFetch
  /** Host names may be fetched without `outboundFetch` (rebinding stays open). */
  allowUnpinnedHostNames?: boolean
  now: () => number
  /** Counts fetches per document host; absent when throttling is off. */
  limiter?: Limiter
  /** Window of the throttle counters, seconds. */
  window?: number
  /** Fetch budgets per window; default `DOCUMENT_FETCH_LIMITS`. */
  limits?: Partial<DocumentFetchLimits> | undefined
  /** Extra private-use redirect schemes the host allows (the option's `redirectSchemes`, checked). */
  redirectSchemes?: readonly string[] | undefined
}

/**
 * Whether `clientId` is a client identifier URL (draft §3): https, a path other than `/`, no
 * fragment, no user name or password, no dot segments, and in canonical form (what `URL`
 * serialises it as, so that the document's `client_id` compares byte for byte).
 */
export function isClientIdUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://') || clientId.length > MAX_URL_LENGTH || clientId.includes('#')) return false
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return false
  }
  if (url.href !== clientId || url.username !== '' || url.password !== '') return false
  if (url.pathname === '/' || url.pathname === '') return false
  return !url.pathname.split('/').some((segment) => segment === '.' || segment === '..')
}

/** Refuses with `invalid_client`: the client's document cannot be used. */
function refuse(description: string, status = 400, headers?: Record<string, string>): OAuthError {
  return new OAuthError('invalid_client', description, { status, ...(headers ? { headers } : {}) })
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true })
const globalFetch: MetadataFetch = (input, init) => fetch(input, init)
/** The seconds a response may be kept, from Cache-Control (`max-age`, `no-store`, `no-cache`) and Age, clamped. */
export function cacheTtl(headers: Headers): number {
  const directives = (headers.get('cache-control') ?? '').toLowerCase()
  if (/(^|[\s,])(no-store|no-cache)([\s,=]|$)/.test(directives)) return MIN_TTL
  const maxAge = /(^|[\s,])max-age=(?:"?)(\d{1,10})/.exec(directives)?.[2]
  if (maxAge === undefined) return DEFAULT_TTL
  const age = Number(/^\d{1,10}$/.exec(headers.get('age')?.trim() ?? '')?.[0] ?? 0)
  return Math.min(MAX_TTL, Math.max(MIN_TTL, Number(maxAge) - age))
}

/** Reads at most `max` bytes of a body; undefined when it is longer. */
async function readCapped(response: Response, max: number): Promise<Uint8Array | undefined> {
  const declared = response.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > max) {
    await response.body?.cancel().catch(() => {})
    return undefined
  }
  return readStreamCapped(response.body, max)
}

/** Resolves client identifier URLs to clients (see the module comment). */
export interface MetadataDocumentResolver {
  /**
   * The client the document at `clientId` describes; throws `invalid_client` when it cannot be
   * used. `address` is the request's source address (for the per-address budget).
   */
  resolve(clientId: string, address?: string): Promise<ClientRecord>
}

/** Creates the resolver with its cache. */
export function createMetadataDocumentResolver(options: MetadataDocumentResolverOptions): MetadataDocumentResolver {
  const { now } = options
  const cache = new Map<string, { value: ClientRecord | OAuthError; until: number }>()
  const pending = new Map<string, Promise<ClientRecord>>()
  const allowed = new Set(options.scopes)
  const schema = documentSchema(new Set(options.redirectSchemes ?? []))

  function remember(clientId: string, value: ClientRecord | OAuthError, ttl: number): void {
    cache.delete(clientId)
    // Oldest first: Map keeps insertion order.
    while (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string)
    cache.set(clientId, { value, until: now() + ttl })
  }

  const budget = createDocumentBudget({ limiter: options.limiter, window: options.window, limits: options.limits, now })

  /** Fetches and checks the document within its budgets (see src/clients/metadata_document_budget.ts). */
  async function load(clientId: string, address: string | undefined): Promise<{ record: ClientRecord; ttl: number }> {
    const admission = await budget.admit(clientId, address)
    if (!admission.go) {
      // Stale on throttle, kept for the shortest cache time: the budget is not asked on every request.
      if (admission.stale) return { record: admission.stale, ttl: MIN_TTL }
      throw refuse('too many client metadata document fetches for this host; retry later', 429, {
        'retry-after': String(Math.max(1, Math.ceil(admission.wait))),
      })
    }
    let loaded: { record: ClientRecord; ttl: number }
    try {
      loaded = await fetchAndCheck(new URL(clientId), clientId)
    } catch (err) {
      await budget.settle(clientId, admission.rules, undefined)
      throw err
    }
    await budget.settle(clientId, admission.rules, loaded.record)
    return loaded
  }

  /** Fetches and checks the document; returns the client and how long to keep it. */
  async function fetchAndCheck(url: URL, clientId: string): Promise<{ record: ClientRecord; ttl: number }> {
    const controller = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    // One deadline for resolution, response and body: a fetch that ignores its signal is cut off too.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort()
        reject(refuse('fetching the client metadata document timed out', 504))
      }, options.timeout * 1000)
    })
    deadline.catch(() => {})
    try {
      let response: Response
      try {
        response = await Promise.race([send(url, clientId, controller.signal), deadline])
      } catch (err) {
        if (err instanceof OAuthError) throw err
        throw refuse('the client metadata document could not be fetched', 502)
      }
      const bytes = await Promise.race([readDocument(response), deadline])
      return { record: toClient(clientId, url, bytes), ttl: cacheTtl(response.headers) }
    } finally {
      clearTimeout(timer)
      controller.abort()
    }
  }

  /** Sends the GET: to public addresses only unless `allowPrivateNetworks` (src/security/outbound.ts). */
  async function send(url: URL, clientId: string, signal: AbortSignal): Promise<Response> {
    const init: RequestInit = {
      method: 'GET',
      // No redirects (draft §6.5): a 3xx is answered as is and fails below.
      redirect: 'manual',
      credentials: 'omit',
      headers: { accept: 'application/json' },
      signal,
    }
    if (options.allowPrivateNetworks) return (options.fetch ?? globalFetch)(clientId, init)
    const sent = await fetchPublic(url, init, options)
    if ('response' in sent) return sent.response
    if (sent.refused === 'unresolved') throw refuse('the client metadata document host could not be resolved', 502)
    if (sent.refused === 'host_name') {
      throw refuse('the client metadata document host is a name, which this runtime cannot check (docs/security.md)')
    }
    throw refuse('the client metadata document is on a private or local address')
  }

  /** The document's bytes, or an error that names the failure (never the body). */
  async function readDocument(response: Response): Promise<Uint8Array> {
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => {})
      // An opaque redirect (browsers) has status 0.
      if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
        throw refuse('the client metadata document URL redirects; redirects are not followed', 502)
      }
      throw refuse(`fetching the client metadata document failed with HTTP ${response.status}`, 502)
    }
    const type = mediaType(response.headers.get('content-type') ?? '')
    if (type !== 'application/json' && !/^application\/[\w.+-]+\+json$/.test(type)) {
      await response.body?.cancel().catch(() => {})
      throw refuse('the client metadata document is not application/json', 502)
    }
    let bytes: Uint8Array | undefined
    try {
      bytes = await readCapped(response, MAX_DOCUMENT_BYTES)
    } catch {
      throw refuse('the client metadata document could not be fetched', 502)
    }
    if (bytes === undefined)
      throw refuse(`the client metadata document is larger than ${MAX_DOCUMENT_BYTES} bytes`, 502)
    return bytes
  }

  /** The client a document describes (throws `invalid_client` naming the failed check, never its content). */
  function toClient(clientId: string, url: URL, bytes: Uint8Array): ClientRecord {
    let json: unknown
    try {
      json = JSON.parse(STRICT_UTF8.decode(bytes))
    } catch {
      // The parser's message quotes the text: it is not passed on.
      throw refuse('the client metadata document is not valid JSON')
    }
    const result = v.safeParse(schema, json)
    if (!result.success) {
      const path = v.getDotPath(result.issues[0] as v.BaseIssue<unknown>)?.split('.')[0]
      throw refuse(
        path === undefined || !/^[a-z_]{1,40}$/.test(path)
          ? 'the client metadata document is not a valid client metadata object'
          : `the client metadata document has an invalid or unsupported ${path}`,
      )
    }
    const doc = result.output
    // Draft §4.1: the document's client_id must equal the URL it was fetched from.
    if (doc.client_id !== clientId) throw refuse('the client metadata document names another client_id')
    const grantTypes = doc.grant_types ?? ['authorization_code']
    if (!grantTypes.includes('authorization_code')) {
      throw refuse('the client metadata document has an invalid or unsupported grant_types')
    }
    const keyed = doc.token_endpoint_auth_method === 'private_key_jwt'
    if (keyed && doc.jwks_uri === undefined) throw refuse('the client metadata document has no jwks_uri')
    const requested = doc.scope === undefined ? undefined : new Set(doc.scope.split(' ').filter(Boolean))
    const scopes = [...allowed].filter((scope) => requested === undefined || requested.has(scope))
    const permissions: string[] = [
      Permissions.Endpoints.Authorization,
      Permissions.Endpoints.Token,
      Permissions.Endpoints.Revocation,
      Permissions.GrantTypes.AuthorizationCode,
      Permissions.ResponseTypes.Code,
      ...(grantTypes.includes('refresh_token') ? [Permissions.GrantTypes.RefreshToken] : []),
      ...(doc.post_logout_redirect_uris ? [Permissions.Endpoints.Logout] : []),
      ...scopes.map(scopePermission),
    ]
    const detailTypes = parseDetailTypes(doc.authorization_details_types, options.authorizationDetailsTypes)
    const at = now()
    return {
      clientId,
      secrets: [],
      displayName: doc.client_name ?? url.host,
      permissions,
      redirectUris: [...new Set(doc.redirect_uris)],
      postLogoutRedirectUris: [...new Set(doc.post_logout_redirect_uris ?? [])],
      // Nobody vetted this client: the end-user always decides (never implicit consent).
      consentType: 'explicit',
      allowPlainPkce: false,
      requirePkce: true,
      lifetimes: {},
      ...(keyed ? { tokenEndpointAuthMethod: 'private_key_jwt' as const, jwksUri: doc.jwks_uri } : {}),
      ...backchannelFields(doc),
      ...(detailTypes ? { authorizationDetailsTypes: detailTypes } : {}),
      registration: {
        kind: 'metadata_document',
        documentUrl: clientId,
        metadata: {
          redirect_uris: [...new Set(doc.redirect_uris)],
          token_endpoint_auth_method: keyed ? 'private_key_jwt' : 'none',
          ...(keyed ? { jwks_uri: doc.jwks_uri } : {}),
          grant_types: [...new Set(grantTypes)],
          response_types: ['code'],
          ...(doc.client_name !== undefined ? { client_name: doc.client_name } : {}),
          scope: scopes.join(' '),
          ...(detailTypes ? { authorization_details_types: detailTypes } : {}),
          ...(doc.backchannel_logout_uri !== undefined
            ? {
                backchannel_logout_uri: doc.backchannel_logout_uri,
                backchannel_logout_session_required: doc.backchannel_logout_session_required === true,
              }
            : {}),
        },
      },
      createdAt: at,
      updatedAt: at,
    }
  }

  return {
    resolve(clientId: string, address?: string): Promise<ClientRecord> {
      const hit = cache.get(clientId)
      if (hit && hit.until > now()) {
        return hit.value instanceof OAuthError ? Promise.reject(hit.value) : Promise.resolve(hit.value)
      }
      const inFlight = pending.get(clientId)
      if (inFlight) return inFlight
      const loading = load(clientId, address).then(
        ({ record, ttl }) => {
          remember(clientId, record, ttl)
          return record
        },
        (err: unknown) => {
          const error =
            err instanceof OAuthError ? err : refuse('the client metadata document could not be fetched', 502)
          // A throttled host is not remembered as failed: its counter says when to try again.
          if (error.status !== 429) remember(clientId, error, FAILURE_TTL)
          throw error
        },
      )
      pending.set(clientId, loading)
      const done = () => pending.delete(clientId)
      loading.then(done, done)
      return loading
    },
  }
}

/** A document's Back-Channel Logout 1.0 members as client record fields. */
function backchannelFields(doc: {
  backchannel_logout_uri?: string | undefined
  backchannel_logout_session_required?: boolean | undefined
}): Pick<ClientRecord, 'backchannelLogoutUri' | 'backchannelLogoutSessionRequired'> {
  if (doc.backchannel_logout_uri === undefined) return {}
  return {
    backchannelLogoutUri: doc.backchannel_logout_uri,
    ...(doc.backchannel_logout_session_required === true ? { backchannelLogoutSessionRequired: true } : {}),
  }
}
