/**
 * @module protocol/grant_actions
 * Grant Management for OAuth 2.0 (OpenID FAPI WG, oauth-v2-grant-management-03) at the
 * authorization endpoint and PAR: the `grant_id` and `grant_management_action` request parameters
 * (§5.2) and their errors (§5.4).
 */
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { findGrantRecord } from './grant_management.ts'

/** §5.2: what the authorization request does with a grant. */
export type GrantManagementAction = 'create' | 'merge' | 'replace'

const ACTIONS: ReadonlySet<string> = new Set<GrantManagementAction>(['create', 'merge', 'replace'])

/** The grant management part of a validated authorization request. */
export interface GrantManagementRequest {
  grantManagementAction?: GrantManagementAction
  /** The live grant of this client that a `merge` or `replace` updates (never with `create`). */
  grantId?: string
}

/**
 * The grant management parameters of an authorization request of `clientId`. Checks, in order:
 * - `grant_management_action` is `create`, `merge` or `replace` (§5.2)      → invalid_request
 * - `grant_id` without an action (§5.4: the spec leaves no default)           → invalid_request
 * - `create` with a `grant_id` (§5.4)                                         → invalid_request
 * - `merge` or `replace` without a `grant_id` (§5.2: "requires")              → invalid_request
 * - the `grant_id` names a live grant (not expired, not revoked) of this client (§5.2: "MUST have
 *   been issued by the respective authorization server and the respective client MUST be authorized
 *   to use the particular grant id"); unknown, ended and another client's look alike → invalid_grant_id
 * The end-user is checked when the code would be issued (§5.4: the signed-in user must be the
 * grant's), not here: nobody is signed in yet. Without either parameter nothing changes: every
 * grant still gets its own id (the `grant_id` of the token response), as with `create`.
 *
 * @see https://openid.net/specs/oauth-v2-grant-management.html
 */
export async function parseGrantManagement(
  params: ReadonlyMap<string, string>,
  clientId: string,
  ctx: Context,
): Promise<GrantManagementRequest> {
  const action = params.get('grant_management_action')
  const grantId = params.get('grant_id')
  if (action === undefined) {
    if (grantId !== undefined) {
      throw new OAuthError('invalid_request', 'grant_id requires grant_management_action merge or replace')
    }
    return {}
  }
  if (!ACTIONS.has(action)) {
    throw new OAuthError('invalid_request', 'grant_management_action must be create, merge or replace')
  }
  if (action === 'create') {
    if (grantId !== undefined) {
      throw new OAuthError('invalid_request', 'grant_id must not be sent with grant_management_action create')
    }
    return { grantManagementAction: 'create' }
  }
  if (grantId === undefined)
    throw new OAuthError('invalid_request', `grant_management_action ${action} requires grant_id`)
  const grant = await findGrantRecord(grantId, ctx)
  if (!grant || grant.clientId !== clientId) {
    throw new OAuthError('invalid_grant_id', 'grant_id is unknown, has ended or is not of this client')
  }
  return { grantManagementAction: action as GrantManagementAction, grantId }
}

/**
 * The end-user signed in for a `merge` or `replace` of `grantId` may update it (§5.4: the
 * signed-in user must be the grant's resource owner): the grant is still alive, of `clientId`
 * and of `sub`. Read again when the code would be issued (it may have ended meanwhile).
 * Resolves whether the grant stays offline (has `offline_access`) before this request adds to it.
 */
export async function checkGrantOwner(
  grantId: string,
  clientId: string,
  sub: string,
  ctx: Context,
): Promise<{ offline: boolean } | undefined> {
  const grant = await findGrantRecord(grantId, ctx)
  if (!grant || grant.clientId !== clientId || grant.sub !== sub) return undefined
  return { offline: grant.scope.split(' ').includes('offline_access') }
}
