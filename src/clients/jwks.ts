/**
 * @module clients/jwks
 * The public keys a client signs its `private_key_jwt` assertions with (RFC 7523 §3, OpenID
 * Connect Core §9): its registration's `jwks`, or the JWK set at its `jwks_uri` (RFC 7591 §2).
 *
 * Fetching a URL a client chose must not become an SSRF tool or a way to make us hammer a host.
 * Checks, in order:
 * - a client has `jwks` or `jwks_uri`, not both (RFC 7591 §2: MUST NOT both be present)
 * - the URI is https without user info; plain http only toward this machine, and only for a
 *   client the host registered (its registration is trusted like the rest of its configuration)
 * - for a self-registered client (`registration` present) the host is not a private, loopback,
 *   link-local or otherwise non-global address: a custom `guard`, or by default the rules of
 *   src/security/outbound.ts (a literal host as it is; a host name resolved once by the runtime's
 *   `outboundFetch`, which connects to the checked address, and refused where there is none
 *   unless the host opts in: #39 item 5)
 * - the fetch takes at most `timeoutMs`, follows no redirect (a 3xx fails), answers 200 with a
 *   JSON media type and at most `maxBytes`
 * - the body is a JWK set holding no private or symmetric key material (a set with any is refused
 *   whole: whoever published it leaked a secret); keys not meant for signatures are left out
 * Fetched sets are kept `cacheTtl` seconds per URI. A caller that met an unknown `kid` asks for a
 * refetch (`refresh`), granted at most once per `refetchInterval` seconds per URI (30: a client
 * that adds a key is accepted with it at most 30 s after its last fetch, and a flood of made-up
 * kids costs its host at most one fetch per 30 s per URI); a failed fetch is not retried within
 * that interval either. Errors name what failed, never the fetched body.
 *
 * Fetches for self-registered clients also count against a budget of their host in the throttle
 * limiter (`fetchesPerHost` per window, shared by every instance; a failed fetch counts two), the
 * same budget mechanism as metadata documents: many clients, or many `jwks_uri` paths, on one host
 * cannot make the service hammer it. When it is spent, a set fetched before is used past its
 * cache lifetime (stale on throttle); a client with none gets `invalid_client`. Host-registered
 * clients' URIs are the operator's and are not budgeted.
 */
import type { JWK } from 'jose'
import { OAuthError } from '../errors.ts'
import { mediaType, readCapped } from '../http.ts'
import {
  fetchBudget,
  type FetchBudget,
  fetchPublic,
  isLoopback,
  type Limiter,
  type OutboundFetch,
  type OutboundOptions,
} from '../security/index.ts'

/** Largest JWK set read, bytes. */
export const MAX_JWKS_BYTES = 65_536
/** Fetches of self-registered clients' key sets on one host per throttle window. */
export const JWKS_FETCHES_PER_HOST = 60
/** Members only a private or symmetric JWK has (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true })

/** The fetch the key source uses (the global one by default). */
export type JwksFetch = (url: string, init: RequestInit) => Promise<Response>
/** Throws (an `OAuthError`) unless `url` may be fetched for a self-registered client. */
export type HostGuard = (url: URL) => Promise<void>

/** What the key source reads of a client (a subset of `ClientRecord`). */
export interface ClientKeyOwner {
  clientId: string
  /** RFC 7591 `jwks`: the client's public keys, inline. */
  jwks?: { keys: readonly unknown[] } | undefined
  /** RFC 7591 `jwks_uri`: where the client publishes its public keys. */
  jwksUri?: string | undefined
  /** Present for a self-registered client: its `jwks_uri` host must be public. */
  registration?: unknown
}

