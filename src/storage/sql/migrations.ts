/**
 * @module storage/sql/migrations
 * Versioned SQL migrations shared by the PostgreSQL, PGlite and SQLite stores. Applied in order,
 * each once, under the dialect's lock (an advisory lock on PostgreSQL, `BEGIN IMMEDIATE` on SQLite),
 * and recorded in `gatehouse_migrations`. Never edit a released migration: add the next version
 * (its text must be valid on both dialects).
 */

export interface Migration {
  version: number
  name: string
  /**
   * Statements; `{schema}.` is replaced by the quoted schema name and a dot on PostgreSQL and by
   * nothing on SQLite (no schemas), `{json}` by the dialect's JSON column type (`jsonb`, `text`).
   */
  statements: string[]
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial tables',
    statements: [
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_clients (
        client_id text PRIMARY KEY,
        record {json} NOT NULL
      )`,
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_codes (
        id text PRIMARY KEY,
        family_id text NOT NULL,
        record {json} NOT NULL,
        expires_at bigint NOT NULL,
        consumed_at bigint
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_codes_expires_at ON {schema}.gatehouse_codes (expires_at)',
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_refresh_tokens (
        id text PRIMARY KEY,
        family_id text NOT NULL,
        record {json} NOT NULL,
        expires_at bigint NOT NULL,
        consumed_at bigint
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_refresh_tokens_family_id ON {schema}.gatehouse_refresh_tokens (family_id)',
      'CREATE INDEX IF NOT EXISTS gatehouse_refresh_tokens_expires_at ON {schema}.gatehouse_refresh_tokens (expires_at)',
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_sessions (
        id text PRIMARY KEY,
        record {json} NOT NULL,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_sessions_expires_at ON {schema}.gatehouse_sessions (expires_at)',
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_interactions (
        id text PRIMARY KEY,
        record {json} NOT NULL,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_interactions_expires_at ON {schema}.gatehouse_interactions (expires_at)',
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_revoked_families (
        family_id text PRIMARY KEY,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_revoked_families_expires_at ON {schema}.gatehouse_revoked_families (expires_at)',
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_revoked_access_tokens (
        jti text PRIMARY KEY,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_revoked_access_tokens_expires_at ON {schema}.gatehouse_revoked_access_tokens (expires_at)',
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_signing_keys (
        kid text PRIMARY KEY,
        record {json} NOT NULL
      )`,
    ],
  },
  {
    version: 2,
    name: 'attempt counters',
    statements: [
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_attempts (
        key text PRIMARY KEY,
        count integer NOT NULL,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_attempts_expires_at ON {schema}.gatehouse_attempts (expires_at)',
    ],
  },
  {
    version: 3,
    name: 'pushed requests and replay markers',
    statements: [
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_pushed_requests (
        id text PRIMARY KEY,
        record {json} NOT NULL,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_pushed_requests_expires_at ON {schema}.gatehouse_pushed_requests (expires_at)',
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_replays (
        key text PRIMARY KEY,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_replays_expires_at ON {schema}.gatehouse_replays (expires_at)',
    ],
  },
  {
    version: 4,
    name: 'device codes',
    statements: [
      // The record as inserted; what changes later (decision, polls, redemption) is in columns, so
      // each change is one conditional UPDATE. `user_code` is cleared when another record takes
      // over an expired code; `expires_at` is the end of the retention (pruning).
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_device_codes (
        id text PRIMARY KEY,
        user_code text,
        record {json} NOT NULL,
        status text NOT NULL,
        login {json},
        poll_interval integer NOT NULL,
        polled_at bigint,
        poll_answer text,
        code_expires_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        consumed_at bigint
      )`,
      'CREATE UNIQUE INDEX IF NOT EXISTS gatehouse_device_codes_user_code ON {schema}.gatehouse_device_codes (user_code)',
      'CREATE INDEX IF NOT EXISTS gatehouse_device_codes_expires_at ON {schema}.gatehouse_device_codes (expires_at)',
    ],
  },
  {
    version: 5,
    name: 'grants',
    statements: [
      // One row per grant (family), keyed by the family id; `sub` is a column so an end-user's
      // grants are found through its index, not by reading every record.
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_grants (
        id text PRIMARY KEY,
        sub text NOT NULL,
        record {json} NOT NULL,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_grants_sub ON {schema}.gatehouse_grants (sub)',
      'CREATE INDEX IF NOT EXISTS gatehouse_grants_expires_at ON {schema}.gatehouse_grants (expires_at)',
    ],
  },
  {
    version: 6,
    name: 'ciba requests',
    statements: [
      // As the device codes (version 4): the record as inserted, what changes later in columns.
      // `approval_id` finds a request from the approval page; `expires_at` is the end of the
      // retention (pruning), `request_expires_at` the request's own end.
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_ciba_requests (
        id text PRIMARY KEY,
        approval_id text NOT NULL,
        record {json} NOT NULL,
        status text NOT NULL,
        login {json},
        poll_interval integer NOT NULL,
        polled_at bigint,
        poll_answer text,
        request_expires_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        consumed_at bigint
      )`,
      'CREATE UNIQUE INDEX IF NOT EXISTS gatehouse_ciba_requests_approval_id ON {schema}.gatehouse_ciba_requests (approval_id)',
      'CREATE INDEX IF NOT EXISTS gatehouse_ciba_requests_expires_at ON {schema}.gatehouse_ciba_requests (expires_at)',
    ],
  },
  {
    version: 7,
    name: 'grant last use',
    statements: [
      // A grant's last use (`grants.touch`, #42) beside its row, not in it: a touch is one upsert
      // here that never rewrites the record (a concurrent put keeps everything it wrote) and a
      // new table, unlike a new column, can be created again (the script re-runs, migrate.ts).
      // `expires_at` is the grant's end when last touched; pruning keeps the rows of live grants.
      `CREATE TABLE IF NOT EXISTS {schema}.gatehouse_grant_uses (
        id text PRIMARY KEY,
        last_used_at bigint NOT NULL,
        expires_at bigint NOT NULL
      )`,
      'CREATE INDEX IF NOT EXISTS gatehouse_grant_uses_expires_at ON {schema}.gatehouse_grant_uses (expires_at)',
    ],
  },
  {
    version: 8,
    name: 'no refresh token family index',
    statements: [
      // #44: no statement reads refresh tokens by family (a family's revocation is a row of
      // gatehouse_revoked_families, checked by its key), yet every token written put an entry in
      // this index: a page of its own in the commit (on SQLite, a WAL frame of 4 KiB per rotation).
      'DROP INDEX IF EXISTS {schema}.gatehouse_refresh_tokens_family_id',
    ],
  },
]
