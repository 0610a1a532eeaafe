-- Gatehouse SQL store (sqlite), migrations 5 to 5, each recorded in gatehouse_migrations.
-- Printed by `npx gatehouse migrate --print sqlite --from 5`: do not edit.
CREATE TABLE IF NOT EXISTS gatehouse_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP);

-- 5: grants
CREATE TABLE IF NOT EXISTS gatehouse_grants (
  id text PRIMARY KEY,
  sub text NOT NULL,
  record text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS gatehouse_grants_sub ON gatehouse_grants (sub);
CREATE INDEX IF NOT EXISTS gatehouse_grants_expires_at ON gatehouse_grants (expires_at);
INSERT INTO gatehouse_migrations (version, name) VALUES (5, 'grants') ON CONFLICT (version) DO NOTHING;
