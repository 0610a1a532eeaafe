/**
 * @module storage/postgres_errors
 * Which PostgreSQL driver errors mean the database, not the query, failed: the store answers them
 * with StoreUnavailableError (503). Shared by the PostgreSQL store (storage/postgres.ts) and its
 * per-request form inside Workers (storage/postgres_worker.ts).
 */

/** SQLSTATE classes and driver codes that mean the database could not be reached or serve. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; errno?: string }
  const code = String(e?.code ?? '')
  if (/^(08|53|57|58)/.test(code)) return true // connection, resources, operator intervention, system
  return [
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
    'EPIPE',
    'ENOTFOUND',
    'CONNECTION_CLOSED',
    'CONNECTION_ENDED',
    'CONNECTION_DESTROYED',
    'CONNECT_TIMEOUT',
    'QUERY_TIMEOUT',
    'UNREACHABLE',
  ].includes(code)
}
