/**
 * Fixtures of the private_key_jwt tests (RFC 7523, OpenID Connect Core §9): key pairs per alg, a
 * service whose clock follows real time (oauth4webapi and openid-client stamp assertions with the
 * real clock), clients registered for private_key_jwt, a JWKS served over HTTP on 127.0.0.1, and
 * hand-signed assertions for the refusals.
 */
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { expect } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { JWT_BEARER_ASSERTION_TYPE } from '../../../src/client_auth/client_assertion.ts'
import { type TokenServiceOptions, createTokenService } from '../../../src/index.ts'
import { CLIENTS, ISSUER, USERS, form, inProcess } from '../../helpers/service.ts'

export { JWT_BEARER_ASSERTION_TYPE }
export const TOKEN = `${ISSUER}/connect/token`
export const INTROSPECTION = `${ISSUER}/connect/introspect`
export const REVOCATION = `${ISSUER}/connect/revoke`

/** A client's key pair: the private CryptoKey it signs with, the public JWK it registers. */
export interface ClientKey {
  alg: string
  kid: string
  privateKey: CryptoKey
  jwk: JWK
}

export async function clientKey(alg: string, kid = `${alg.toLowerCase()}-${crypto.randomUUID().slice(0, 8)}`) {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid }
  return { alg, kid, privateKey, jwk } satisfies ClientKey
}

/** oauth4webapi's private_key_jwt client authentication with this key (`aud` = the issuer). */
export function keyAuth(key: ClientKey): oauth.ClientAuth {
  return oauth.PrivateKeyJwt({ key: key.privateKey, kid: key.kid })
}

/** A clock in epoch seconds that follows real time, moved forward by `advance`. */
export function liveClock() {
  let offset = 0
  return {
    now: () => Math.floor(Date.now() / 1000) + offset,
    advance(seconds: number) {
      offset += seconds
    },
  }
}

export const PERMISSIONS = ['ept:token', 'ept:introspection', 'ept:revocation', 'gt:client_credentials', 'scp:api1']

/** A host-registered private_key_jwt client. */
export function keyClient(clientId: string, keys: { jwks?: { keys: JWK[] }; jwksUri?: string }): ClientRegistration {
  return {
    clientId,
    tokenEndpointAuthMethod: 'private_key_jwt',
    permissions: PERMISSIONS,
    ...(keys.jwks ? { jwks: keys.jwks as ClientRegistration['jwks'] } : {}),
    ...(keys.jwksUri ? { jwksUri: keys.jwksUri } : {}),
  }
}

/** A service on the live clock with the usual test clients plus `clients`. */
export async function keyService(clients: ClientRegistration[], options: Partial<TokenServiceOptions> = {}) {
  const clock = liveClock()
  const service = createTokenService({
    issuer: ISSUER,
    now: clock.now,
    users: USERS,
    secretHashIterations: 1000,
    logger: { warn() {}, error() {} },
    ...options,
  })
  for (const client of [...Object.values(CLIENTS), ...clients]) await service.clients.ensure(client)
  await service.ready()
  const as: oauth.AuthorizationServer = {
    issuer: ISSUER,
    token_endpoint: TOKEN,
    introspection_endpoint: INTROSPECTION,
    revocation_endpoint: REVOCATION,
  }
  return { service, clock, as, opts: inProcess(service.fetch) }
}

/** client_credentials through oauth4webapi; resolves to the parsed response or rejects with its error. */
export async function clientCredentials(
  setup: Awaited<ReturnType<typeof keyService>>,
  clientId: string,
  auth: oauth.ClientAuth,
  parameters: Record<string, string> = { scope: 'api1' },
) {
  const client: oauth.Client = { client_id: clientId }
  const response = await oauth.clientCredentialsGrantRequest(setup.as, client, auth, parameters, setup.opts)
  return oauth.processClientCredentialsResponse(setup.as, client, response)
}

/** Signs an assertion for `clientId` at `now` (epoch s); a claim set to undefined is left out. */
export async function signAssertion(
  key: ClientKey,
  clientId: string,
  now: number,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const payload: Record<string, unknown> = {
    iss: clientId,
    sub: clientId,
    aud: ISSUER,
    jti: crypto.randomUUID(),
    iat: now,
    exp: now + 60,
    ...claims,
  }
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name]
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, ...header }).sign(key.privateKey)
}

/** A token-endpoint form request carrying `assertion` (plus `params`, `headers`). */
export function assertionRequest(
  assertion: string,
  params: Record<string, string> = {},
  headers: Record<string, string> = {},
  url = TOKEN,
): Request {
  return form(
    url,
    {
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
      client_assertion: assertion,
      ...params,
    },
    headers,
  )
}

/** A JWK set served over plain HTTP on 127.0.0.1 (loopback: allowed for host-registered clients). */
export async function jwksServer(initial: JWK[]) {
  let keys = initial
  let fetches = 0
  const server: Server = createServer((_req, res) => {
    fetches++
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ keys }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`,
    serve(next: JWK[]) {
      keys = next
    },
    get fetches() {
      return fetches
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** The JSON error body of a response. */
export async function errorOf(response: Response): Promise<{ error: string; error_description?: string }> {
  return (await response.json()) as { error: string; error_description?: string }
}

/**
 * The error body of a request oauth4webapi refused: a 401 with `WWW-Authenticate` rejects with a
 * WWWAuthenticateChallengeError (TOK-09), any other error with a ResponseBodyError.
 */
export async function refusal(promise: Promise<unknown>): Promise<{ error: string; error_description?: string }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    expect(err.response.headers.get('www-authenticate')).toMatch(/^Basic /)
    return errorOf(err.response)
  }
  if (err instanceof oauth.ResponseBodyError) return err.cause as { error: string; error_description?: string }
  throw new Error(`expected an OAuth error response, got ${String(err)}`)
}
