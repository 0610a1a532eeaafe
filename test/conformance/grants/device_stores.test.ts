/**
 * #29 a device code is redeemed once, atomically, on every store and across instances: two
 * service instances share one store; 20 concurrent token requests for one approved device code,
 * split between them, for several rounds: exactly one 200 every round, every other one 400
 * invalid_grant, and the replays revoke what the winner got. On memory always, PostgreSQL and
 * Redis where DATABASE_URL and REDIS_URL are set, SQLite where the runtime has it (test/helpers/stores.ts).
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import {
  DEVICE_SCOPES,
  approveDevice,
  deviceClient,
  ensureDeviceClients,
  pollDevice,
  startDevice,
} from '../../helpers/device.ts'
import { setup } from '../../helpers/flow.ts'
import { clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const ROUNDS = 5
const PARALLEL = 20

describe.each(STORES)('#29 device code redemption on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  it(`#29 ${PARALLEL}-way race: ${PARALLEL} concurrent token requests on an approved device code across two instances, ${ROUNDS} rounds: exactly one 200, whose tokens the replays revoke`, async () => {
    const time = clock()
    opened = await kind.create(time.now)
    const a = await setup({ store: opened.store, now: time.now, scopes: DEVICE_SCOPES })
    const b = await setup({ store: opened.store, now: time.now, scopes: DEVICE_SCOPES })
    await ensureDeviceClients(a)
    const { client, auth } = deviceClient('tv')
    for (let round = 0; round < ROUNDS; round++) {
      const device = await startDevice(round % 2 === 0 ? a : b, { scope: 'openid offline_access api1' }, 'tv')
      await approveDevice(opened.store, device.user_code, time.now())
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, async (_, i) => {
          const response = await pollDevice(i % 2 === 0 ? a : b, device.device_code, 'tv')
          return { status: response.status, body: (await response.json()) as Record<string, unknown> }
        }),
      )
      const winners = results.filter((result) => result.status === 200)
      expect(winners, `round ${round}: ${results.map((r) => r.status).join(' ')}`).toHaveLength(1)
      for (const loser of results.filter((result) => result.status !== 200)) {
        expect(loser.status).toBe(400)
        expect(loser.body.error).toBe('invalid_grant')
      }
      const won = winners[0]?.body as { access_token: string; refresh_token: string }
      expect(won.refresh_token).toBeTypeOf('string')
      for (const ctx of [a, b]) {
        const introspected = await oauth.introspectionRequest(ctx.as, client, auth, won.access_token, ctx.opts)
        expect(await introspected.json()).toEqual({ active: false })
        const refreshed = await oauth.refreshTokenGrantRequest(ctx.as, client, auth, won.refresh_token, ctx.opts)
        expect(refreshed.status).toBe(400)
      }
    }
  })
})
