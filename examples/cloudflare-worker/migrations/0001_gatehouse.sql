-- Gatehouse SQL store (sqlite), migrations 1 to 3, each recorded in gatehouse_migrations.
-- Printed by `npx gatehouse migrate --print sqlite`: do not edit.
CREATE TABLE IF NOT EXISTS gatehouse_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP);

-- 1: initial tables
CREATE TABLE IF NOT EXISTS gatehouse_clients (
  client_id text PRIMARY KEY,
  record text NOT NULL
);
CREATE TABLE IF NOT EXISTS gatehouse_codes (
  id text PRIMARY KEY,
  family_id text NOT NULL,
  record text NOT NULL,
  expires_at bigint NOT NULL,
  consumed_at bigint
);
CREATE INDEX IF NOT EXISTS gatehouse_codes_expires_at ON gatehouse_codes (expires_at);
CREATE TABLE IF NOT EXISTS gatehouse_refresh_tokens (
  id text PRIMARY KEY,
  family_id text NOT NULL,
  record text NOT NULL,
  expires_at bigint NOT NULL,
  consumed_at bigint
);
CREATE INDEX IF NOT EXISTS gatehouse_refresh_tokens_family_id ON gatehouse_refresh_tokens (family_id);
CREATE INDEX IF NOT EXISTS gatehouse_refresh_tokens_expires_at ON gatehouse_refresh_tokens (expires_at);
CREATE TABLE IF NOT EXISTS gatehouse_sessions (
  id text PRIMARY KEY,
  record text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_sessions_expires_at ON gatehouse_sessions (expires_at);
CREATE TABLE IF NOT EXISTS gatehouse_interactions (
  id text PRIMARY KEY,
  record text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_interactions_expires_at ON gatehouse_interactions (expires_at);
CREATE TABLE IF NOT EXISTS gatehouse_revoked_families (
  family_id text PRIMARY KEY,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_revoked_families_expires_at ON gatehouse_revoked_families (expires_at);
CREATE TABLE IF NOT EXISTS gatehouse_revoked_access_tokens (
  jti text PRIMARY KEY,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_revoked_access_tokens_expires_at ON gatehouse_revoked_access_tokens (expires_at);
CREATE TABLE IF NOT EXISTS gatehouse_signing_keys (
  kid text PRIMARY KEY,
  record text NOT NULL
);
INSERT INTO gatehouse_migrations (version, name) VALUES (1, 'initial tables') ON CONFLICT (version) DO NOTHING;

-- 2: attempt counters
CREATE TABLE IF NOT EXISTS gatehouse_attempts (
  key text PRIMARY KEY,
  count integer NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_attempts_expires_at ON gatehouse_attempts (expires_at);
INSERT INTO gatehouse_migrations (version, name) VALUES (2, 'attempt counters') ON CONFLICT (version) DO NOTHING;

-- 3: pushed requests and replay markers
CREATE TABLE IF NOT EXISTS gatehouse_pushed_requests (
  id text PRIMARY KEY,
  record text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_pushed_requests_expires_at ON gatehouse_pushed_requests (expires_at);
CREATE TABLE IF NOT EXISTS gatehouse_replays (
  key text PRIMARY KEY,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_replays_expires_at ON gatehouse_replays (expires_at);
INSERT INTO gatehouse_migrations (version, name) VALUES (3, 'pushed requests and replay markers') ON CONFLICT (version) DO NOTHING;