export interface ClientKeySourceOptions {
  fetch?: JwksFetch
  /** The clock, epoch seconds. */
  now: () => number
  /** Largest JWK set read, bytes (64 KiB). */
  maxBytes?: number
  /** Milliseconds a fetch (name resolution, response and body) may take (5000). */
  timeoutMs?: number
  /** Seconds a fetched set is kept (300). */
  cacheTtl?: number
  /** Least seconds between two fetches of one URI, whatever callers ask (30). */
  refetchInterval?: number
  /** URIs kept in memory at most (1000; the oldest go first). */
  maxEntries?: number
  /**
   * Refuses hosts of self-registered clients before `fetch`; default: the rules of
   * src/security/outbound.ts (`fetchPublic`) with the three options below.
   */
  guard?: HostGuard
  /** The runtime's name resolution, checked before an unpinned fetch (adapters provide it). */
  resolveHost?: (hostname: string) => Promise<string[]>
  /** The runtime's fetch that connects to the address it checked (adapters provide it). */
  outboundFetch?: OutboundFetch
  /** Host names may be fetched without `outboundFetch` (rebinding stays open). */
  allowUnpinnedHostNames?: boolean
  /** Counts self-registered clients' fetches per host; absent when throttling is off. */
  limiter?: Limiter
  /** Window of the throttle counters, seconds. */
  window?: number
  /** Fetches per host and window for self-registered clients ({@link JWKS_FETCHES_PER_HOST}). */
  fetchesPerHost?: number
}

/** A client's verification keys (see the module comment). */
export interface ClientKeySource {
  /**
   * The client's public signature keys. `refresh` asks for the `jwks_uri` to be fetched again (the
   * assertion names a key the cached set lacks); it is granted once per `refetchInterval`.
   * Throws `invalid_client` naming what failed when there are none to be had.
   */
  keysFor(client: ClientKeyOwner, options?: { refresh?: boolean }): Promise<JWK[]>
}

function refuse(description: string, cause?: unknown): OAuthError {
  return new OAuthError('invalid_client', description, cause === undefined ? undefined : { cause })
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Whether a public JWK may verify signatures: an asymmetric kty, `use` sig, `key_ops` with verify. */
function isSignatureKey(key: Record<string, unknown>): boolean {
  if (key.kty !== 'RSA' && key.kty !== 'EC' && key.kty !== 'OKP') return false
  if (key.use !== undefined && key.use !== 'sig') return false
  if (key.kid !== undefined && typeof key.kid !== 'string') return false
  const ops = key.key_ops
  return ops === undefined || (Array.isArray(ops) && ops.includes('verify'))
}

/** The signature keys of a JWK set; refuses anything but a set of public keys. */
export function publicSignatureKeys(value: unknown): JWK[] {
  if (!isObject(value) || !Array.isArray(value.keys)) throw refuse('the client keys are not a JWK set')
  const keys: JWK[] = []
  for (const key of value.keys) {
    if (!isObject(key) || typeof key.kty !== 'string') throw refuse('the client keys are not a JWK set')
    if (PRIVATE_MEMBERS.some((member) => Object.hasOwn(key, member))) {
      throw refuse('the client keys hold private or symmetric key material')
    }
    if (isSignatureKey(key)) keys.push(key as JWK)
  }
  return keys
}

/** The client's `jwks_uri` as a URL it may be fetched from (https; http to loopback for host clients). */
function jwksUrl(client: ClientKeyOwner, uri: string): URL {
  let url: URL
  try {
    url = new URL(uri)
  } catch (cause) {
    throw refuse('the client jwks_uri is not a URL', cause)
  }
  if (url.username !== '' || url.password !== '') throw refuse('the client jwks_uri has user info')
  if (url.protocol === 'https:') return url
  if (url.protocol === 'http:' && client.registration === undefined && isLoopback(url.hostname)) return url
  throw refuse('the client jwks_uri must use https')
}

/** The JWK set a response carries, or an error naming the failure (never the body). */
async function readJwks(response: Response, maxBytes: number): Promise<JWK[]> {
  const fail = async (description: string): Promise<never> => {
    await response.body?.cancel().catch(() => {})
    throw refuse(description)
  }
  if (response.status !== 200) {
    // An opaque redirect (browsers) has status 0.
    if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
      return fail('the client jwks_uri redirects; redirects are not followed')
    }
    return fail(`fetching the client jwks_uri failed with HTTP ${response.status}`)
  }
  const type = mediaType(response.headers.get('content-type') ?? '')
  if (type !== 'application/json' && !/^application\/[\w.+-]+\+json$/.test(type)) {
    return fail('the client jwks_uri is not application/json')
  }
  const declared = response.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    return fail(`the client jwks_uri document is larger than ${maxBytes} bytes`)
  }
  const bytes = await readCapped(response.body, maxBytes)
  if (bytes === undefined) throw refuse(`the client jwks_uri document is larger than ${maxBytes} bytes`)
  let json: unknown
  try {
    json = JSON.parse(STRICT_UTF8.decode(bytes))
  } catch {
    // The parser's message quotes the text: it is not passed on.
    throw refuse('the client jwks_uri document is not valid JSON')
  }
  return publicSignatureKeys(json)
}

