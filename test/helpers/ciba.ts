/**
 * #41 CIBA test helpers: the CIBA clients (poll, ping, a second poll client, a client without the
 * endpoint), a service whose `ciba.notify` hook records what the end-user was sent, and raw requests
 * to the backchannel authentication and token endpoints.
 */
import * as oauth from 'oauth4webapi'
import type { ClientRegistration, CibaNotification, TokenServiceOptions } from '../../src/index.ts'
import { basic, form } from './service.ts'
import { setup } from './flow.ts'

export const CIBA_GRANT = 'urn:openid:params:grant-type:ciba'
export const PING_ENDPOINT = 'https://agent.example.test/ciba-notify'

const PERMISSIONS = [
  'ept:backchannel_authentication',
  'ept:token',
  'ept:introspection',
  'gt:urn:openid:params:grant-type:ciba',
  'gt:refresh_token',
  'scp:openid',
  'scp:profile',
  'scp:email',
  'scp:offline_access',
]

export const CIBA_CLIENTS: Record<string, ClientRegistration> = {
  agent: { clientId: 'agent', clientSecret: 'agent-secret', displayName: 'Travel Agent', permissions: PERMISSIONS },
  agent2: { clientId: 'agent2', clientSecret: 'agent2-secret', displayName: 'Other Agent', permissions: PERMISSIONS },
  pinger: {
    clientId: 'pinger',
    clientSecret: 'pinger-secret',
    displayName: 'Ping Agent',
    permissions: PERMISSIONS,
    backchannelTokenDeliveryMode: 'ping',
    backchannelClientNotificationEndpoint: PING_ENDPOINT,
  },
  noept: {
    clientId: 'noept',
    clientSecret: 'noept-secret',
    permissions: ['ept:token', 'gt:urn:openid:params:grant-type:ciba', 'scp:openid'],
  },
}

/** A service with the CIBA clients; `sent` collects what `ciba.notify` got. */
export async function cibaSetup(options: Partial<TokenServiceOptions> = {}) {
  const sent: CibaNotification[] = []
  const ctx = await setup({
    ciba: { notify: (notification) => void sent.push(notification) },
    ...options,
  })
  for (const client of Object.values(CIBA_CLIENTS)) await ctx.service.clients.ensure(client)
  return { ...ctx, sent }
}
export type CibaCtx = Awaited<ReturnType<typeof cibaSetup>>

/** POST /connect/ciba as `clientId` (client_secret_basic). */
export function cibaRequest(ctx: CibaCtx, params: Record<string, string>, clientId = 'agent'): Promise<Response> {
  const headers = { authorization: basic(clientId, `${clientId}-secret`) }
  return ctx.service.fetch(form(ctx.service.endpoints.backchannelAuthentication, params, headers))
}

/** A started request (200): its answer and the notification the end-user got. */
export async function startCiba(ctx: CibaCtx, params: Record<string, string> = {}, clientId = 'agent') {
  const response = await cibaRequest(ctx, { scope: 'openid profile', login_hint: 'alice', ...params }, clientId)
  if (response.status !== 200) throw new Error(`CIBA request failed: ${response.status} ${await response.text()}`)
  const body = (await response.json()) as { auth_req_id: string; expires_in: number; interval: number }
  const notification = ctx.sent.at(-1)
  if (!notification) throw new Error('the end-user was not notified')
  return { ...body, notification }
}

/** One poll of the token endpoint as `clientId`. */
export function pollCiba(ctx: CibaCtx, authReqId: string, clientId = 'agent'): Promise<Response> {
  const headers = { authorization: basic(clientId, `${clientId}-secret`) }
  return ctx.service.fetch(
    form(ctx.service.endpoints.token, { grant_type: CIBA_GRANT, auth_req_id: authReqId }, headers),
  )
}

/** oauth4webapi's client and auth for a CIBA client. */
export function cibaClient(clientId: string): { client: oauth.Client; auth: oauth.ClientAuth } {
  return { client: { client_id: clientId }, auth: oauth.ClientSecretBasic(`${clientId}-secret`) }
}
