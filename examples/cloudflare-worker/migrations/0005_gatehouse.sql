-- Gatehouse SQL store (sqlite), migrations 7 to 7, each recorded in gatehouse_migrations.
-- Printed by `npx gatehouse migrate --print sqlite --from 7`: do not edit.
CREATE TABLE IF NOT EXISTS gatehouse_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP);

-- 7: grant last use
CREATE TABLE IF NOT EXISTS gatehouse_grant_uses (
  id text PRIMARY KEY,
  last_used_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_grant_uses_expires_at ON gatehouse_grant_uses (expires_at);
INSERT INTO gatehouse_migrations (version, name) VALUES (7, 'grant last use') ON CONFLICT (version) DO NOTHING;
