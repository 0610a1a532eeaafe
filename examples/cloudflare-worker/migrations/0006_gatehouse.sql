-- Gatehouse SQL store (sqlite), migrations 8 to 8, each recorded in gatehouse_migrations.
-- Printed by `npx gatehouse migrate --print sqlite --from 8`: do not edit.
CREATE TABLE IF NOT EXISTS gatehouse_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP);

-- 8: no refresh token family index
DROP INDEX IF EXISTS gatehouse_refresh_tokens_family_id;
INSERT INTO gatehouse_migrations (version, name) VALUES (8, 'no refresh token family index') ON CONFLICT (version) DO NOTHING;
