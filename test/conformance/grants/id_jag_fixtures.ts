/**
 * The service, clients and requests of the ID-JAG issuance tests (#45, identity provider side):
 * this service as the enterprise IdP, `mcp-client` (the client that signs users in and asks for
 * ID-JAGs), `other-app` (another client of the same users) and `no-exchange` (lacks the
 * token-exchange permission); two configured target authorization servers, both entries
 * `mcp-client`'s (#45 review item 1: `other-app` has none).
 */
import * as oauth from 'oauth4webapi'
import { afterEach } from 'vitest'
import type { TokenServiceOptions } from '../../../src/config/index.ts'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { Browser } from '../../helpers/browser.ts'
import { setup, signIn } from '../../helpers/flow.ts'
import { RU, clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

export const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const AT = 'urn:ietf:params:oauth:token-type:access_token'
export const IDT = 'urn:ietf:params:oauth:token-type:id_token'
export const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag'
/** The MCP server's authorization server: scopes and resources listed. */
export const MCP_AS = 'https://mcp-as.example.test'
export const MCP_RESOURCE = 'https://mcp.example.test/mcp'
/** A second target that lists no resources. */
export const WIKI_AS = 'https://wiki-as.example.test'

export const AUDIENCES: NonNullable<NonNullable<TokenServiceOptions['identityAssertion']>['audiences']> = [
  {
    issuer: MCP_AS,
    client: 'mcp-client',
    clientId: 'mcp-client-at-mcp',
    scopes: ['tools.read', 'tools.call'],
    resources: [MCP_RESOURCE, 'https://mcp.example.test/other'],
  },
  { issuer: WIKI_AS, client: 'mcp-client', clientId: 'wiki-client', scopes: ['wiki.read'] },
]

const EXCHANGE = `gt:${GRANT}`
const USER_PERMISSIONS = [
  'ept:authorization',
  'ept:token',
  'ept:revocation',
  'ept:introspection',
  'ept:logout',
  'gt:authorization_code',
  'gt:refresh_token',
  'rst:code',
  'scp:openid',
  'scp:email',
  'scp:profile',
  'scp:api1',
]
const clientOf = (clientId: string, permissions: string[]): ClientRegistration => ({
  clientId,
  clientSecret: `${clientId}-secret`,
  permissions,
  redirectUris: [RU],
})
export const CLIENTS = [
  clientOf('mcp-client', [...USER_PERMISSIONS, EXCHANGE]),
  clientOf('other-app', [...USER_PERMISSIONS, EXCHANGE]),
  clientOf('no-exchange', USER_PERMISSIONS),
]

/** Memory and PostgreSQL (when DATABASE_URL is set). */
export const ID_JAG_STORES = STORES.filter((store) => store.name === 'memory' || store.name === 'postgres')

/** The service on `kind`'s store, its clients registered; `dispose` closes the store. */
export async function start(kind: (typeof STORES)[number], options: Partial<TokenServiceOptions> = {}) {
  const time = clock(Math.floor(Date.now() / 1000))
  const opened: TestStore = await kind.create(time.now)
  const ctx = await setup({
    store: opened.store,
    now: time.now,
    ...options,
    identityAssertion: { audiences: AUDIENCES, ...options.identityAssertion },
  })
  for (const client of CLIENTS) await ctx.service.clients.ensure(client)
  return { ...ctx, time, dispose: () => opened.dispose() }
}
export type Ctx = Awaited<ReturnType<typeof start>>

/** alice signs in to `clientId` (in a browser of her own unless given) with `scope`: its tokens. */
export async function signInTo(ctx: Ctx, clientId: string, scope: string, browser = new Browser(ctx.service.fetch)) {
  const { result } = await signIn(
    { ...ctx, browser },
    { client: { client_id: clientId }, auth: oauth.ClientSecretBasic(`${clientId}-secret`), scope },
  )
  return result
}

/** A token exchange request as `clientId`: the raw response. */
export function exchangeRequest(
  ctx: Ctx,
  parameters: Record<string, string> | string[][],
  clientId = 'mcp-client',
): Promise<Response> {
  return oauth.genericTokenEndpointRequest(
    ctx.as,
    { client_id: clientId },
    oauth.ClientSecretBasic(`${clientId}-secret`),
    GRANT,
    parameters,
    ctx.opts,
  )
}

/** The parameters of an ID-JAG request for `idToken` at `audience`, plus `extra`. */
export function idJagParams(idToken: string | undefined, audience = MCP_AS, extra: Record<string, string> = {}) {
  return {
    requested_token_type: ID_JAG,
    subject_token: idToken as string,
    subject_token_type: IDT,
    audience,
    ...extra,
  }
}

/** The status and JSON body of a response. */
export async function answer(response: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** A `start` for one describe block on `kind`'s store: every Ctx it opens is disposed after each test. */
export function startPerTest(
  kind: (typeof STORES)[number],
): (options?: Partial<TokenServiceOptions>) => ReturnType<typeof start> {
  const opened: Ctx[] = []
  afterEach(async () => {
    for (const ctx of opened.splice(0)) await ctx.dispose()
  })
  return async (options = {}) => {
    const ctx = await start(kind, options)
    opened.push(ctx)
    return ctx
  }
}
