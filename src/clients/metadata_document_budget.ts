/**
 * @module clients/metadata_document_budget
 * The fetch budgets of Client ID Metadata Documents (see src/clients/metadata_document.ts),
 * counted in the throttle limiter so every instance shares them, through its `FetchBudget`:
 * - a URL that resolved to a usable document before is *known* (a marker in the limiter, kept
 *   `KNOWN_FOR`); fetches of known URLs count against `perHost` of their host
 * - fetches of any other URL count against `unknownPerHost` of the host and `unknownPerAddress` of
 *   the request's source address (IPv6: its /64), when the caller knows it
 * - every fetch counts one before it is made (a burst cannot outrun the count), a failed one one
 *   more; so junk client ids spend the unknown budgets only, never the known documents' one
 * - when a budget is spent, the last good copy of a document this instance resolved is served past
 *   its cache lifetime (stale on throttle); a URL without one is refused with 429
 */
import { addressBucket, fetchBudget, type Limiter, type ThrottleRule } from '../security/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import { sha256 } from '../crypto/index.ts'

/** Fetch budgets per throttle window (the `fetchLimits` option). */
export interface DocumentFetchLimits {
  /** Fetches of known documents (URLs that resolved before) of one host. */
  perHost: number
  /** Fetches of other URLs of one host. */
  unknownPerHost: number
  /** Fetches of other URLs for requests from one source address (IPv6: its /64). */
  unknownPerAddress: number
}
/** The default budgets: a failed fetch counts two, so 15 junk URLs spend a host's unknown budget. */
export const DOCUMENT_FETCH_LIMITS: Readonly<DocumentFetchLimits> = {
  perHost: 60,
  unknownPerHost: 30,
  unknownPerAddress: 20,
}
/** Fetches of one document host per throttle window (known documents). */
export const FETCHES_PER_HOST = DOCUMENT_FETCH_LIMITS.perHost
/** How long a URL that resolved stays known to the budgets, seconds (30 days). */
export const KNOWN_FOR = 2_592_000
/** Last good copies kept in memory at most. */
const KEPT_MAX = 1000

/** What a fetch may do: go (counted against `rules`), be answered by a stale copy, or wait. */
export type Admission =
  | { go: true; rules: readonly ThrottleRule[] }
  | { go: false; stale: ClientRecord }
  | { go: false; stale?: undefined; wait: number }

/** The budgets of one resolver. */
export interface DocumentBudget {
  /** Counts a fetch of `clientId` for a request from `address` (see the module comment). */
  admit(clientId: string, address: string | undefined): Promise<Admission>
  /** After an admitted fetch: a failure counts once more; a success marks the URL known and keeps the copy. */
  settle(clientId: string, rules: readonly ThrottleRule[], record: ClientRecord | undefined): Promise<void>
}

/** The budgets over `limiter` (absent: throttling is off, every fetch goes). */
export function createDocumentBudget(options: {
  limiter?: Limiter | undefined
  window?: number | undefined
  limits?: Partial<DocumentFetchLimits> | undefined
  now: () => number
}): DocumentBudget {
  const { limiter, window, now } = options
  const limits: DocumentFetchLimits = { ...DOCUMENT_FETCH_LIMITS, ...options.limits }
  const budget = limiter && window !== undefined ? fetchBudget(limiter, now) : undefined
  const lastGood = new Map<string, ClientRecord>()

  /** The limiter's marker of a URL that resolved: a counter with limit 1, exhausted once set. */
  async function knownRule(clientId: string): Promise<ThrottleRule> {
    return { key: `cimd-known:${await sha256(clientId)}`, limit: 1, window: KNOWN_FOR }
  }

  async function rulesFor(clientId: string, address: string | undefined): Promise<ThrottleRule[]> {
    if (!limiter || window === undefined) return []
    const host = new URL(clientId).host
    const known =
      lastGood.has(clientId) || (await limiter.retryAfter([await knownRule(clientId)], now(), { fresh: true })) > 0
    if (known) return [{ key: `cimd-host:${host}`, limit: limits.perHost, window }]
    const rules: ThrottleRule[] = [{ key: `cimd-unknown:${host}`, limit: limits.unknownPerHost, window }]
    if (address !== undefined) {
      rules.push({ key: `cimd-address:${addressBucket(address)}`, limit: limits.unknownPerAddress, window })
    }
    return rules
  }

  return {
    async admit(clientId, address) {
      const rules = await rulesFor(clientId, address)
      const wait = budget ? await budget.admit(rules) : 0
      if (wait === 0) return { go: true, rules }
      const stale = lastGood.get(clientId)
      return stale ? { go: false, stale } : { go: false, wait }
    },
    async settle(clientId, rules, record) {
      if (record === undefined) return budget?.failed(rules)
      // Counted as unknown: from now on it is known, on every instance.
      if (limiter && rules[0]?.key.startsWith('cimd-unknown:')) {
        await limiter.fail([await knownRule(clientId)], now())
      }
      lastGood.delete(clientId)
      while (lastGood.size >= KEPT_MAX) lastGood.delete(lastGood.keys().next().value as string)
      lastGood.set(clientId, record)
    },
  }
}
