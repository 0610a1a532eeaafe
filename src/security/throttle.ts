/**
 * @module security/throttle
 * Throttling of failed client authentications and failed sign-ins. Each attempt is checked
 * against a few fixed-window counters (the pair identity + source address, the identity from
 * anywhere, the address for any identity) BEFORE the secret or password is verified, so an
 * exhausted counter refuses even a correct guess: a blocked attacker learns nothing, and a
 * success never resets a counter (it cannot unlock an attacker). Only failures are counted.
 * Counters live in the store (`Store.attempts`), so every instance shares them.
 */
import { addressBucket } from './networks.ts'
import type { AttemptCounter, AttemptTaken, Store } from '../storage/index.ts'

/** One counter: at most `limit` failures per `window` seconds under `key`. */
export interface ThrottleRule {
  key: string
  limit: number
  window: number
}

/** Pluggable limiter (the `throttle.limiter` option). */
export interface Limiter {
  /**
   * Seconds until every rule allows another attempt; 0 when none is exhausted. `fresh` asks for
   * the store's current counts (the re-check before a slow hash); otherwise a read up to about a
   * second old may answer (the check on every request).
   */
  retryAfter(rules: readonly ThrottleRule[], now: number, options?: { fresh?: boolean }): number | Promise<number>
  /** Counts one failure against each rule. */
  fail(rules: readonly ThrottleRule[], now: number): Promise<void>
}

/** Seconds until `rule` allows another attempt, given its counter. */
function waitFor(rule: ThrottleRule, counter: AttemptCounter | undefined, now: number): number {
  return counter && counter.resetAt > now && counter.count >= rule.limit ? counter.resetAt - now : 0
}

/**
 * The default limiter: fixed-window counters in the service's store. Reads are remembered for a
 * second per key (so a busy client costs no store round trip per request on PostgreSQL or Redis);
 * a fresh read is made before every slow hash and every failure updates the local copy, so the
 * second of staleness only ever lets a request through that knows a secret verified recently.
 */
export function storeLimiter(store: Store, options: { readTtl?: number; maxKeys?: number } = {}): Limiter {
  const readTtl = options.readTtl ?? 1
  const maxKeys = options.maxKeys ?? 10_000
  const reads = new Map<string, { counter: AttemptCounter | undefined; until: number }>()

  function remember(key: string, counter: AttemptCounter | undefined, now: number) {
    if (readTtl <= 0) return
    if (reads.size >= maxKeys) reads.clear()
    reads.set(key, { counter, until: now + readTtl })
  }

  async function read(key: string, now: number, fresh: boolean): Promise<AttemptCounter | undefined> {
    const cached = fresh ? undefined : reads.get(key)
    if (cached && cached.until > now) return cached.counter
    const counter = await store.attempts.get(key, now)
    remember(key, counter, now)
    return counter
  }

  async function readAll(rules: readonly ThrottleRule[], now: number, fresh: boolean): Promise<number> {
    const counters = await Promise.all(rules.map((rule) => read(rule.key, now, fresh)))
    let wait = 0
    for (const [i, rule] of rules.entries()) wait = Math.max(wait, waitFor(rule, counters[i], now))
    return wait
  }

  return {
    retryAfter(rules, now, options = {}) {
      // The usual case, every counter read within the last second: answered synchronously.
      if (options.fresh !== true) {
        let wait = 0
        for (const rule of rules) {
          const cached = reads.get(rule.key)
          if (cached === undefined || cached.until <= now) {
            wait = -1
            break
          }
          wait = Math.max(wait, waitFor(rule, cached.counter, now))
        }
        if (wait >= 0) return wait
      }
      return readAll(rules, now, options.fresh === true)
    },
    async fail(rules, now) {
      const counters = await Promise.all(rules.map((rule) => store.attempts.hit(rule.key, rule.window, now)))
      for (const [i, rule] of rules.entries()) remember(rule.key, counters[i], now)
    },
  }
}

/**
 * Outbound fetches a stranger can cause (client metadata documents, client key sets), counted in
 * the limiter like failed attempts: `admit` reads the counts fresh and counts the fetch before it
 * is made, so a burst cannot outrun the count; `failed` counts a failed fetch once more.
 */
export interface FetchBudget {
  /** 0 when the fetch may go (it has been counted); otherwise seconds until it may. */
  admit(rules: readonly ThrottleRule[]): Promise<number>
  /** Counts a failed fetch once more. */
  failed(rules: readonly ThrottleRule[]): Promise<void>
}

/** The fetch budget over a limiter. */
export function fetchBudget(limiter: Limiter, now: () => number): FetchBudget {
  return {
    async admit(rules) {
      if (rules.length === 0) return 0
      const at = now()
      const wait = await limiter.retryAfter(rules, at, { fresh: true })
      if (wait > 0) return wait
      await limiter.fail(rules, at)
      return 0
    },
    async failed(rules) {
      if (rules.length > 0) await limiter.fail(rules, now())
    },
  }
}

