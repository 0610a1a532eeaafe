/**
 * @module protocol/grant_management
 * Grants as things people can name (#42): what one end-user allowed one client, listed, read and
 * revoked for the host's API and CLI, the end-user's grants page and the Grant Management endpoint.
 *
 * A grant is alive while its record exists, has not expired and its family is not revoked: a
 * revocation marks the family first (every code, refresh token and access token of it, exchanged
 * ones included, is dead from then on, on every instance) and removes the record after. A record
 * that a request in flight writes back after that (a merge, a redemption racing the revoke) is
 * still dead: the family's mark decides, and it is checked on every read here.
 */
import type { Context } from '../context.ts'
import type { RequestMeta } from '../events/index.ts'
import type { AuthorizationDetail, ClientRecord, GrantRecord, RequestedClaims } from '../storage/index.ts'

/** The client a grant is for, as a person would recognise it. */
export interface GrantClientView {
  id: string
  /** The client's display name (its id when the client is gone). */
  name: string
  /** The client registered itself (dynamic registration or a metadata document). */
  selfRegistered: boolean
  /** Where it lives: the host of its `client_uri`, else of its first redirect URI. */
  host?: string
  /** The client no longer exists (its grant still does until revoked or expired). */
  deleted?: true
}

/** A live grant with its client, as the API, the CLI and the pages show it. */
export interface GrantView {
  id: string
  client: GrantClientView
  sub: string
  scopes: string[]
  resources: string[]
  claims?: RequestedClaims
  authorizationDetails?: AuthorizationDetail[]
  /** How it was made. */
  kind: GrantRecord['kind']
  /** When the end-user authenticated for it (epoch s). */
  authTime: number
  createdAt: number
  /** When a token was last issued from it after its first ones (to the minute), if ever. */
  lastUsedAt?: number
  expiresAt: number
}

/** Who revokes: the host's API or CLI, the end-user on the grants page, or the client. */
export type GrantRevoker = 'host' | 'user' | 'client'

/** The host of a client's home page or, without one, of its first redirect URI. */
function hostOf(client: ClientRecord): string | undefined {
  const candidates = [client.registration?.metadata.client_uri, client.redirectUris[0]]
  for (const candidate of candidates) {
    if (candidate === undefined) continue
    try {
      const url = new URL(candidate)
      return url.host !== '' ? url.host : url.protocol.slice(0, -1)
    } catch {}
  }
  return undefined
}

/**
 * The client as stored. Never through the registry's resolution: a Client ID Metadata Document
 * client's document is not fetched here (a client whose document fails must not break the list
 * nor escape a revoke, and a page view must not cause outbound fetches). A URL client id that is
 * not stored is shown by its host; any other missing client as deleted.
 */
async function clientView(clientId: string, ctx: Context): Promise<GrantClientView> {
  const client = await ctx.store.clients.get(clientId)
  if (!client) {
    const host = documentHost(clientId)
    if (host !== undefined) return { id: clientId, name: host, selfRegistered: true, host }
    return { id: clientId, name: clientId, selfRegistered: false, deleted: true }
  }
  const host = hostOf(client)
  return {
    id: clientId,
    name: client.displayName,
    selfRegistered: client.registration !== undefined,
    ...(host !== undefined ? { host } : {}),
  }
}

/** The host of a client id that is a metadata document's https URL, else undefined. */
function documentHost(clientId: string): string | undefined {
  if (!clientId.startsWith('https://')) return undefined
  try {
    return new URL(clientId).host
  } catch {
    return undefined
  }
}

async function viewOf(record: GrantRecord, ctx: Context): Promise<GrantView> {
  return {
    id: record.id,
    client: await clientView(record.clientId, ctx),
    sub: record.sub,
    scopes: record.scope === '' ? [] : record.scope.split(' '),
    resources: record.resources ?? [],
    ...(record.claims ? { claims: record.claims } : {}),
    ...(record.authorizationDetails ? { authorizationDetails: record.authorizationDetails } : {}),
    kind: record.kind,
    authTime: record.authTime,
    createdAt: record.createdAt,
    ...(record.lastUsedAt !== undefined ? { lastUsedAt: record.lastUsedAt } : {}),
    expiresAt: record.expiresAt,
  }
}

