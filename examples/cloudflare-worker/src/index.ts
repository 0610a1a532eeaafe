/**
 * Gatehouse as a Cloudflare Worker: an OAuth 2.0 / OpenID Connect provider whose state (signing
 * keys, codes, sessions, refresh tokens, clients) lives in D1, so every isolate in every location
 * serves the same issuer. The service is built once per isolate from `env`; `setup` registers the
 * clients there; the Cron Trigger (wrangler.jsonc) prunes expired records.
 *
 * Variables (wrangler.jsonc "vars"): ISSUER, WEB_REDIRECT_URIS, GATEHOUSE_STORE=d1.
 * Secrets (`wrangler secret put`, locally .dev.vars): WEB_CLIENT_SECRET, SERVICE_CLIENT_SECRET,
 * DEMO_USER_PASSWORD, each the value or its PBKDF2 hash (`npm run secret` prints both): with the
 * hash, the Worker never holds the secret, and an isolate's start does not hash it.
 */
import { createWorker, workerStore } from 'gatehouse-oidc/adapters/workers'

export interface Env {
  /** The D1 database (wrangler.jsonc "d1_databases"). */
  DB: D1Database
  /** `d1`: workerStore(env) opens DB (and applies pending migrations once per isolate). */
  GATEHOUSE_STORE: string
  /** The Worker's public base URL, byte for byte. */
  ISSUER: string
  /** The web client's redirect URIs, space-separated. */
  WEB_REDIRECT_URIS: string
  WEB_CLIENT_SECRET: string
  SERVICE_CLIENT_SECRET: string
  DEMO_USER_PASSWORD: string
}

/** A secret `name` of `env`, or a clear failure naming the command that sets it. */
function secret(env: Env, name: 'WEB_CLIENT_SECRET' | 'SERVICE_CLIENT_SECRET' | 'DEMO_USER_PASSWORD'): string {
  const value = env[name]
  if (!value) throw new Error(`the secret ${name} is not set: wrangler secret put ${name} (locally: .dev.vars)`)
  return value
}

export default createWorker<Env>(
  async (env) => ({
    issuer: env.ISSUER,
    store: await workerStore(env),
    // The built-in sign-in page's users. Bring your own users with `accounts` and `interaction`
    // (or an upstream identity provider): on Workers, passwords are hashed with 100,000 PBKDF2
    // iterations at most (the platform's limit), below OWASP's 600,000.
    users: [
      {
        sub: 'demo-user-1',
        username: 'alice',
        password: secret(env, 'DEMO_USER_PASSWORD'),
        email: 'alice@example.com',
        email_verified: true,
        given_name: 'Alice',
        family_name: 'Example',
      },
    ],
  }),
  {
    // Once per isolate, before its first answer. `sync` makes each stored client what this code
    // says (a redeploy with other redirect URIs, or a new secret, takes effect in new isolates);
    // a hashed secret is compared, not verified, so this costs no PBKDF2.
    setup: async (service, env) => {
      await service.clients.sync({
        clientId: 'web',
        clientSecret: secret(env, 'WEB_CLIENT_SECRET'),
        displayName: 'Example web app',
        redirectUris: env.WEB_REDIRECT_URIS.split(/\s+/).filter(Boolean),
        permissions: [
          'ept:authorization',
          'ept:token',
          'ept:logout',
          'ept:revocation',
          'gt:authorization_code',
          'gt:refresh_token',
          'rst:code',
          'scp:openid',
          'scp:profile',
          'scp:email',
          'scp:offline_access',
          'scp:api1',
        ],
      })
      await service.clients.sync({
        clientId: 'reporting-job',
        clientSecret: secret(env, 'SERVICE_CLIENT_SECRET'),
        displayName: 'Example service (client credentials)',
        permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
      })
    },
  },
)
