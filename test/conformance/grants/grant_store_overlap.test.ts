/**
 * #20: the refresh grant asks for its family's revocation while it signs, and the code grant
 * signs while its consume is out (one round trip less each on a database store). What must not
 * change: a revoked family is still the first error, nothing rotates or is issued for it, and a
 * store that fails mid-way answers 500 without an unhandled rejection.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import type { Store } from '../../../src/storage/types.ts'
import { sha256 } from '../../../src/crypto/opaque.ts'
import { authorizationUrl, authorize, redeemCallback, setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { clock } from '../../helpers/service.ts'

const unhandled: unknown[] = []
const onUnhandled = (reason: unknown) => unhandled.push(reason)
process.on('unhandledRejection', onUnhandled)
afterEach(() => {
  unhandled.length = 0
})

/** A memory store whose family revocation check can be made to fail or to answer late. */
function storeWith(time: ReturnType<typeof clock>, familyCheck: { fail?: boolean; delayMs?: number }): Store {
  const store = createMemoryStore({ now: time.now })
  const isFamilyRevoked = store.revocations.isFamilyRevoked.bind(store.revocations)
  store.revocations.isFamilyRevoked = async (familyId) => {
    if (familyCheck.delayMs) await new Promise((resolve) => setTimeout(resolve, familyCheck.delayMs))
    if (familyCheck.fail) throw new Error('the store is down')
    return isFamilyRevoked(familyId)
  }
  return store
}

async function refreshRequest(ctx: Awaited<ReturnType<typeof setup>>, token: string, scope?: string) {
  return oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, token, {
    ...ctx.opts,
    ...(scope ? { additionalParameters: { scope } } : {}),
  })
}

describe('#20 store round trips overlapped with signing', () => {
  it('RT-08: a revoked family is refused (first, before an invalid scope) while its check answers late, and nothing rotates', async () => {
    const time = clock()
    const store = storeWith(time, { delayMs: 20 })
    const ctx = await setup({ store, now: time.now })
    const { result } = await signIn(ctx)
    const token = result.refresh_token as string
    const id = await sha256(token)
    const record = await store.refreshTokens.get(id)
    await store.revocations.revokeFamily(record?.familyId as string, time.now() + 3600)
    for (const scope of [undefined, 'not-granted']) {
      const response = await refreshRequest(ctx, token, scope)
      expect(response.status).toBe(400)
      expect(await response.json()).toEqual({
        error: 'invalid_grant',
        error_description: 'the refresh token has been revoked',
      })
    }
    expect((await store.refreshTokens.get(id))?.consumedAt).toBeUndefined()
  })

  it('a failing family check at refresh answers 500 server_error, leaves the token unused, no unhandled rejection', async () => {
    const time = clock()
    const familyCheck = { fail: false }
    const store = storeWith(time, familyCheck)
    const ctx = await setup({ store, now: time.now })
    const { result } = await signIn(ctx)
    const token = result.refresh_token as string
    familyCheck.fail = true
    const response = await refreshRequest(ctx, token)
    expect(response.status).toBe(500)
    expect(await response.json()).toMatchObject({ error: 'server_error' })
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(unhandled).toEqual([])
    expect((await store.refreshTokens.get(await sha256(token)))?.consumedAt).toBeUndefined()
    familyCheck.fail = false
    const ok = await oauth.processRefreshTokenResponse(ctx.as, webClient, await refreshRequest(ctx, token))
    expect(ok.refresh_token).toBeTypeOf('string')
  })

  it('CODE-05: a code whose family was revoked (logout) issues nothing, though its tokens were signed meanwhile', async () => {
    const time = clock()
    const store = storeWith(time, { delayMs: 20 })
    const ctx = await setup({ store, now: time.now })
    const request = await authorizationUrl(ctx.as)
    const callback = await authorize(ctx.browser, request.url)
    const code = callback.searchParams.get('code') as string
    const record = await store.codes.get(await sha256(code))
    await store.revocations.revokeFamily(record?.familyId as string, time.now() + 3600)
    const { response } = await redeemCallback(ctx, callback, request)
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ error: 'invalid_grant', error_description: 'the code has been revoked' })
  })

  it('a failing family check at code redemption answers 500 server_error without an unhandled rejection', async () => {
    const time = clock()
    const ctx = await setup({ store: storeWith(time, { fail: true }), now: time.now })
    const request = await authorizationUrl(ctx.as)
    const callback = await authorize(ctx.browser, request.url)
    const { response } = await redeemCallback(ctx, callback, request)
    expect(response.status).toBe(500)
    expect(await response.json()).toMatchObject({ error: 'server_error' })
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(unhandled).toEqual([])
  })
})
