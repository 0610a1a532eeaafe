/**
 * Bench server: node-oidc-provider (npm `oidc-provider` v9) on node:http, configured as the
 * equivalent of Gatehouse's bench setup:
 * - the same two confidential clients (client_secret_basic), scopes openid, offline_access, api1;
 * - client_credentials and code/refresh access tokens as ES256 JWTs: v9 issues JWTs only for a
 *   resource server, so `api1` is the resource `urn:bench:api1` (accessTokenFormat 'jwt', ES256);
 *   ID tokens RS256 like Gatehouse's default;
 * - a client_credentials token requested without `resource` is opaque: the introspection
 *   scenario uses that one, because node-oidc-provider cannot introspect its JWTs;
 * - refresh tokens rotate on every use (Gatehouse always rotates; the default only rotates
 *   public clients' tokens), codes live 300 s like Gatehouse's;
 * - an unbounded Map store, like Gatehouse's memory store: the bundled MemoryAdapter is an LRU
 *   capped at 1000 entries, which would evict pre-created codes under load.
 * - DPoP (RFC 9449) enabled, for the client_credentials_dpop scenario.
 * Codes are pre-created with the provider's own models (Grant + AuthorizationCode), see
 * bench/README.md. Environment: PORT, HOST, CODES, CODES_FILE, and STORE=postgres (with
 * DATABASE_URL): the models in PostgreSQL instead (oidc_provider_pg.ts, schema `oidc_bench`,
 * dropped first), the peer on the database of Gatehouse's PostgreSQL rows. Prints `READY {json}`.
 */
import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { exportJWK, generateKeyPair } from 'jose'
import { Provider, errors } from 'oidc-provider'
import { API_RESOURCE, API_SCOPE, CODE_SCOPE, PKCE, SERVICE_CLIENT, USER_SUB, WEB_CLIENT } from '../fixtures.ts'
import { postgresAdapter } from './oidc_provider_pg.ts'

/**
 * SIGNIN=1 (scenario signin_flow): its development sign-in pages (`devInteractions`: a form that
 * accepts any login and checks no password), with consent skipped for the first-party web client
 * the documented way (`loadExistingGrant` creates the grant, as Gatehouse's implicit consent does)
 * and a refresh token issued without `prompt=consent` (`issueRefreshToken`), like Gatehouse.
 */
const signin = process.env.SIGNIN === '1'
const signinOptions = signin
  ? {
      findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
      loadExistingGrant: async (ctx: {
        oidc: {
          provider: Provider
          client?: { clientId: string }
          session?: { accountId?: string; grantIdFor(clientId: string): string | undefined }
          result?: { consent?: { grantId?: string } }
        }
      }) => {
        const { provider: p, client, session } = ctx.oidc
        if (!client || !session?.accountId) return undefined
        const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId)
        if (grantId) return p.Grant.find(grantId)
        const grant = new p.Grant({ accountId: session.accountId, clientId: client.clientId })
        // api1 is both a configured scope and the resource's scope: the consent check wants both.
        grant.addOIDCScope(`openid offline_access ${API_SCOPE}`)
        grant.addResourceScope(API_RESOURCE, API_SCOPE)
        await grant.save()
        return grant
      },
      issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
        client.grantTypeAllowed('refresh_token'),
    }
  : {}

interface Entry {
  payload: Record<string, unknown>
  /** Epoch ms; Infinity when the model has no expiry. */
  expiresAt: number
}

const entries = new Map<string, Entry>()
const grants = new Map<string, Set<string>>()
const uids = new Map<string, string>()

/** A storage adapter over one process-wide Map (node-oidc-provider's adapter interface). */
class MapAdapter {
  readonly #model: string
  constructor(model: string) {
    this.#model = model
  }
  #key(id: string) {
    return `${this.#model}:${id}`
  }
  async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
    const key = this.#key(id)
    entries.set(key, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY })
    const grantId = payload.grantId as string | undefined
    if (grantId) {
      const members = grants.get(grantId) ?? new Set<string>()
      members.add(key)
      grants.set(grantId, members)
    }
    if (this.#model === 'Session') uids.set(payload.uid as string, id)
  }
  async find(id: string) {
    const key = this.#key(id)
    const entry = entries.get(key)
    if (!entry) return undefined
    if (entry.expiresAt <= Date.now()) {
      entries.delete(key)
      return undefined
    }
    return entry.payload
  }
  async findByUid(uid: string) {
    const id = uids.get(uid)
    return id === undefined ? undefined : this.find(id)
  }
  async findByUserCode() {
    return undefined
  }
  async consume(id: string) {
    const entry = entries.get(this.#key(id))
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000)
  }
  async destroy(id: string) {
    entries.delete(this.#key(id))
  }
  async revokeByGrantId(grantId: string) {
    for (const key of grants.get(grantId) ?? []) entries.delete(key)
    grants.delete(grantId)
  }
}

