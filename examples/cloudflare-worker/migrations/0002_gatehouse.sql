-- Gatehouse SQL store (sqlite), migrations 4 to 4, each recorded in gatehouse_migrations.
-- Printed by `npx gatehouse migrate --print sqlite --from 4`: do not edit.
CREATE TABLE IF NOT EXISTS gatehouse_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP);

-- 4: device codes
CREATE TABLE IF NOT EXISTS gatehouse_device_codes (
  id text PRIMARY KEY,
  user_code text,
  record text NOT NULL,
  status text NOT NULL,
  login text,
  poll_interval integer NOT NULL,
  polled_at bigint,
  poll_answer text,
  code_expires_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  consumed_at bigint
);
CREATE UNIQUE INDEX IF NOT EXISTS gatehouse_device_codes_user_code ON gatehouse_device_codes (user_code);
CREATE INDEX IF NOT EXISTS gatehouse_device_codes_expires_at ON gatehouse_device_codes (expires_at);
INSERT INTO gatehouse_migrations (version, name) VALUES (4, 'device codes') ON CONFLICT (version) DO NOTHING;
