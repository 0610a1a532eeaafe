/**
 * The clients, sign-in and requests of the token exchange tests (#29, #39): an app the user signs in
 * to, agents that exchange its tokens, and oauth4webapi's generic grant request.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { expect } from 'vitest'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import { setup, signIn } from '../../helpers/flow.ts'
import { RU } from '../../helpers/service.ts'

export const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const AT = 'urn:ietf:params:oauth:token-type:access_token'
export const IDT = 'urn:ietf:params:oauth:token-type:id_token'
export const MAIL = 'https://mail.example.test/'
export const CAL = 'https://calendar.example.test/'
export const SCOPES = [
  { name: 'mail.read', audience: MAIL },
  { name: 'calendar.read', audience: CAL },
]

/** The app the user signs in to: its tokens are the subject tokens. */
export const APP: ClientRegistration = {
  clientId: 'app',
  clientSecret: 'app-secret',
  permissions: [
    'ept:authorization',
    'ept:token',
    'ept:revocation',
    'gt:authorization_code',
    'gt:refresh_token',
    'rst:code',
    'scp:openid',
    'scp:profile',
    'scp:api1',
    'scp:mail.read',
    'scp:calendar.read',
  ],
  redirectUris: [RU],
}
export const EXCHANGE = 'gt:urn:ietf:params:oauth:grant-type:token-exchange'
/**
 * The agent: may exchange for api1 and mail.read (not calendar.read, not profile). It may also sign
 * users in and get client credentials tokens of its own: its own tokens are the actor tokens it may use.
 */
export const AGENT: ClientRegistration = {
  clientId: 'agent',
  clientSecret: 'agent-secret',
  permissions: [
    'ept:authorization',
    'ept:token',
    'ept:introspection',
    'ept:revocation',
    'ept:logout',
    'gt:authorization_code',
    'gt:client_credentials',
    'gt:refresh_token',
    'rst:code',
    EXCHANGE,
    'scp:openid',
    'scp:api1',
    'scp:mail.read',
  ],
  redirectUris: [RU],
}
/** A second agent, downstream of the first (nested delegation). */
export const AGENT2: ClientRegistration = {
  clientId: 'agent2',
  clientSecret: 'agent2-secret',
  permissions: ['ept:token', 'ept:introspection', EXCHANGE, 'scp:mail.read'],
}
/** Holds the scopes but not the grant. */
export const NO_EXCHANGE: ClientRegistration = {
  clientId: 'plain',
  clientSecret: 'plain-secret',
  permissions: ['ept:token', 'scp:api1', 'scp:mail.read'],
}

export const USER_SCOPE = 'openid profile api1 mail.read'

export async function start(options: Parameters<typeof setup>[0] = {}) {
  const ctx = await setup({ scopes: SCOPES, ...options })
  for (const client of [APP, AGENT, AGENT2, NO_EXCHANGE]) await ctx.service.clients.ensure(client)
  const user = await signIn(ctx, {
    client: { client_id: 'app' },
    auth: oauth.ClientSecretBasic('app-secret'),
    scope: USER_SCOPE,
  })
  return { ...ctx, user: user.result }
}
export type Ctx = Awaited<ReturnType<typeof start>>

/** The exchange as `clientId` through oauth4webapi; the raw response. */
export function exchangeRequest(
  ctx: Ctx,
  parameters: Record<string, string> | string[][],
  clientId = 'agent',
  options: { DPoP?: oauth.DPoPHandle } = {},
): Promise<Response> {
  const auth = oauth.ClientSecretBasic(`${clientId}-secret`)
  return oauth.genericTokenEndpointRequest(ctx.as, { client_id: clientId }, auth, GRANT, parameters, {
    ...ctx.opts,
    ...options,
  })
}

/** A successful exchange, processed by oauth4webapi; the response body and the token's claims. */
export async function exchange(
  ctx: Ctx,
  parameters: Record<string, string> | string[][],
  clientId = 'agent',
  options: { DPoP?: oauth.DPoPHandle } = {},
) {
  const response = await exchangeRequest(ctx, parameters, clientId, options)
  const raw = (await response.clone().json()) as Record<string, unknown>
  const result = await oauth.processGenericTokenEndpointResponse(ctx.as, { client_id: clientId }, response)
  return { raw, result, claims: decodeJwt(result.access_token) }
}

/** An exchange that must fail with `error` (status 400 unless told). */
export async function refused(
  ctx: Ctx,
  parameters: Record<string, string> | string[][],
  error: string,
  clientId = 'agent',
  status = 400,
) {
  const response = await exchangeRequest(ctx, parameters, clientId)
  await expect(
    oauth.processGenericTokenEndpointResponse(ctx.as, { client_id: clientId }, response),
  ).rejects.toMatchObject({ error, status })
}

export function subject(ctx: Ctx): Record<string, string> {
  return { subject_token: ctx.user.access_token, subject_token_type: AT }
}

/** Introspects `token` as `agent`. */
export async function introspect(ctx: Ctx, token: string, clientId = 'agent') {
  const response = await oauth.introspectionRequest(
    ctx.as,
    { client_id: clientId },
    oauth.ClientSecretBasic(`${clientId}-secret`),
    token,
    ctx.opts,
  )
  return oauth.processIntrospectionResponse(ctx.as, { client_id: clientId }, response)
}