// ACCESS_TOKEN_ALG / ID_TOKEN_ALG (scenarios *_eddsa): the JWT access tokens' alg and the web
// client's id_token_signed_response_alg, as Gatehouse's bench server takes them.
const accessTokenAlg = (process.env.ACCESS_TOKEN_ALG ?? 'ES256') as 'ES256' | 'EdDSA'
const idTokenAlg = process.env.ID_TOKEN_ALG as 'ES256' | 'EdDSA' | undefined

async function signingKey(alg: 'ES256' | 'RS256' | 'EdDSA') {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  })
  return { ...(await exportJWK(privateKey)), alg, use: 'sig', kid: `bench-${alg.toLowerCase()}` }
}

const port = Number(process.env.PORT)
const databaseUrl = process.env.DATABASE_URL
if (process.env.STORE === 'postgres' && !databaseUrl) throw new Error('STORE=postgres needs DATABASE_URL')
const adapter =
  process.env.STORE === 'postgres' && databaseUrl ? await postgresAdapter(databaseUrl, 'oidc_bench') : MapAdapter
const provider = new Provider(`http://127.0.0.1:${port}`, {
  adapter,
  clients: [
    {
      client_id: SERVICE_CLIENT.id,
      client_secret: SERVICE_CLIENT.secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: API_SCOPE,
    },
    {
      client_id: WEB_CLIENT.id,
      client_secret: WEB_CLIENT.secret,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [WEB_CLIENT.redirectUri],
      scope: CODE_SCOPE,
      ...(idTokenAlg ? { id_token_signed_response_alg: idTokenAlg } : {}),
    },
  ],
  jwks: { keys: [await signingKey('RS256'), await signingKey('ES256'), await signingKey('EdDSA')] },
  cookies: { keys: ['bench-cookie-signing-key-0123456789'] },
  scopes: ['openid', 'offline_access', API_SCOPE],
  findAccount: async (_ctx, sub) => (sub === USER_SUB ? { accountId: sub, claims: async () => ({ sub }) } : undefined),
  rotateRefreshToken: true,
  ...(signinOptions as object),
  ttl: {
    AccessToken: 3600,
    ClientCredentials: 3600,
    AuthorizationCode: 300,
    IdToken: 3600,
    RefreshToken: 1_209_600,
    Grant: 7_776_000,
  },
  features: {
    devInteractions: { enabled: signin },
    clientCredentials: { enabled: true },
    // Scenario client_credentials_dpop (#21): DPoP proofs (RFC 9449) at the token endpoint, no
    // server nonce (as Gatehouse's default); replayed jtis are caught through the adapter.
    dPoP: { enabled: true },
    introspection: {
      enabled: true,
      // Gatehouse's policy: the token was issued to the caller, or the caller is its audience.
      allowedPolicy: async (_ctx, client, token) =>
        token.clientId === client.clientId || (token as { aud?: unknown }).aud === client.clientId,
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (resource !== API_RESOURCE) throw new errors.InvalidTarget()
        return {
          scope: API_SCOPE,
          audience: API_SCOPE,
          accessTokenTTL: 3600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: accessTokenAlg } },
        }
      },
    },
  },
})

/** Codes as the authorization endpoint would leave them after sign-in and consent. */
async function createCodes(count: number): Promise<string[]> {
  const client = await provider.Client.find(WEB_CLIENT.id)
  if (!client) throw new Error('web client missing')
  const authTime = Math.floor(Date.now() / 1000)
  const one = async (): Promise<string> => {
    const grant = new provider.Grant({ accountId: USER_SUB, clientId: WEB_CLIENT.id })
    grant.addOIDCScope('openid offline_access')
    grant.addResourceScope(API_RESOURCE, API_SCOPE)
    const grantId = await grant.save()
    // The fields the authorization endpoint sets (lib/helpers/process_response_types.js); the
    // @types package wrongly requires `gty`, which codes do not carry.
    const fields = {
      accountId: USER_SUB,
      client,
      grantId,
      authTime,
      amr: ['pwd'],
      redirectUri: WEB_CLIENT.redirectUri,
      scope: CODE_SCOPE,
      resource: API_RESOURCE,
      codeChallenge: PKCE.challenge,
      codeChallengeMethod: 'S256',
    }
    const code = new provider.AuthorizationCode(fields as ConstructorParameters<typeof provider.AuthorizationCode>[0])
    return code.save()
  }
  // 64 at a time: a database adapter then seeds in seconds, not minutes.
  const codes: string[] = []
  while (codes.length < count) {
    codes.push(...(await Promise.all(Array.from({ length: Math.min(64, count - codes.length) }, one))))
  }
  return codes
}

const count = Number(process.env.CODES ?? '0')
if (count > 0 && process.env.CODES_FILE) await writeFile(process.env.CODES_FILE, (await createCodes(count)).join('\n'))
const server = createServer(provider.callback())
await new Promise<void>((resolve) => server.listen(port, process.env.HOST ?? '127.0.0.1', resolve))
console.log(`READY ${JSON.stringify({ pid: process.pid, runtime: `node ${process.version}` })}`)