interface Fetching {
  /** The fetch of unguarded requests (host clients) and after a custom guard. */
  fetch: JwksFetch
  /** A custom guard, or the rules of `fetchPublic` (self-registered clients). */
  guard: HostGuard | OutboundOptions
  timeoutMs: number
  maxBytes: number
}

/** Sends the GET: a self-registered client's through its guard (see the module comment). */
async function send(url: URL, init: RequestInit, guarded: boolean, options: Fetching): Promise<Response> {
  const { guard } = options
  if (!guarded) return options.fetch(url.href, init)
  if (typeof guard === 'function') {
    await guard(url)
    return options.fetch(url.href, init)
  }
  const sent = await fetchPublic(url, init, guard)
  if ('response' in sent) return sent.response
  if (sent.refused === 'unresolved') throw refuse('the client jwks_uri host could not be resolved')
  if (sent.refused === 'host_name') {
    throw refuse('the client jwks_uri host is a name, which this runtime cannot check (docs/security.md)')
  }
  throw refuse('the client jwks_uri is on a private or local address')
}

/** Fetches and reads a set; one deadline covers the guard, the response and the body. */
async function download(url: URL, guarded: boolean, options: Fetching): Promise<JWK[]> {
  const controller = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort()
      reject(refuse('fetching the client jwks_uri timed out'))
    }, options.timeoutMs)
  })
  deadline.catch(() => {})
  try {
    const init: RequestInit = {
      method: 'GET',
      redirect: 'manual',
      credentials: 'omit',
      headers: { accept: 'application/jwk-set+json, application/json' },
      signal: controller.signal,
    }
    const response = await Promise.race([send(url, init, guarded, options), deadline])
    return await Promise.race([readJwks(response, options.maxBytes), deadline])
  } catch (err) {
    throw err instanceof OAuthError ? err : refuse('the client jwks_uri could not be fetched', err)
  } finally {
    clearTimeout(timer)
    controller.abort()
  }
}

interface Entry {
  /** The last set fetched (kept through a failed refetch). */
  keys?: JWK[]
  /** The last fetch's failure, when no set is kept. */
  error?: OAuthError
  /** Last fetch attempt (epoch s). */
  attemptedAt: number
  /** Until when `keys` (or `error`) answers without a fetch (epoch s). */
  until: number
}

