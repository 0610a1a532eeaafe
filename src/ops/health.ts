/**
 * @module ops/health
 * Liveness and readiness probes (the Kubernetes kind). Liveness answers 200 while the process
 * serves. Readiness makes a real store round trip (reading the signing keys) and checks that the
 * signing keys are loaded, each within a time bound: 200 `{"status":"ok"}`, else 503
 * `{"status":"unavailable","checks":{...}}`. The answers name checks only, never a driver's error.
 */
import type { HealthOptions } from '../config/index.ts'
import type { Context } from '../context.ts'

export type { HealthOptions }

/** The outcome of one readiness check. */
export type CheckResult = 'ok' | 'failed' | 'timeout' | 'skipped'

const TIMEOUT = Symbol('timeout')

/** Settles with `'ok'`, `'failed'` or `'timeout'`; never rejects, and swallows a late rejection. */
function check(work: () => unknown, seconds: number): Promise<CheckResult> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<typeof TIMEOUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMEOUT), seconds * 1000)
  })
  const done = Promise.resolve()
    .then(work)
    .then(
      () => 'ok' as const,
      () => 'failed' as const,
    )
  return Promise.race([done, timeout]).then((result) => {
    clearTimeout(timer)
    return result === TIMEOUT ? 'timeout' : result
  })
}

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' }

/** The probes' request handlers. */
export function createProbes(ctx: Context): {
  liveness: () => Response
  readiness: () => Promise<Response>
} {
  const timeout = ctx.config.health?.readinessTimeout ?? 2
  const algorithms = [...new Set([ctx.config.accessTokenSigningAlg, ctx.config.idTokenSigningAlg])]
  return {
    liveness: () => new Response('{"status":"ok"}', { headers: JSON_HEADERS }),
    async readiness(): Promise<Response> {
      // 1. The store answers a read (the signing keys: every store has them).
      const store = await check(() => ctx.store.keys.list(), timeout)
      // 2. A signing key for each algorithm is loaded (from the keyring's cache, else the store).
      const keys =
        store === 'ok'
          ? await check(() => Promise.all(algorithms.map((alg) => ctx.keyring.signingKey(alg))), timeout)
          : 'skipped'
      if (store === 'ok' && keys === 'ok') return new Response('{"status":"ok"}', { headers: JSON_HEADERS })
      if (store !== 'ok') ctx.config.metrics?.storeError()
      return new Response(JSON.stringify({ status: 'unavailable', checks: { store, keys } }), {
        status: 503,
        headers: JSON_HEADERS,
      })
    },
  }
}
