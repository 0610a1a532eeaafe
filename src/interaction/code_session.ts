/**
 * @module interaction/code_session
 * What a code's issuance keeps in the browser session (clients, consents, the grants that end with
 * it), and the grant a Grant Management `merge` or `replace` request issues into (§5.2, §5.4).
 */
import type { Context } from '../context.ts'
import { checkGrantOwner } from '../protocol/index.ts'
import type { SessionRecord } from '../storage/index.ts'
import type { Authentication, AuthorizationRequest } from './request.ts'

/** The most grants without offline_access one session tracks (the oldest is revoked beyond it). */
export const SESSION_GRANTS_MAX = 200

/**
 * The grant a `merge` or `replace` request updates, when the signed-in end-user owns it and it is
 * still alive (null otherwise), and whether it stays offline afterwards: a merge keeps the
 * grant's `offline_access`, a replace has only the request's.
 */
export async function updatedGrant(
  authRequest: AuthorizationRequest,
  auth: Authentication,
  ctx: Context,
): Promise<{ id: string; action: 'merge' | 'replace'; offline: boolean } | null> {
  const id = authRequest.grantId as string
  const owner = await checkGrantOwner(id, authRequest.clientId, auth.sub, ctx)
  if (!owner) return null
  const action = authRequest.grantManagementAction === 'replace' ? 'replace' : 'merge'
  const offline = authRequest.scopes.includes('offline_access') || (action === 'merge' && owner.offline)
  return { id, action, offline }
}

/**
 * Stores the session after a code's sign-in: the client, the scopes and claims consented to, and
 * the grant `familyId` unless it has offline_access (a grant without it lives as long as the
 * session: logout ends it).
 */
export async function keepSession(
  session: SessionRecord,
  clientId: string,
  familyId: string,
  offline: boolean,
  authRequest: AuthorizationRequest,
  options: { consented?: string[]; consentedClaims?: string[] },
  ctx: Context,
): Promise<void> {
  if (!session.clients.includes(clientId)) session.clients = [...session.clients, clientId]
  if (options.consented) {
    const previous = session.consents[clientId] ?? []
    session.consents = { ...session.consents, [clientId]: [...new Set([...previous, ...options.consented])] }
  }
  if (options.consentedClaims?.length) {
    const previous = session.claimConsents?.[clientId] ?? []
    const merged = [...new Set([...previous, ...options.consentedClaims])]
    session.claimConsents = { ...session.claimConsents, [clientId]: merged }
  }
  if (!offline && !authRequest.scopes.includes('offline_access') && !session.grants?.includes(familyId)) {
    const grants = [...(session.grants ?? []), familyId]
    const dropped = grants.length > SESSION_GRANTS_MAX ? grants.splice(0, grants.length - SESSION_GRANTS_MAX) : []
    // The oldest grant would outlive the session's logout untracked: it ends now instead.
    const until = ctx.now() + ctx.config.refreshTokenFamilyTtl
    for (const id of dropped) await ctx.store.revocations.revokeFamily(id, until)
    session.grants = grants
  }
  await ctx.store.sessions.put(session)
}
