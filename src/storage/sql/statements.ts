/**
 * @module storage/sql/statements
 * The tables that expire (the one-time consume and rotate are the dialect's, dialect.ts).
 */

/** Tables whose rows carry `expires_at` and are pruned once expired. */
export const PRUNED_TABLES: readonly string[] = [
  'codes',
  'refresh_tokens',
  'sessions',
  'grants',
  'interactions',
  'revoked_families',
  'revoked_access_tokens',
  'attempts',
  'pushed_requests',
  'replays',
  'device_codes',
  'ciba_requests',
]
