/**
 * Gatehouse as every benchmark server runs it (Node, Bun, Deno): the service with the bench
 * clients, a host interaction hook that signs in a fixed user, and the state a scenario needs
 * before the clock starts (authorization codes to redeem). Runtime neutral: Web APIs only.
 *
 * Environment read here: PORT, CODES (how many codes to pre-create), CODES_FILE, ACCESS_TOKEN_ALG,
 * ID_TOKEN_ALG (the web client's registered `idTokenSignedResponseAlg`).
 */
import { type Store, type TokenServiceOptions, createTokenService, hashSecret } from '../../src/index.ts'
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
  const service = createTokenService({
    issuer: `http://127.0.0.1:${port}`,
    ...(setup.store ? { store: setup.store } : {}),
    ...setup.serviceOptions,
    // ACCESS_TOKEN_ALG (e.g. EdDSA): the access tokens' algorithm instead of the default ES256.
    ...(setup.env('ACCESS_TOKEN_ALG') ? { accessTokenSigningAlg: setup.env('ACCESS_TOKEN_ALG') as 'EdDSA' } : {}),
    // As the start scripts run it: the runtime's HTTP server holds bodies to their Content-Length.
    limits: { trustContentLength: true },
    ...hostSignIn,
  })
  await service.clients.ensure({
    clientId: SERVICE_CLIENT.id,
    clientSecret: SERVICE_CLIENT.secret,
    permissions: ['ept:token', 'ept:introspection', 'gt:client_credentials', 'scp:api1'],
  })
  await service.clients.ensure({
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
    ...(setup.env('ID_TOKEN_ALG') ? { idTokenSignedResponseAlg: setup.env('ID_TOKEN_ALG') as 'EdDSA' } : {}),
  })
  await service.ready()

  const count = Number(setup.env('CODES') ?? '0')
  const file = setup.env('CODES_FILE')
  if (count > 0 && file) await setup.writeTextFile(file, (await createCodes(service, count)).join('\n'))
  return service
}

/**
 * Authorization codes through the real authorization endpoint, in process (no socket): the first
 * request signs the user in through the hook and sets the session cookie; the following ones
 * carry that cookie, so each is what a signed-in browser's authorization request costs.
 */
async function createCodes(service: ReturnType<typeof createTokenService>, count: number): Promise<string[]> {
  const url = new URL(service.endpoints.authorization)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: WEB_CLIENT.id,
    redirect_uri: WEB_CLIENT.redirectUri,
    scope: CODE_SCOPE,
    code_challenge: PKCE.challenge,
    code_challenge_method: 'S256',
  }).toString()
  let cookie = ''
  const codes: string[] = []
  for (let i = 0; i < count; i++) {
    const response = await service.fetch(new Request(url, { headers: cookie ? { cookie } : {} }))
    const location = response.headers.get('location')
    const code = location ? new URL(location).searchParams.get('code') : null
    if (!code)
      throw new Error(
        `authorization request ${i} gave no code: ${response.status} ${location ?? (await response.text()).slice(0, 200)}`,
      )
    codes.push(code)
    if (!cookie) {
      cookie = response.headers
        .getSetCookie()
        .map((header) => header.split(';')[0])
        .join('; ')
    }
  }
  return codes
}
