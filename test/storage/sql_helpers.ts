/** Shared by the SQL stores' contract runs: the tables to empty between tests. */
export const TABLES = [
  'clients',
  'codes',
  'refresh_tokens',
  'sessions',
  'interactions',
  'revoked_families',
  'revoked_access_tokens',
  'signing_keys',
  'pushed_requests',
  'replays',
  'device_codes',
  'grants',
  'ciba_requests',
  'grant_uses',
].map((name) => `gatehouse_${name}`)

/** A schema name unique to this test run. */
export function runSchema(kind: string): string {
  return `gh_test_${kind}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
}
