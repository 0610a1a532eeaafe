/**
 * @module config/health
 * The `health` option: the probe paths and the readiness time bound (see src/ops/health.ts for the
 * probes). Apart from the probes so the options schema does not depend on the service context.
 */
import type { HealthOptions } from './options.ts'
import * as v from 'valibot'

/** An absolute path on the host (not below the issuer): `/` and a path without query or fragment. */
const probePath = v.pipe(
  v.string(),
  v.regex(/^\/[\w\-.~/]*$/, 'must be an absolute path such as /healthz (letters, digits, -, ., _, ~, /)'),
)

/** The `health` option: the probe paths (each off while absent) and the readiness time bound. */
export const HealthSchema = v.strictObject({
  /** Path of the liveness probe, e.g. `/healthz`; matched on the whole request path, not below the issuer. */
  livenessPath: v.optional(probePath),
  /** Path of the readiness probe, e.g. `/readyz`; matched on the whole request path, not below the issuer. */
  readinessPath: v.optional(probePath),
  /** Seconds each readiness check may take before it counts as failed. Default 2. */
  readinessTimeout: v.optional(v.pipe(v.number(), v.minValue(0.01), v.maxValue(60)), 2),
})
export type { HealthOptions }
// The public HealthOptions (src/config/options.ts) is written out; it must be what HealthSchema accepts.
const _healthMatches: [HealthOptions] extends [v.InferInput<typeof HealthSchema>]
  ? [v.InferInput<typeof HealthSchema>] extends [HealthOptions]
    ? true
    : false
  : false = true
void _healthMatches
