/**
 * @module storage
 * The storage contract and the stores without a driver (memory, the SQL core). A driver's store
 * (postgres, redis, pglite, sqlite, d1, postgres_worker) is an entry of its own: a package
 * subpath, imported only where that driver is chosen, so the optional drivers stay optional.
 * Otherwise this index is what the rest of the code imports.
 */
export type {
  ClientMetadata,
  ClientRecord,
  PublicJwkSet,
  SecretRecord,
  TokenEndpointAuthMethod,
} from './client_records.ts'
export { createMemoryStore, isMemoryStore } from './memory.ts'
export { afterRedemption, createIssuedRecords, type IssuedRecords } from './issued_records.ts'
export { RequestScope } from './request_scope.ts'
export { postgresDialect, sqliteDialect } from './sql/dialect.ts'
export { migrationScript } from './sql/migrate.ts'
export type { SqlStore } from './sql/store.ts'
export type * from './types.ts'
export { CIBA_REQUEST_RETENTION, DEVICE_CODE_RETENTION } from './types.ts'
