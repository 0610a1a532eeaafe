-- Gatehouse SQL store (sqlite), migrations 6 to 6, each recorded in gatehouse_migrations.
-- Printed by `npx gatehouse migrate --print sqlite --from 6`: do not edit.
CREATE TABLE IF NOT EXISTS gatehouse_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP);

-- 6: ciba requests
CREATE TABLE IF NOT EXISTS gatehouse_ciba_requests (
  id text PRIMARY KEY,
  approval_id text NOT NULL,
  record text NOT NULL,
  status text NOT NULL,
  login text,
  poll_interval integer NOT NULL,
  polled_at bigint,
  poll_answer text,
  request_expires_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  consumed_at bigint
);
CREATE UNIQUE INDEX IF NOT EXISTS gatehouse_ciba_requests_approval_id ON gatehouse_ciba_requests (approval_id);
CREATE INDEX IF NOT EXISTS gatehouse_ciba_requests_expires_at ON gatehouse_ciba_requests (expires_at);
INSERT INTO gatehouse_migrations (version, name) VALUES (6, 'ciba requests') ON CONFLICT (version) DO NOTHING;
