/**
 * The device authorization grant (RFC 8628) driven by oauth4webapi: the device clients, starting
 * an authorization, polling the token endpoint, and the end-user's decision.
 *
 * The decision is made through the service's store (`deviceCodes.findByUserCode` + `decide`), a
 * stand-in for the verification pages at /connect/verify: `approveDevice` and `denyDevice` are
 * the only places that know how, so swapping them for the pages changes nothing else.
 */
import * as oauth from 'oauth4webapi'
import type { ClientRegistration } from '../../src/clients/index.ts'
import type { Store } from '../../src/storage/types.ts'
import { normalizeUserCode } from '../../src/tokens/user_code.ts'
import type { inProcess } from './service.ts'

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
export const MAIL = 'https://mail.example.test/'
/** An API scope for resource-indicator tests. */
export const DEVICE_SCOPES = [{ name: 'mail.read', audience: MAIL }]

const DEVICE_PERMISSIONS = [
  'ept:device_authorization',
  'ept:token',
  `gt:${DEVICE_GRANT}`,
  'gt:refresh_token',
  'scp:openid',
  'scp:profile',
  'scp:api1',
  'scp:mail.read',
]

/** The device clients: a public CLI, a confidential one, and one lacking each permission. */
export const DEVICE_CLIENTS: Record<string, ClientRegistration> = {
  cli: { clientId: 'cli', displayName: 'Command line', permissions: DEVICE_PERMISSIONS },
  tv: {
    clientId: 'tv',
    clientSecret: 'tv-secret',
    displayName: 'Living room TV',
    permissions: [...DEVICE_PERMISSIONS, 'ept:introspection', 'ept:revocation'],
  },
  noEndpoint: {
    clientId: 'no-endpoint',
    permissions: DEVICE_PERMISSIONS.filter((p) => p !== 'ept:device_authorization'),
  },
  noGrant: {
    clientId: 'no-grant',
    permissions: DEVICE_PERMISSIONS.filter((p) => p !== `gt:${DEVICE_GRANT}`),
  },
  noToken: {
    clientId: 'no-token',
    permissions: DEVICE_PERMISSIONS.filter((p) => p !== 'ept:token'),
  },
}

/** A client as oauth4webapi sees it, and its authentication: a secret for `tv`, none otherwise. */
export function deviceClient(clientId: string): { client: oauth.Client; auth: oauth.ClientAuth } {
  const registration = Object.values(DEVICE_CLIENTS).find((c) => c.clientId === clientId)
  const secret = registration?.clientSecret
  return {
    client: { client_id: clientId },
    auth: typeof secret === 'string' ? oauth.ClientSecretBasic(secret) : oauth.None(),
  }
}

export interface DeviceCtx {
  as: oauth.AuthorizationServer
  opts: ReturnType<typeof inProcess>
  service: { store: Store; clients: { ensure(registration: ClientRegistration): Promise<unknown> } }
}

/** Registers the device clients. */
export async function ensureDeviceClients(ctx: DeviceCtx): Promise<void> {
  for (const registration of Object.values(DEVICE_CLIENTS)) await ctx.service.clients.ensure(registration)
}

/** The raw device authorization response of `clientId`. */
export function deviceAuthorizationRequest(
  ctx: DeviceCtx,
  parameters: Record<string, string> | string[][],
  clientId = 'cli',
  auth?: oauth.ClientAuth,
): Promise<Response> {
  const { client, auth: own } = deviceClient(clientId)
  return oauth.deviceAuthorizationRequest(ctx.as, client, auth ?? own, parameters, ctx.opts)
}

/** A device authorization, processed by oauth4webapi. */
export async function startDevice(
  ctx: DeviceCtx,
  parameters: Record<string, string> | string[][] = { scope: 'openid profile api1' },
  clientId = 'cli',
): Promise<oauth.DeviceAuthorizationResponse> {
  const response = await deviceAuthorizationRequest(ctx, parameters, clientId)
  return oauth.processDeviceAuthorizationResponse(ctx.as, deviceClient(clientId).client, response)
}

/** One poll of the token endpoint: the raw response. */
export function pollDevice(
  ctx: DeviceCtx,
  deviceCode: string,
  clientId = 'cli',
  options: { DPoP?: oauth.DPoPHandle; additionalParameters?: Record<string, string> | string[][] } = {},
): Promise<Response> {
  const { client, auth } = deviceClient(clientId)
  return oauth.deviceCodeGrantRequest(ctx.as, client, auth, deviceCode, { ...ctx.opts, ...options })
}

/** One poll, processed by oauth4webapi: the tokens, or the OAuth error it answered. */
export async function pollOnce(
  ctx: DeviceCtx,
  deviceCode: string,
  clientId = 'cli',
  options: { DPoP?: oauth.DPoPHandle; additionalParameters?: Record<string, string> | string[][] } = {},
): Promise<
  | { ok: true; tokens: oauth.TokenEndpointResponse }
  | { ok: false; error: string; status: number; body: Record<string, unknown> }
> {
  const response = await pollDevice(ctx, deviceCode, clientId, options)
  try {
    const tokens = await oauth.processDeviceCodeResponse(ctx.as, deviceClient(clientId).client, response)
    return { ok: true, tokens }
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) {
      return { ok: false, error: err.error, status: err.status, body: err.cause }
    }
    throw err
  }
}

/** The pending authorization of a user code (as the verification page finds it). */
async function pending(store: Store, userCode: string, now: number) {
  const normalized = normalizeUserCode(userCode)
  if (normalized === undefined) throw new Error(`not a user code: ${userCode}`)
  const record = await store.deviceCodes.findByUserCode(normalized, now)
  if (!record) throw new Error(`no live device authorization for ${userCode}`)
  return record
}

/** The end-user approves the authorization of `userCode`, signed in as `sub` at `authTime`. */
export async function approveDevice(
  store: Store,
  userCode: string,
  now: number,
  login: { sub?: string; authTime?: number; acr?: string; amr?: string[] } = {},
): Promise<void> {
  const record = await pending(store, userCode, now)
  const decided = await store.deviceCodes.decide(
    record.id,
    {
      status: 'approved',
      login: {
        sub: login.sub ?? 'user-1',
        authTime: login.authTime ?? now,
        ...(login.acr !== undefined ? { acr: login.acr } : {}),
        ...(login.amr !== undefined ? { amr: login.amr } : {}),
      },
    },
    now,
  )
  if (!decided) throw new Error(`the device authorization of ${userCode} was not pending`)
}

/** The end-user denies the authorization of `userCode`. */
export async function denyDevice(store: Store, userCode: string, now: number): Promise<void> {
  const record = await pending(store, userCode, now)
  if (!(await store.deviceCodes.decide(record.id, { status: 'denied' }, now))) {
    throw new Error(`the device authorization of ${userCode} was not pending`)
  }
}
