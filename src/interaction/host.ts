/**
 * @module interaction/host
 * `service.interactions`: the host's login page reads a pending interaction (an authorization's
 * or a device's, see `PendingInteraction.kind`) and completes it once the host signed the
 * end-user in.
 */
import type { Context } from '../context.ts'
import { cibaPending, completeCibaInteraction } from './ciba_approval.ts'
import { completeDeviceInteraction, devicePending } from './device.ts'
import { completeInteraction, toPending } from './flow.ts'
import type { InteractionResult, PendingInteraction } from '../config/index.ts'

/** The host's view of a pending interaction, or undefined (unknown, expired, done, or a logout's). */
export async function pendingInteraction(uid: string, ctx: Context): Promise<PendingInteraction | undefined> {
  const record = await ctx.store.interactions.get(uid)
  if (record?.kind === 'ciba' && record.expiresAt > ctx.now()) {
    const ciba = await ctx.store.cibaRequests.get(String(record.request.cibaId))
    return ciba && cibaPending(record, ciba, await ctx.clients.get(ciba.clientId))
  }
  if (record?.kind !== 'authorization' && record?.kind !== 'device') return undefined
  const client = await ctx.clients.get(String(record.request.clientId))
  return record.kind === 'device' ? devicePending(record, client) : toPending(record, client)
}

/**
 * Completes an interaction with the host's result: an authorization's redirects to the client; a
 * device's sign-in goes on to its confirmation page (an error denies the device).
 */
export async function completeHostInteraction(
  uid: string,
  result: InteractionResult,
  request: Request | undefined,
  ctx: Context,
): Promise<Response> {
  const record = await ctx.store.interactions.get(uid)
  if (record?.kind === 'device' && record.expiresAt > ctx.now()) {
    return completeDeviceInteraction(record, result, request, ctx)
  }
  if (record?.kind === 'ciba' && record.expiresAt > ctx.now()) {
    return completeCibaInteraction(record, result, request, ctx)
  }
  return completeInteraction(uid, result, request, ctx)
}