/** Limits of one kind of attempt. */
export interface AttemptLimits {
  /** Failures of one identity from one address. */
  perIdentityAndAddress: number
  /** Failures of one identity from anywhere (distributed guessing). */
  perIdentity: number
  /** Failures from one address for any identity (spraying). */
  perAddress: number
}

/** The rules of one attempt, by what they count. */
export interface AttemptRules {
  /** Every rule (checked, and counted on a failed secret or password). */
  readonly all: readonly ThrottleRule[]
  /** The address-only rule(s): all that a failure unrelated to the identity's secret counts. */
  readonly address: readonly ThrottleRule[]
  /** The key under which slow verifications of this attempt run one at a time per process. */
  exclusive: string
}

const encoder = new TextEncoder()
const PLAIN_IDENTITY = /^[\x21-\x7e]{1,128}$/

/** A store key part for an identity: as is when short and printable, else its SHA-256. */
async function identityKey(identity: string): Promise<string> {
  if (PLAIN_IDENTITY.test(identity)) return identity
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(identity)))
  return `#${Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('')}`
}

/**
 * The rules for an attempt. Keys put the address bucket (which has no spaces) first, so identities
 * cannot collide; odd or long identities are hashed, so keys stay short; `kind` separates client
 * authentication from sign-in.
 */
export async function attemptRules(
  kind: 'client' | 'user',
  identity: string,
  address: string | undefined,
  limits: AttemptLimits,
  window: number,
): Promise<AttemptRules> {
  const id = await identityKey(identity)
  const bucket = address === undefined ? undefined : addressBucket(address)
  const all: ThrottleRule[] = [{ key: `${kind}:${id}`, limit: limits.perIdentity, window }]
  const addressRules: ThrottleRule[] = []
  if (bucket !== undefined) {
    all.push({ key: `${kind}+address:${bucket} ${id}`, limit: limits.perIdentityAndAddress, window })
    addressRules.push({ key: `${kind}-address:${bucket}`, limit: limits.perAddress, window })
    all.push(...addressRules)
  }
  return { all, address: addressRules, exclusive: `${kind}:${bucket ?? ''} ${id}` }
}

const NO_ADDRESS = '\u0000'

/**
 * `attemptRules` of one kind, remembered per (address, identity): a busy client's token requests
 * then build no keys, buckets or hashes. The rules are frozen (shared by every request of that
 * pair). At most `max` pairs are held; the cache is emptied when full, so any identity an attacker
 * makes up costs one entry until then.
 */
export function createRulesCache(
  kind: 'client' | 'user',
  limits: AttemptLimits,
  window: number,
  max = 10_000,
): (identity: string, address: string | undefined) => AttemptRules | Promise<AttemptRules> {
  const byAddress = new Map<string, Map<string, AttemptRules>>()
  let size = 0
  async function build(identity: string, address: string | undefined): Promise<AttemptRules> {
    const rules = await attemptRules(kind, identity, address, limits, window)
    const frozen: AttemptRules = Object.freeze({
      all: Object.freeze(rules.all.map((rule) => Object.freeze(rule))),
      address: Object.freeze(rules.address.map((rule) => Object.freeze(rule))),
      exclusive: rules.exclusive,
    })
    if (size >= max) {
      byAddress.clear()
      size = 0
    }
    const key = address ?? NO_ADDRESS
    let identities = byAddress.get(key)
    if (identities === undefined) {
      identities = new Map()
      byAddress.set(key, identities)
    }
    if (!identities.has(identity)) size++
    identities.set(identity, frozen)
    return frozen
  }
  return (identity, address) => byAddress.get(address ?? NO_ADDRESS)?.get(identity) ?? build(identity, address)
}

/**
 * Runs functions one at a time per key in this process. Throttling counts a failure only after the
 * slow hash said so; without this, a burst of parallel guesses would all pass the check before the
 * first failure is counted. Queued attempts re-check the counters when their turn comes.
 */
export function createExclusiveRunner() {
  const tails = new Map<string, Promise<unknown>>()
  return function exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = tails.get(key) ?? Promise.resolve()
    const run = previous.then(fn, fn)
    const tail = run.then(
      () => undefined,
      () => undefined,
    )
    tails.set(key, tail)
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key)
    })
    return run
  }
}

/**
 * One atomic count-and-reserve in the store (`attempts.take`; a store without it: `hit`, then
 * compare, which counts refused calls too): the caps on requests of any outcome (registrations,
 * device authorizations), which the `Limiter` interface cannot hold, having no atomic reserve.
 */
export async function takeAttempt(
  store: Store,
  key: string,
  limit: number,
  window: number,
  now: number,
): Promise<AttemptTaken> {
  const attempts = store.attempts
  if (attempts.take) return attempts.take(key, limit, window, now)
  const counter = await attempts.hit(key, window, now)
  return { ...counter, taken: counter.count <= limit }
}

/** The error of a throttled client authentication: 429 with Retry-After. */
export function throttledAfter(wait: number): { status: number; headers: Record<string, string> } {
  return { status: 429, headers: { 'retry-after': String(Math.max(1, Math.ceil(wait))) } }
}
