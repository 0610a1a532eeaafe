/**
 * Fixtures of the jwt-bearer grant with ID-JAGs (#45, draft-ietf-oauth-identity-assertion-authz-grant):
 * a test identity provider (an ES256 key pair, its JWK set inline or served over HTTP on
 * 127.0.0.1), hand-signed ID-JAGs, a service trusting it on a given store, the MCP client
 * registered here, and the token request as the client sends it (oauth4webapi).
 */
import { SignJWT, decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import type { TokenServiceOptions } from '../../../src/index.ts'
import type { GatehouseEvent } from '../../../src/events/index.ts'
import type { Store } from '../../../src/storage/types.ts'
import { ISSUER, clock, inProcess, makeService } from '../../helpers/service.ts'
import { type ClientKey, clientKey } from '../client_auth/private_key_jwt_fixtures.ts'

export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
export const IDP = 'https://idp.example.test'
/** The MCP server: the resource of the `mcp:tools` and `mcp:admin` scopes. */
export const MCP = 'https://mcp.example.test/mcp'
export const TOKEN = `${ISSUER}/connect/token`
export const ID_JAG_TYP = 'oauth-id-jag+jwt'

/** The MCP client registered here (confidential), allowed the grant and two of the three scopes. */
export const MCP_CLIENT = {
  clientId: 'mcp-client',
  clientSecret: 'mcp-client-secret',
  permissions: [
    'ept:token',
    'ept:introspection',
    'ept:revocation',
    `gt:${JWT_BEARER}`,
    'gt:refresh_token',
    'scp:mcp:tools',
    'scp:api1',
  ],
}
/** A client with everything but the grant's permission. */
export const NO_GRANT_CLIENT = {
  clientId: 'no-jag',
  clientSecret: 'no-jag-secret',
  permissions: ['ept:token', 'scp:mcp:tools'],
}

export function idpKey(kid?: string): Promise<ClientKey> {
  return clientKey('ES256', kid)
}

/**
 * An ID-JAG signed with `key`: typ oauth-id-jag+jwt, for alice (`email`) and the MCP client, for
 * this server, resource MCP, scope mcp:tools, five minutes. A claim set to undefined is left out;
 * `header` overrides the protected header.
 */
export function signIdJag(
  key: ClientKey,
  now: number,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const payload: Record<string, unknown> = {
    iss: IDP,
    sub: 'idp-alice',
    aud: ISSUER,
    client_id: MCP_CLIENT.clientId,
    jti: crypto.randomUUID(),
    iat: now,
    exp: now + 300,
    auth_time: now - 60,
    scope: 'mcp:tools',
    resource: MCP,
    email: 'alice@example.com',
    ...claims,
  }
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name]
  return new SignJWT(payload)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: ID_JAG_TYP, ...header })
    .sign(key.privateKey)
}

export interface JagSetup {
  issuers?: NonNullable<TokenServiceOptions['identityAssertion']>['issuers']
  key?: ClientKey
  options?: Partial<TokenServiceOptions>
}

/** A service on `store` trusting the test identity provider (its key inline unless `issuers` says otherwise). */
export async function jagService(store: Store, setup: JagSetup = {}) {
  const time = clock(Math.floor(Date.now() / 1000))
  const key = setup.key ?? (await idpKey())
  const events: GatehouseEvent[] = []
  const { identityAssertion, ...rest } = setup.options ?? {}
  const { service } = await makeService({
    store,
    now: time.now,
    throttle: false,
    scopes: [
      { name: 'mcp:tools', audience: MCP },
      { name: 'mcp:admin', audience: MCP },
    ],
    onEvent: (event) => void events.push(event),
    identityAssertion: {
      issuers: setup.issuers ?? [{ issuer: IDP, jwks: { keys: [key.jwk as Record<string, unknown>] } }],
      ...identityAssertion,
    },
    ...rest,
  })
  for (const client of [MCP_CLIENT, NO_GRANT_CLIENT]) await service.clients.ensure(client)
  const as: oauth.AuthorizationServer = {
    issuer: ISSUER,
    token_endpoint: TOKEN,
    introspection_endpoint: `${ISSUER}/connect/introspect`,
  }
  return { service, time, key, events, as, opts: inProcess(service.fetch) }
}
export type JagCtx = Awaited<ReturnType<typeof jagService>>

/** The jwt-bearer token request of `client` (client_secret_basic) with `assertion` and `params`, as oauth4webapi sends it. */
export function redeemRequest(
  ctx: JagCtx,
  assertion: string,
  params: Record<string, string> = {},
  client: { clientId: string; clientSecret: string } = MCP_CLIENT,
): Promise<Response> {
  return oauth.genericTokenEndpointRequest(
    ctx.as,
    { client_id: client.clientId },
    oauth.ClientSecretBasic(client.clientSecret),
    JWT_BEARER,
    { assertion, ...params },
    ctx.opts,
  )
}

/** A redemption's status and JSON body. */
export async function redeem(
  ctx: JagCtx,
  assertion: string,
  params: Record<string, string> = {},
  client: { clientId: string; clientSecret: string } = MCP_CLIENT,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await redeemRequest(ctx, assertion, params, client)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** The claims of the access token of a successful redemption. */
export function accessClaims(body: Record<string, unknown>): Record<string, unknown> {
  return decodeJwt(String(body.access_token)) as Record<string, unknown>
}