/** The live records among `records` (their families not revoked; asked together: one batched query). */
async function alive(records: GrantRecord[], ctx: Context): Promise<GrantRecord[]> {
  const revoked = await Promise.all(records.map((record) => ctx.store.revocations.isFamilyRevoked(record.id)))
  return records.filter((_, i) => !revoked[i])
}

/** The live grant record `id`, or undefined. */
export async function findGrantRecord(id: string, ctx: Context): Promise<GrantRecord | undefined> {
  const now = ctx.now()
  const [record, revoked] = await Promise.all([
    ctx.store.grants.get(id, now),
    ctx.store.revocations.isFamilyRevoked(id),
  ])
  return record && !revoked ? record : undefined
}

/** The live grants of `sub` (only those of `clientId` when given), newest first. */
export async function listGrants(sub: string, ctx: Context, filter: { clientId?: string } = {}): Promise<GrantView[]> {
  const records = (await ctx.store.grants.listBySub(sub, ctx.now())).filter(
    (record) => filter.clientId === undefined || record.clientId === filter.clientId,
  )
  const live = (await alive(records, ctx)).sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1))
  return Promise.all(live.map((record) => viewOf(record, ctx)))
}

/** The live grant `id` with its client, or undefined. */
export async function findGrant(id: string, ctx: Context): Promise<GrantView | undefined> {
  const record = await findGrantRecord(id, ctx)
  return record ? viewOf(record, ctx) : undefined
}

/**
 * Revokes the live grant `record`: its family first (every token of it dead at once, on every
 * instance), then its record; emits `grant.revoked`.
 */
export async function revokeGrantRecord(
  record: GrantRecord,
  ctx: Context,
  input: { by: GrantRevoker; meta?: RequestMeta | undefined },
): Promise<void> {
  // The mark outlives every token of the family, those a refresh in flight issues too.
  const until = Math.max(record.expiresAt, ctx.now() + ctx.config.refreshTokenFamilyTtl)
  await ctx.store.revocations.revokeFamily(record.id, until)
  await ctx.store.grants.delete(record.id)
  ctx.emit(input.meta, {
    type: 'grant.revoked',
    by: input.by,
    clientId: record.clientId,
    sub: record.sub,
    grantId: record.id,
  })
}

/**
 * Revokes the live grant `id`. With `owner`, only a grant of that end-user and/or client is
 * revoked (another's is answered as unknown). Resolves whether it revoked one.
 */
export async function revokeGrant(
  id: string,
  ctx: Context,
  input: { by: GrantRevoker; meta?: RequestMeta | undefined; owner?: { sub?: string; clientId?: string } },
): Promise<boolean> {
  const record = await findGrantRecord(id, ctx)
  if (!record) return false
  if (input.owner?.sub !== undefined && input.owner.sub !== record.sub) return false
  if (input.owner?.clientId !== undefined && input.owner.clientId !== record.clientId) return false
  await revokeGrantRecord(record, ctx, input)
  return true
}

/** Revokes every live grant of `sub` (only those of `clientId` when given). Resolves how many. */
export async function revokeGrants(
  sub: string,
  ctx: Context,
  input: { by: GrantRevoker; meta?: RequestMeta | undefined; clientId?: string },
): Promise<number> {
  const records = (await ctx.store.grants.listBySub(sub, ctx.now())).filter(
    (record) => input.clientId === undefined || record.clientId === input.clientId,
  )
  const live = await alive(records, ctx)
  await Promise.all(live.map((record) => revokeGrantRecord(record, ctx, input)))
  return live.length
}
