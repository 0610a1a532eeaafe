/**
 * Gatehouse as every benchmark server runs it (Node, Bun, Deno): the service with the bench
 * clients, a host interaction hook that signs in a fixed user, and the state a scenario needs
 * before the clock starts (authorization codes to redeem). Runtime neutral: Web APIs only.
 *
 * Environment read here: PORT, CODES (how many codes to pre-create), CODES_FILE, ACCESS_TOKEN_ALG,
 * ID_TOKEN_ALG (the web client's registered `idTokenSignedResponseAlg`).
 */
import {
  type ClientRegistration,
  type Store,
  type TokenServiceOptions,
  createTokenService,
  hashSecret,
} from '../../src/index.ts'
import {
  CODE_SCOPE,
  PKCE,
  SERVICE_CLIENT,
  SIGNIN_PASSWORD,
  SIGNIN_USERS,
  USER_SUB,
  WEB_CLIENT,
  signinUser,
} from '../fixtures.ts'

export interface GatehouseSetup {
  env: (name: string) => string | undefined
  writeTextFile: (path: string, text: string) => Promise<void>
  /** A store other than the default in-memory one (PostgreSQL, Redis). */
  store?: Store
  /** Runtime-specific service options, as the runtime's start script passes them. */
  serviceOptions?: Pick<TokenServiceOptions, 'secretDigest' | 'signer' | 'sha256'>
}

/**
 * The two bench clients as every Gatehouse server registers them: in process here, and in the
 * configuration file of `npm run start:workers` (servers/gatehouse_workers.ts). ID_TOKEN_ALG: the
 * web client's registered `idTokenSignedResponseAlg`.
 */
export function benchClients(env: (name: string) => string | undefined): ClientRegistration[] {
  return [
    {
      clientId: SERVICE_CLIENT.id,
      clientSecret: SERVICE_CLIENT.secret,
      permissions: ['ept:token', 'ept:introspection', 'gt:client_credentials', 'scp:api1'],
    },
    {
      clientId: WEB_CLIENT.id,
      clientSecret: WEB_CLIENT.secret,
      permissions: [
        'ept:authorization',
        'ept:token',
        'ept:introspection',
        'ept:revocation',
        'gt:authorization_code',
        'gt:refresh_token',
        'rst:code',
        'scp:openid',
        'scp:api1',
      ],
      redirectUris: [WEB_CLIENT.redirectUri],
      ...(env('ID_TOKEN_ALG') ? { idTokenSignedResponseAlg: env('ID_TOKEN_ALG') as 'EdDSA' } : {}),
    },
  ]
}

/** Builds the service, registers the clients and pre-creates codes; returns the service. */
export async function setupGatehouse(setup: GatehouseSetup) {
  const port = Number(setup.env('PORT') ?? '3000')
  // SIGNIN=1 (scenario signin_flow): the built-in sign-in page and SIGNIN_USERS built-in users
  // instead of the host hook, so each flow POSTs a username and password. One password hash
  // (PBKDF2, 600,000 iterations unless PASSWORD_ITERATIONS says otherwise) serves every user.
  const signin = setup.env('SIGNIN') === '1'
  const passwordHash = signin
    ? await hashSecret(SIGNIN_PASSWORD, Number(setup.env('PASSWORD_ITERATIONS') ?? '600000'))
    : ''
  const hostSignIn: Partial<TokenServiceOptions> = signin
    ? {
        users: Array.from({ length: SIGNIN_USERS }, (_, i) => ({
          sub: signinUser(i),
          username: signinUser(i),
          password: passwordHash,
        })),
      }
    : {
        // The host's user directory and sign-in: one fixed user, signed in without a page. This is
        // what an embedding application with its own session does (README "Sign-in").
        accounts: { findAccount: async (sub) => (sub === USER_SUB ? { sub } : undefined) },
        interaction: () => ({ login: { sub: USER_SUB, amr: ['pwd'] } }),
      }
  const count = Number(setup.env('CODES') ?? '0')
  const service = createTokenService({
    issuer: `http://127.0.0.1:${port}`,
    // The codes are all created before the clock starts, so every one of them is in flight at
    // once: the instance keeps them all, as it keeps the codes in flight between a sign-in and its
    // redemption. Every code is redeemed where it was issued (bench/README.md, "#44: the records an
    // instance wrote"); the memory store keeps no copy whatever this says.
    issuedRecordCache: Math.max(10_000, count),
    ...(setup.store ? { store: setup.store } : {}),
    ...setup.serviceOptions,
    // ACCESS_TOKEN_ALG (e.g. EdDSA): the access tokens' algorithm instead of the default ES256.
    ...(setup.env('ACCESS_TOKEN_ALG') ? { accessTokenSigningAlg: setup.env('ACCESS_TOKEN_ALG') as 'EdDSA' } : {}),
    // As the start scripts run it: the runtime's HTTP server holds bodies to their Content-Length.
    limits: { trustContentLength: true },
    ...hostSignIn,
  })
  for (const client of benchClients(setup.env)) await service.clients.ensure(client)
  await service.ready()

  const file = setup.env('CODES_FILE')
  if (count > 0 && file) {
    const codes = await createCodes(service.fetch, service.endpoints.authorization, count)
    await setup.writeTextFile(file, codes.join('\n'))
  }
  return service
}

/** The authorization request of every pre-created code (PKCE S256, `openid offline_access api1`). */
export function codeRequest(authorizationEndpoint: string): URL {
  const url = new URL(authorizationEndpoint)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: WEB_CLIENT.id,
    redirect_uri: WEB_CLIENT.redirectUri,
    scope: CODE_SCOPE,
    code_challenge: PKCE.challenge,
    code_challenge_method: 'S256',
  }).toString()
  return url
}

/**
 * Authorization codes through the real authorization endpoint: in process (`service.fetch`, no
 * socket) or over HTTP (a running server, given the cookie of a signed-in session). In process the
 * first request signs the user in through the hook and sets the session cookie; the following ones
 * carry that cookie, so each is what a signed-in browser's authorization request costs.
 * `parallel` requests at a time (over HTTP: a server on another process).
 */
export async function createCodes(
  fetch: (request: Request) => Promise<Response>,
  authorizationEndpoint: string,
  count: number,
  { cookie: signedIn = '', parallel = 1 }: { cookie?: string; parallel?: number } = {},
): Promise<string[]> {
  const url = codeRequest(authorizationEndpoint)
  let cookie = signedIn
  const codes: string[] = []
  const one = async (): Promise<void> => {
    const response = await fetch(new Request(url, { headers: cookie ? { cookie } : {}, redirect: 'manual' }))
    const location = response.headers.get('location')
    const code = location ? new URL(location).searchParams.get('code') : null
    if (!code)
      throw new Error(
        `authorization request ${codes.length} gave no code: ${response.status} ${location ?? (await response.text()).slice(0, 200)}`,
      )
    codes.push(code)
    if (!cookie) {
      cookie = response.headers
        .getSetCookie()
        .map((header) => header.split(';')[0])
        .join('; ')
    }
  }
  if (!cookie && count > 0) await one()
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (codes.length < count) await one()
    }),
  )
  return codes.slice(0, count)
}
