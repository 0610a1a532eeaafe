/**
 * @module throttle
 * Throttling of failed client authentications and failed sign-ins. Each attempt is checked
 * against a few fixed-window counters (the pair identity + source address, the identity from
 * anywhere, the address for any identity) BEFORE the secret or password is verified, so an
 * exhausted counter refuses even a correct guess: a blocked attacker learns nothing, and a
 * success never resets a counter (it cannot unlock an attacker). Only failures are counted.
 * Counters live in the store (`Store.attempts`), so every instance shares them.
 */
import type { Store } from './storage/types.ts'

/** One counter: at most `limit` failures per `window` seconds under `key`. */
export interface ThrottleRule {
  key: string
  limit: number
  window: number
}

/** Pluggable limiter (the `throttle.limiter` option). */
export interface Limiter {
  /** Seconds until every rule allows another attempt; 0 when none is exhausted. */
  retryAfter(rules: readonly ThrottleRule[], now: number): Promise<number>
  /** Counts one failure against each rule. */
  fail(rules: readonly ThrottleRule[], now: number): Promise<void>
}

/** The default limiter: fixed-window counters in the service's store. */
export function storeLimiter(store: Store): Limiter {
  return {
    async retryAfter(rules, now) {
      const counters = await Promise.all(rules.map((rule) => store.attempts.get(rule.key, now)))
      let wait = 0
      rules.forEach((rule, i) => {
        const counter = counters[i]
        if (counter && counter.count >= rule.limit) wait = Math.max(wait, counter.resetAt - now)
      })
      return wait
    },
    async fail(rules, now) {
      await Promise.all(rules.map((rule) => store.attempts.hit(rule.key, rule.window, now)))
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

/**
 * The rules for an attempt. Keys put the address (which has no spaces) first, so identities with
 * any characters cannot collide; `kind` separates client authentication from sign-in.
 */
export function attemptRules(
  kind: 'client' | 'user',
  identity: string | undefined,
  address: string | undefined,
  limits: AttemptLimits,
  window: number,
): ThrottleRule[] {
  const rules: ThrottleRule[] = []
  if (identity !== undefined) {
    rules.push({ key: `${kind}:${identity}`, limit: limits.perIdentity, window })
    if (address !== undefined) {
      rules.push({ key: `${kind}+address:${address} ${identity}`, limit: limits.perIdentityAndAddress, window })
    }
  }
  if (address !== undefined) rules.push({ key: `${kind}-address:${address}`, limit: limits.perAddress, window })
  return rules
}
