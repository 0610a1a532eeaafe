/**
 * @module service/grants
 * The host's grant management API (`service.grants`, #42): list what each client may do for an
 * end-user, read one grant, revoke one or all of them. A revoke kills every token of the grant at
 * once (access tokens, JWT and opaque, exchanged ones included; refresh tokens; device and CIBA
 * requests approved but not yet redeemed) and emits `grant.revoked` with `by: 'host'`.
 */
import type { Context } from '../context.ts'
import { findGrant, type GrantView, listGrants, revokeGrant, revokeGrants } from '../protocol/index.ts'

/** `service.grants`. */
export interface HostGrants {
  /**
   * The live grants of the end-user `sub`, newest first (only those of `clientId` when given).
   * @example
   * for (const grant of await service.grants.list('alice')) console.log(grant.client.name, grant.scopes)
   */
  list(sub: string, options?: { clientId?: string }): Promise<GrantView[]>
  /** The live grant `id` (the tokens' `gid`, the token response's `grant_id`), or undefined. */
  get(id: string): Promise<GrantView | undefined>
  /**
   * Revokes the grant `id`: every token of it is dead at once, on every instance. Resolves whether
   * a live grant was revoked.
   */
  revoke(id: string): Promise<boolean>
  /**
   * Revokes every live grant of `sub` (only those of `clientId` when given), as `revoke` does each.
   * Resolves how many.
   * @example
   * await service.grants.revokeAll('alice', { clientId: 'agent' })
   */
  revokeAll(sub: string, options?: { clientId?: string }): Promise<number>
}

const MAX_ID = 512

function checkString(name: string, value: unknown): void {
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID)
    throw new TypeError(`${name}: must be a non-empty string of at most ${MAX_ID} characters`)
}

function checkFilter(options: { clientId?: string } | undefined): { clientId?: string } {
  if (options === undefined) return {}
  if (typeof options !== 'object' || options === null) throw new TypeError('options: must be an object')
  if (options.clientId !== undefined) checkString('options.clientId', options.clientId)
  return options.clientId !== undefined ? { clientId: options.clientId } : {}
}

/** `service.grants` over the service's context. */
export function hostGrants(ctx: Context): HostGrants {
  return {
    async list(sub, options) {
      checkString('sub', sub)
      return listGrants(sub, ctx, checkFilter(options))
    },
    async get(id) {
      checkString('id', id)
      return findGrant(id, ctx)
    },
    async revoke(id) {
      checkString('id', id)
      return revokeGrant(id, ctx, { by: 'host' })
    },
    async revokeAll(sub, options) {
      checkString('sub', sub)
      return revokeGrants(sub, ctx, { by: 'host', ...checkFilter(options) })
    },
  }
}