/** Creates the key source with its per-URI cache. */
export function createClientKeySource(options: ClientKeySourceOptions): ClientKeySource {
  const { now } = options
  const cacheTtl = options.cacheTtl ?? 300
  const refetchInterval = options.refetchInterval ?? 30
  const maxEntries = options.maxEntries ?? 1000
  const fetching: Fetching = {
    fetch: options.fetch ?? ((input: string, init: RequestInit) => fetch(input, init)),
    guard: options.guard ?? {
      fetch: options.fetch,
      outboundFetch: options.outboundFetch,
      resolveHost: options.resolveHost,
      allowUnpinnedHostNames: options.allowUnpinnedHostNames,
    },
    timeoutMs: options.timeoutMs ?? 5000,
    maxBytes: options.maxBytes ?? MAX_JWKS_BYTES,
  }
  const cache = new Map<string, Entry>()
  const pending = new Map<string, Promise<JWK[]>>()

  function remember(key: string, entry: Entry): void {
    cache.delete(key)
    // Oldest first: Map keeps insertion order.
    while (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string)
    cache.set(key, entry)
  }

  const budget: FetchBudget | undefined =
    options.limiter && options.window !== undefined ? fetchBudget(options.limiter, now) : undefined
  const fetchesPerHost = options.fetchesPerHost ?? JWKS_FETCHES_PER_HOST

  /** Fetches once for all concurrent callers and records the outcome. */
  function load(key: string, url: URL, guarded: boolean, previous: Entry | undefined): Promise<JWK[]> {
    const inFlight = pending.get(key)
    if (inFlight) return inFlight
    const at = now()
    const rules =
      guarded && budget && options.window !== undefined
        ? [{ key: `jwks-host:${url.host}`, limit: fetchesPerHost, window: options.window }]
        : []
    const fetchWithinBudget = async (): Promise<{ keys: JWK[]; stale?: true }> => {
      const wait = budget ? await budget.admit(rules) : 0
      if (wait > 0) {
        // Stale on throttle: the set fetched before, however old, rather than no keys at all.
        if (previous?.keys) return { keys: previous.keys, stale: true }
        throw refuse('too many client jwks_uri fetches for this host; retry later')
      }
      try {
        return { keys: await download(url, guarded, fetching) }
      } catch (err) {
        await budget?.failed(rules)
        throw err
      }
    }
    const loading = fetchWithinBudget().then(
      ({ keys, stale }) => {
        // A stale set is asked for again after refetchInterval, not after a whole cacheTtl.
        remember(key, { keys, attemptedAt: at, until: at + (stale ? refetchInterval : cacheTtl) })
        return keys
      },
      (error: OAuthError) => {
        // A failed refetch keeps the set it meant to replace, until that set expires.
        const kept = previous?.keys && previous.until > at ? { keys: previous.keys, until: previous.until } : undefined
        remember(key, { ...(kept ?? { error, until: at + refetchInterval }), attemptedAt: at })
        throw error
      },
    )
    pending.set(key, loading)
    const done = () => pending.delete(key)
    loading.then(done, done)
    return loading
  }

  async function keysFor(client: ClientKeyOwner, request: { refresh?: boolean } = {}): Promise<JWK[]> {
    if (client.jwks !== undefined && client.jwksUri !== undefined) {
      throw refuse('the client has both jwks and jwks_uri')
    }
    if (client.jwks !== undefined) return publicSignatureKeys(client.jwks)
    if (client.jwksUri === undefined) throw refuse('the client has no jwks nor jwks_uri')
    const url = jwksUrl(client, client.jwksUri)
    const guarded = client.registration !== undefined
    // Guarded and unguarded fetches never share an entry: a host client's loopback set is not a
    // self-registered client's.
    const key = `${guarded ? 'self' : 'host'} ${url.href}`
    const entry = cache.get(key)
    const at = now()
    // Fetch when nothing is kept, or when the kept answer is stale or a refetch is asked for,
    // but never twice within refetchInterval: an attacker's assertions cannot make us hammer it.
    if (!entry || (at - entry.attemptedAt >= refetchInterval && (entry.until <= at || request.refresh))) {
      return load(key, url, guarded, entry)
    }
    if (entry.keys) return entry.keys
    throw entry.error ?? refuse('the client jwks_uri could not be fetched')
  }

  return { keysFor }
}
