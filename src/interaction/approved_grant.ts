/**
 * @module interaction/approved_grant
 * A device authorization or CIBA request the end-user approved is a grant before the client
 * redeems it (#42): its record is written at approval, so the end-user and the host see it (and
 * may revoke it) while the device or the CIBA client has yet to poll. Revoking it marks its
 * family, which the redemption checks: the approved request is then refused. The redemption
 * replaces the record with the full one (its tokens' end, the session).
 */
import type { Context } from '../context.ts'
import type { AuthorizationDetail, CibaRequestRecord, DeviceCodeRecord, GrantRecord } from '../storage/index.ts'

/** Records the approved request `record` as a grant of `login.sub`, until the request expires. */
export async function recordApprovedGrant(
  record: DeviceCodeRecord | CibaRequestRecord,
  kind: 'device_code' | 'ciba',
  login: { sub: string; authTime: number },
  ctx: Context,
): Promise<void> {
  const details = 'authorizationDetails' in record ? record.authorizationDetails : undefined
  const grant: GrantRecord = {
    id: record.familyId,
    clientId: record.clientId,
    sub: login.sub,
    scope: record.scope,
    ...(record.resources?.length ? { resources: record.resources } : {}),
    ...(details?.length ? { authorizationDetails: details as AuthorizationDetail[] } : {}),
    kind,
    authTime: login.authTime,
    createdAt: ctx.now(),
    expiresAt: record.expiresAt,
  }
  await ctx.store.grants.put(grant)
}
